// The process faults of a run, at seeded random times within the fault window, one after another: the worker killed
// with SIGKILL and started again, the Temporal dev server stopped and started again on the same port and database
// file, the API stopped (SIGTERM: graceful; SIGKILL: mid-request) and started again while callbacks keep coming.
// Each one aims at a journey in flight: a worker kill comes 0-700 ms after a start was answered (catalog, invite,
// uploads are running), an outage of Temporal or the API 1.5-3 s after one (its callbacks are due).
// The sandbox's own faults (500s, latency, dropped invites, duplicate/out-of-order/delayed callbacks) are set once
// through its control surface and run all the time.
import type { Rng } from './journeys';
import type { FaultStack, ManagedProcess } from './stack';

export type ProcessFaultKind =
  | 'worker_sigkill'
  | 'temporal_restart'
  | 'api_restart'
  // The production topology's (production.ts): one of the API replicas killed, PostgreSQL restarted.
  | 'api_replica_sigkill'
  | 'postgres_restart';

export interface ProcessFaultPlan {
  workerKills: number;
  temporalRestarts: number;
  apiRestarts: number;
  /** How long each part stays down before it is started again (ms, drawn between min and max). */
  workerDownMs: [number, number];
  /** Kill the API (SIGKILL) in the middle of the first Temporal outage, while callbacks sit in its inbox. */
  apiKillDuringTemporalOutage: boolean;
  /** Outages of Temporal and the API start this long after a journey's start: when its callbacks are due. */
  callbacksDueAfterStartMs: [number, number];
  /** A worker kill comes at a random moment up to this long after a journey's start was answered. */
  workerKillAfterStartMs: number;
  temporalDownMs: [number, number];
  apiDownMs: [number, number];
}

export interface InjectedProcessFault {
  kind: ProcessFaultKind;
  signal: NodeJS.Signals;
  /** Offset from the start of the run. */
  atMs: number;
  /** From the kill to the part answering again (its start-up included). */
  outageMs: number;
  note?: string;
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

export class ProcessFaults {
  readonly injected: InjectedProcessFault[] = [];
  /** Parts taken down on purpose right now: the supervisor leaves them alone. */
  readonly down = new Set<ManagedProcess>();
  /** Crashes nobody caused, restarted by the supervisor. */
  readonly crashes: { name: string; atMs: number }[] = [];
  /** Most inbox writes (batch files) seen waiting in the API's inbox at once (sampled every second). */
  maxInboxFiles = 0;
  #stopped = false;
  #startWaiters: (() => void)[] = [];

  constructor(
    private readonly stack: FaultStack,
    private readonly rng: Rng,
    private readonly t0: number,
    private readonly log: (line: string) => void,
  ) {}

  /** Injects the planned faults spread over the window; resolves when the last part is back. */
  async run(plan: ProcessFaultPlan, windowMs: number): Promise<void> {
    const kinds: ProcessFaultKind[] = this.rng.shuffle([
      ...Array<ProcessFaultKind>(plan.workerKills).fill('worker_sigkill'),
      ...Array<ProcessFaultKind>(plan.temporalRestarts).fill('temporal_restart'),
      ...Array<ProcessFaultKind>(plan.apiRestarts).fill('api_restart'),
    ]);
    const slot = windowMs / Math.max(1, kinds.length);
    let apiRestarts = 0;
    let temporalRestarts = 0;
    for (const [i, kind] of kinds.entries()) {
      // A random moment in this fault's slot of the window (a late previous fault just makes it come at once).
      const at = this.t0 + slot * i + this.rng.between(0.1, 0.9) * slot;
      await sleep(Math.max(0, at - Date.now()));
      if (this.#stopped) return;
      switch (kind) {
        case 'worker_sigkill':
          // In the middle of a journey's activities (catalog, invite, uploads): shortly after the next start.
          await this.#nextJourneyStart(15_000);
          await sleep(this.rng.between(0, plan.workerKillAfterStartMs));
          await this.#outage(kind, this.stack.worker, 'SIGKILL', plan.workerDownMs, () => this.stack.startWorker());
          break;
        case 'temporal_restart': {
          // Alternately the hard way (a crash) and a clean stop. During the first outage the API is killed too, with
          // callbacks in its inbox: the next API process must forward them once Temporal is back.
          await this.#whileCallbacksAreDue(plan);
          const first = temporalRestarts++ === 0;
          await this.#outage(
            kind,
            this.stack.temporal,
            first ? 'SIGKILL' : 'SIGTERM',
            plan.temporalDownMs,
            () => this.stack.startTemporal(),
            first && plan.apiKillDuringTemporalOutage
              ? async (downMs) => {
                  // As soon as callbacks sit in the inbox (or half way through the outage at the latest).
                  const until = Date.now() + downMs / 2;
                  while (Date.now() < until && this.stack.inboxFiles() === 0) await sleep(100);
                  await this.#outage(
                    'api_restart',
                    this.stack.api,
                    'SIGKILL',
                    [500, 1_000],
                    () => this.stack.startApi(),
                    {
                      note: 'during a Temporal outage',
                    },
                  );
                }
              : undefined,
          );
          break;
        }
        case 'api_restart':
          // Alternately a graceful stop (drains running requests) and a kill in the middle of whatever it does.
          await this.#whileCallbacksAreDue(plan);
          await this.#outage(
            kind,
            this.stack.api,
            apiRestarts++ % 2 === 0 ? 'SIGTERM' : 'SIGKILL',
            plan.apiDownMs,
            () => this.stack.startApi(),
          );
          break;
      }
    }
  }

  stop(): void {
    this.#stopped = true;
    this.journeyStarted();
  }

  /** The suite tells when the API answered a start: a worker kill aims at the activities that follow. */
  journeyStarted(): void {
    const waiters = this.#startWaiters;
    this.#startWaiters = [];
    for (const w of waiters) w();
  }

  /** Waits for a moment when a journey just started will call back soon (its callbacks then meet the outage). */
  async #whileCallbacksAreDue(plan: ProcessFaultPlan): Promise<void> {
    await this.#nextJourneyStart(15_000);
    await sleep(this.rng.between(...plan.callbacksDueAfterStartMs));
  }

  #nextJourneyStart(timeoutMs: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, timeoutMs);
      this.#startWaiters.push(() => {
        clearTimeout(timer);
        resolve();
      });
    });
  }

  async #outage(
    kind: ProcessFaultKind,
    proc: ManagedProcess,
    signal: NodeJS.Signals,
    [min, max]: [number, number],
    restart: () => Promise<void>,
    meanwhile?: ((downMs: number) => Promise<void>) | { note: string },
  ): Promise<void> {
    const started = Date.now();
    const waiting = this.stack.inboxFiles();
    const note =
      [
        meanwhile && typeof meanwhile !== 'function' ? meanwhile.note : undefined,
        kind === 'api_restart' && waiting > 0 ? `${waiting} callbacks still waiting in the inbox` : undefined,
      ]
        .filter(Boolean)
        .join(', ') || undefined;
    this.down.add(proc);
    try {
      this.log(`fault: ${kind} (${signal}, pid ${proc.pid})${note ? ` ${note}` : ''}`);
      await proc.stop(20_000, signal);
      const downMs = this.rng.between(min, max);
      await Promise.all([sleep(downMs), typeof meanwhile === 'function' ? meanwhile(downMs) : undefined]);
      await restart();
    } finally {
      this.down.delete(proc);
    }
    const outageMs = Date.now() - started;
    this.injected.push({ kind, signal, atMs: started - this.t0, outageMs, ...(note ? { note } : {}) });
    this.log(`fault: ${kind} over, ${proc.name} back after ${(outageMs / 1000).toFixed(1)} s`);
  }

  /**
   * Restarts the worker or the API if either exits without being told to (what a process supervisor does); every
   * such crash is reported. Runs until stopped.
   */
  async supervise(): Promise<void> {
    while (!this.#stopped) {
      await sleep(1_000);
      this.maxInboxFiles = Math.max(this.maxInboxFiles, this.stack.inboxFiles());
      for (const proc of [this.stack.worker, this.stack.api, this.stack.temporal]) {
        if (this.#stopped || proc.running || this.down.has(proc)) continue;
        this.crashes.push({ name: proc.name, atMs: Date.now() - this.t0 });
        this.log(`${proc.name} exited on its own (${proc.unexpectedExits.at(-1) ?? '?'}); restarting it`);
        this.down.add(proc);
        try {
          if (proc === this.stack.worker) await this.stack.startWorker();
          else if (proc === this.stack.api) await this.stack.startApi();
          else await this.stack.startTemporal();
        } catch (err) {
          this.log(`restarting ${proc.name} failed: ${err instanceof Error ? err.message : String(err)}`);
        } finally {
          this.down.delete(proc);
        }
      }
    }
  }
}
