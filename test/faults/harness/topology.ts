// What the suite needs of a stack, whichever shape it has: the dev-server stack of stack.ts (one worker, one API, the
// Temporal dev server) or the production topology of production.ts (PostgreSQL, the Temporal server, two workers, two
// API replicas behind HAProxy). The suite starts it, sends journeys to its API, asks its inbox whether callbacks wait,
// lets its fault injector strike, and stops it; the judge only looks from the outside.
import type { Client } from '@temporalio/client';
import { ProcessFaults, type InjectedProcessFault, type ProcessFaultPlan } from './faults';
import type { Rng } from './journeys';
import { FaultStack, pickPorts, type StackPorts } from './stack';

/** The process faults of a run: injected over the fault window, with a supervisor that restarts crashed parts. */
export interface FaultInjector {
  readonly injected: InjectedProcessFault[];
  /** Crashes nobody caused (restarted by the supervisor). */
  readonly crashes: { name: string; atMs: number }[];
  /** Most callbacks seen waiting in the API's inbox at once (sampled every second). */
  readonly maxInboxFiles: number;
  /** Injects the planned faults spread over the window; resolves when the last part is back. */
  run(windowMs: number): Promise<void>;
  /** Restarts a worker or API that exits on its own, until stopped. */
  supervise(): Promise<void>;
  /** The suite tells when the API answered a start: some faults aim at the activities that follow. */
  journeyStarted(): void;
  stop(): void;
}

export interface FaultTopology {
  /** `dev-server` or `production`. */
  readonly kind: string;
  readonly apiUrl: string;
  readonly sandboxUrl: string;
  /** The ports the stack listens on, by part (for the log and the report). */
  readonly ports: object;
  start(): Promise<void>;
  stop(): Promise<void>;
  /** A Temporal client with the stack's payload codec: what an operator's CLI or UI does, for retry/abandon. */
  operatorClient(): Promise<Client>;
  /** Callbacks acknowledged by the API and not yet signalled; rejects when the inbox cannot be read. */
  inboxDepth(): Promise<number>;
  /** Parts that are not faulted on purpose (sandbox, infrastructure) and exited anyway, as problems. */
  unexpectedExits(): string[];
  /** One line for the progress log: which parts are up. */
  status(): Promise<string>;
  faults(rng: Rng, t0: number, log: (line: string) => void): FaultInjector;
}

/** The dev-server stack of stack.ts with the process faults of faults.ts. */
export async function devServerTopology(o: {
  runDir: string;
  ports: StackPorts;
  seed: number;
  sandboxEnv: Record<string, string>;
  plan: ProcessFaultPlan;
}): Promise<FaultTopology> {
  const ports = await pickPorts(o.ports);
  const stack = new FaultStack({ runDir: o.runDir, ports, seed: o.seed, sandboxEnv: o.sandboxEnv });
  return {
    kind: 'dev-server',
    apiUrl: stack.apiUrl,
    sandboxUrl: stack.sandboxUrl,
    ports: { ...ports },
    start: () => stack.start(),
    stop: () => stack.stop(),
    operatorClient: () => stack.operatorClient(),
    inboxDepth: () => Promise.resolve(stack.inboxFiles()),
    unexpectedExits: () =>
      stack.sandbox.unexpectedExits.length > 0
        ? [`the sandbox exited: ${stack.sandbox.unexpectedExits.join('; ')}`]
        : [],
    status: () =>
      Promise.resolve(
        `inbox files ${stack.inboxFiles()}; worker ${stack.worker.running ? 'up' : 'down'}, api ${
          stack.api.running ? 'up' : 'down'
        }, temporal ${stack.temporal.running ? 'up' : 'down'}`,
      ),
    faults: (rng, t0, log) => {
      const f = new ProcessFaults(stack, rng, t0, log);
      return {
        injected: f.injected,
        crashes: f.crashes,
        get maxInboxFiles() {
          return f.maxInboxFiles;
        },
        run: (windowMs) => f.run(o.plan, windowMs),
        supervise: () => f.supervise(),
        journeyStarted: () => f.journeyStarted(),
        stop: () => f.stop(),
      };
    },
  };
}
