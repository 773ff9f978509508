import { z } from 'zod';
import { EXAM_SERVICE_OPERATIONS, type ExamServiceOperation } from '../exam-service/schemas';
import { CALLBACK_LAYOUT_SETTINGS, SERVICE_LAYOUTS } from './layouts';

/** The service's operations, named by their path under /api (the contract's list). */
export const Operation = z.enum(EXAM_SERVICE_OPERATIONS as [ExamServiceOperation, ...ExamServiceOperation[]]);
export type Operation = ExamServiceOperation;

const Share = z.number().min(0).max(1);

/**
 * Faults the sandbox injects. Every field has a neutral default, so `{}` means "behave".
 * Shares are probabilities drawn from the sandbox's seeded random source.
 */
export const SandboxFaults = z.strictObject({
  /** Share of operations (all of them) answered with a 500 before doing anything. */
  errorRate: Share.default(0),
  /** Per-operation share of 500 answers; overrides errorRate for the operations named. */
  errorRates: z.partialRecord(Operation, Share).default({}),
  /** Latency added before every operation answers (real milliseconds, also in manual clock mode). */
  latencyMs: z.number().int().min(0).max(60_000).default(0),
  /** Share of invites whose connection is dropped after the invite was stored: the ambiguous failure. */
  dropAfterInviteRate: Share.default(0),
  /** Copies of every callback sent (1 = each callback once). */
  duplicateCallbacks: z.number().int().min(1).max(10).default(1),
  /** Hold callbacks back so that a later event arrives first: event 2 before 1, event 3 before 2. */
  outOfOrderCallbacks: z.boolean().default(false),
  /** Delay (sandbox clock) before the first attempt of every callback. */
  callbackDelayMs: z.number().int().min(0).default(0),
  /**
   * The layout of the callbacks (docs/callback-layouts.md): the interface's, one alternative, all of them at once, or
   * `rotate` (each invite the next alternative). An invite's own layout (control surface) wins.
   */
  callbackLayout: z.enum(CALLBACK_LAYOUT_SETTINGS).default('interface'),
  /** The layout of the operations' answers (and the request forms required); an invite's own layout wins for it. */
  serviceLayout: z.enum(SERVICE_LAYOUTS).default('interface'),
});
export type SandboxFaults = z.infer<typeof SandboxFaults>;
export type SandboxFaultsInput = z.input<typeof SandboxFaults>;

export const NO_FAULTS: SandboxFaults = SandboxFaults.parse({});

export function errorShareFor(faults: SandboxFaults, operation: Operation): number {
  return faults.errorRates[operation] ?? faults.errorRate;
}

/** How often each fault actually struck since the start (or the last reset): GET /_sandbox/faults shows it. */
export interface InjectedFaults {
  /** Operations answered 500 by the error share, per operation. */
  errors: Partial<Record<Operation, number>>;
  /** Operations that waited latencyMs before answering. */
  delayed: number;
  /** Invites stored and then answered with a destroyed connection. */
  droppedInvites: number;
}

/** The faults in force: set at start, replaced at run time through POST /_sandbox/faults. */
export class FaultControl {
  private current: SandboxFaults;
  private counts: InjectedFaults = { errors: {}, delayed: 0, droppedInvites: 0 };

  constructor(private readonly initial: SandboxFaults) {
    this.current = initial;
  }

  get(): SandboxFaults {
    return this.current;
  }

  /** Replaces every fault (fields left out go back to neutral). */
  set(input: SandboxFaultsInput): SandboxFaults {
    this.current = SandboxFaults.parse(input);
    return this.current;
  }

  /** Back to the faults the sandbox was started with; the counts start again from zero. */
  reset(): void {
    this.current = this.initial;
    this.counts = { errors: {}, delayed: 0, droppedInvites: 0 };
  }

  /** Counts one fault that struck. */
  count(kind: 'error' | 'delayed' | 'droppedInvite', operation?: Operation): void {
    if (kind === 'delayed') this.counts.delayed++;
    else if (kind === 'droppedInvite') this.counts.droppedInvites++;
    else if (operation) this.counts.errors[operation] = (this.counts.errors[operation] ?? 0) + 1;
  }

  injected(): InjectedFaults {
    return { ...this.counts, errors: { ...this.counts.errors } };
  }
}
