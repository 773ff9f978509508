/**
 * Callback delivery to the invite's webhook_url with undici: every attempt is logged with the receiver's status and
 * latency, slow receivers are flagged, non-200 answers are retried with exponential backoff on the sandbox clock.
 */
import { performance } from 'node:perf_hooks';
import { Agent, request } from 'undici';
import type { SandboxClock } from './clock';
import type { SandboxConfig } from './config';
import type { CallbackLayout } from './layouts';
import type { SandboxFaults } from './faults';
import type { DeliveryRecord, SandboxStore } from './store';

export interface CallbackDeliveryDeps {
  store: SandboxStore;
  clock: SandboxClock;
  config: SandboxConfig;
  faults: () => SandboxFaults;
}

/** What a callback is about, in the sandbox's own ids (whatever its layout carries), and its layout. */
export interface CallbackAbout {
  patientExamId: number;
  /** Event 3's prescription, or the one drug of a flat event 2. */
  prescriptionId?: number;
  layout: CallbackLayout;
}

export class CallbackDelivery {
  private readonly agent: Agent;
  private readonly inFlight = new Set<Promise<void>>();

  constructor(private readonly deps: CallbackDeliveryDeps) {
    const timeout = Math.max(1, deps.config.callbackTimeoutMs);
    this.agent = new Agent({
      connect: { timeout },
      headersTimeout: timeout,
      bodyTimeout: timeout,
      keepAliveTimeout: 1_000,
    });
  }

  /**
   * Sends one callback (and its copies when the duplicate fault is on). Resolves once the first attempts are done,
   * or at once when the delayed-callbacks fault schedules them for later; retries always run later on the clock.
   */
  async send(receiver: string, about: CallbackAbout, payload: Record<string, unknown>): Promise<void> {
    const { store, clock } = this.deps;
    const faults = this.deps.faults();
    const records: DeliveryRecord[] = [];
    for (let copy = 1; copy <= faults.duplicateCallbacks; copy++) {
      const record: DeliveryRecord = {
        delivery_id: store.allocateDeliveryId(),
        receiver,
        event: typeof payload.event === 'number' ? payload.event : Number(payload.event) || 0,
        patient_exam_id: about.patientExamId,
        ...(about.prescriptionId === undefined ? {} : { prescription_id: about.prescriptionId }),
        layout: about.layout,
        copy,
        state: 'scheduled',
        created_at: clock.now().toISOString(),
        attempts: [],
        payload,
      };
      store.deliveries.push(record);
      records.push(record);
    }
    if (faults.callbackDelayMs > 0) {
      for (const record of records) {
        clock.schedule(faults.callbackDelayMs, () => this.attempt(record, 1), `callback ${record.delivery_id}`);
      }
      return;
    }
    for (const record of records) await this.attempt(record, 1);
  }

  private attempt(record: DeliveryRecord, attempt: number): Promise<void> {
    const run = this.runAttempt(record, attempt);
    this.inFlight.add(run);
    void run.finally(() => this.inFlight.delete(run));
    return run;
  }

  private async runAttempt(record: DeliveryRecord, attempt: number): Promise<void> {
    const { clock, config } = this.deps;
    record.state = 'in_flight';
    const at = clock.now().toISOString();
    const started = performance.now();
    let status: number | null = null;
    let error: string | undefined;
    try {
      const res = await request(record.receiver, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'user-agent': 'exam-service-sandbox' },
        body: JSON.stringify(record.payload),
        dispatcher: this.agent,
      });
      status = res.statusCode;
      await res.body.dump();
    } catch (err) {
      error = describe(err);
    }
    const latency = Math.round(performance.now() - started);
    record.attempts.push({
      attempt,
      at,
      status,
      latency_ms: latency,
      slow: latency > config.slowCallbackMs,
      ...(error === undefined ? {} : { error }),
    });
    if (status === 200) {
      record.state = 'delivered';
      return;
    }
    if (attempt <= config.callbackRetries) {
      record.state = 'retrying';
      const backoff = config.callbackRetryBaseMs * 2 ** (attempt - 1);
      clock.schedule(backoff, () => this.attempt(record, attempt + 1), `callback ${record.delivery_id} retry`);
      return;
    }
    record.state = 'failed';
  }

  /** Resolves when no attempt is on the wire. */
  async idle(): Promise<void> {
    while (this.inFlight.size > 0) await Promise.allSettled([...this.inFlight]);
  }

  async close(): Promise<void> {
    await this.agent.destroy();
  }
}

function describe(err: unknown): string {
  if (err instanceof Error) {
    const code = (err as { code?: unknown }).code;
    return typeof code === 'string' ? `${code}: ${err.message}` : err.message;
  }
  return String(err);
}
