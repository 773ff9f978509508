/**
 * The sandbox's notion of time. Every simulated delay (provider verdict, prescription, shipment, the 3-minute
 * provider wait, callback retries and delays) is scheduled here, so a test can switch to manual mode and move
 * time forward with advance(ms) instead of sleeping.
 */

export type ClockMode = 'real' | 'manual';

export type ScheduledAction = () => void | Promise<void>;

export interface ScheduledHandle {
  readonly id: number;
  readonly dueAt: number;
}

interface Entry {
  id: number;
  dueAt: number;
  label: string;
  action: ScheduledAction;
  timer?: NodeJS.Timeout;
}

export interface PendingAction {
  id: number;
  label: string;
  due_at: string;
}

export class SandboxClock {
  private manualNow: number;
  private offsetMs = 0;
  private nextId = 1;
  private readonly entries = new Map<number, Entry>();
  private readonly running = new Set<Promise<void>>();
  private advancing: Promise<void> = Promise.resolve();

  constructor(
    readonly mode: ClockMode = 'real',
    startAt: Date = new Date(),
    private readonly onError: (err: unknown, label: string) => void = () => undefined,
  ) {
    this.manualNow = startAt.getTime();
    if (mode === 'real') this.offsetMs = startAt.getTime() - Date.now();
  }

  now(): Date {
    return new Date(this.nowMs());
  }

  nowMs(): number {
    return this.mode === 'manual' ? this.manualNow : Date.now() + this.offsetMs;
  }

  /** Runs `action` once `delayMs` have passed on this clock. */
  schedule(delayMs: number, action: ScheduledAction, label = 'action'): ScheduledHandle {
    const entry: Entry = { id: this.nextId++, dueAt: this.nowMs() + Math.max(0, delayMs), label, action };
    this.entries.set(entry.id, entry);
    if (this.mode === 'real') {
      entry.timer = setTimeout(() => void this.fire(entry), Math.max(0, delayMs));
      // The HTTP server keeps a running sandbox alive; timers alone must not keep a test process open.
      entry.timer.unref();
    }
    return { id: entry.id, dueAt: entry.dueAt };
  }

  cancel(handle: ScheduledHandle | undefined): void {
    if (!handle) return;
    const entry = this.entries.get(handle.id);
    if (!entry) return;
    if (entry.timer) clearTimeout(entry.timer);
    this.entries.delete(handle.id);
  }

  /**
   * Manual mode only: moves time forward by `ms`, firing every action that falls due on the way (including actions
   * scheduled by those actions) in due order, each awaited before the next. Resolves once all of them have finished.
   */
  advance(ms: number): Promise<void> {
    if (this.mode !== 'manual') {
      return Promise.reject(new Error('advance() needs a clock in manual mode (clockMode: "manual")'));
    }
    if (!Number.isFinite(ms) || ms < 0) return Promise.reject(new Error('advance() takes a non-negative number'));
    // Serialise overlapping advance() calls so time never runs backwards.
    const run = this.advancing.then(() => this.advanceNow(ms));
    this.advancing = run.catch(() => undefined);
    return run;
  }

  private async advanceNow(ms: number): Promise<void> {
    const target = this.manualNow + ms;
    for (;;) {
      const next = this.nextDue(target);
      if (!next) break;
      this.manualNow = Math.max(this.manualNow, next.dueAt);
      await this.fire(next);
    }
    this.manualNow = target;
  }

  private nextDue(limit: number): Entry | undefined {
    let best: Entry | undefined;
    for (const entry of this.entries.values()) {
      if (entry.dueAt > limit) continue;
      if (!best || entry.dueAt < best.dueAt || (entry.dueAt === best.dueAt && entry.id < best.id)) best = entry;
    }
    return best;
  }

  private fire(entry: Entry): Promise<void> {
    if (!this.entries.delete(entry.id)) return Promise.resolve();
    const run = (async () => {
      try {
        await entry.action();
      } catch (err) {
        this.onError(err, entry.label);
      }
    })();
    this.running.add(run);
    void run.finally(() => this.running.delete(run));
    return run;
  }

  /** Actions waiting for their time, earliest first. */
  pending(): PendingAction[] {
    return [...this.entries.values()]
      .sort((a, b) => a.dueAt - b.dueAt || a.id - b.id)
      .map((e) => ({ id: e.id, label: e.label, due_at: new Date(e.dueAt).toISOString() }));
  }

  /** Resolves when no fired action is still running. */
  async idle(): Promise<void> {
    while (this.running.size > 0) await Promise.allSettled([...this.running]);
  }

  /** Drops every scheduled action (reset, shutdown). */
  clear(): void {
    for (const entry of this.entries.values()) if (entry.timer) clearTimeout(entry.timer);
    this.entries.clear();
  }
}
