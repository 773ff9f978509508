// Erasing a patient on request (POST /v1/patients/erasure, /admin/patients/erasure, npm run ops -- erase-patient):
// the request is kept in the patient key store (answered 202 at once), and this runner carries it out, in order:
//
//   1. every journey bound to the patient ends: a running one is cancelled as a clinic would (the open invite at the
//      exam service cancelled first, by the journey itself), and terminated if it has not ended within `endWithinMs`;
//   2. the documents those journeys took are deleted (every version), and their dead letters;
//   3. the patient's data key is destroyed (on the record, in the erasure log, out of the store): from then on every
//      copy of the journeys' payloads, histories and backups included, reads as erased;
//   4. the request is marked done, on the record with the journeys it covered (ids only).
//
// Each step may run again without harm, so a request cut short (the API stopped) is taken up again at the next start,
// by any replica. Nothing of the patient is logged or recorded: refs, ids and counts.
import type { Client } from '@temporalio/client';
import type { AttachmentStore } from '../attachments/types';
import { cancelUpdate, journeyWorkflowId } from '../contract/definitions';
import type { DeadLetterStore } from '../inbox/types';
import type { PatientKeys, Actor } from '../patient-keys/patient-keys';
import type { ErasureRequest } from '../patient-keys/types';

export interface PatientErasureOptions {
  keys: PatientKeys;
  temporal: Client;
  attachments: AttachmentStore;
  deadLetters: DeadLetterStore;
  log: { info(meta: object, msg: string): void; warn(meta: object, msg: string): void };
  /** How long a cancelled journey has to end before it is terminated (30 s). */
  endWithinMs?: number;
  /** How often the runner looks for requests left pending (another replica's, one cut short): 30 s. */
  pollMs?: number;
}

/** What a journey was when its patient was erased. */
export type JourneyEnding = 'ended' | 'cancelled' | 'terminated' | 'absent';

const JOURNEY_PREFIX = 'journey-';

export class PatientErasures {
  readonly #o: PatientErasureOptions;
  /** The request each erasure id is being carried out by, in this process. */
  readonly #running = new Map<string, Promise<void>>();
  #timer: NodeJS.Timeout | undefined;
  #closed = false;

  constructor(o: PatientErasureOptions) {
    this.#o = o;
  }

  /** Takes up the requests left pending, then looks again every `pollMs`. */
  start(): void {
    const sweep = () => {
      if (this.#closed) return;
      void this.#o.keys
        .pendingErasureRequests()
        .then((pending) => {
          for (const r of pending) void this.run(r);
        })
        .catch((err: unknown) =>
          this.#o.log.warn({ err: (err as Error).name }, 'patient erasure: the pending requests could not be read'),
        )
        .finally(() => {
          if (!this.#closed) this.#timer = setTimeout(sweep, this.#o.pollMs ?? 30_000).unref();
        });
    };
    sweep();
  }

  /** Records the request (on the record) and carries it out in the background; answers at once. */
  async request(o: {
    clinicId: string;
    email: string;
    idempotencyKey: string;
    actor: Actor;
  }): Promise<{ request: ErasureRequest; created: boolean }> {
    const patientRef = this.#o.keys.patientRef(o.clinicId, o.email);
    const answer = await this.#o.keys.requestErasure({
      clinicId: o.clinicId,
      patientRef,
      idempotencyKey: o.idempotencyKey,
      actor: o.actor,
    });
    if (answer.request.status === 'pending') void this.run(answer.request);
    return answer;
  }

  get(erasureId: string): Promise<ErasureRequest | undefined> {
    return this.#o.keys.erasureRequest(erasureId);
  }

  /** Carries out a request (once at a time in this process); resolves when it is done or has failed (to be retried). */
  run(r: ErasureRequest): Promise<void> {
    const held = this.#running.get(r.erasureId);
    if (held) return held;
    const run = this.#carryOut(r)
      .catch((err: unknown) => {
        // Taken up again by the next sweep: each step may run again.
        this.#o.log.warn(
          { erasureId: r.erasureId, err: err instanceof Error ? err.name : 'Error' },
          'patient erasure: cut short; tried again shortly',
        );
      })
      .finally(() => this.#running.delete(r.erasureId));
    this.#running.set(r.erasureId, run);
    return run;
  }

  async #carryOut(r: ErasureRequest): Promise<void> {
    const started = Date.now();
    const bindings = await this.#o.keys.journeysOf(r.patientRef);
    const journeys = bindings
      .map((b) => b.workflowId)
      .filter((w) => w.startsWith(JOURNEY_PREFIX))
      .map((w) => w.slice(JOURNEY_PREFIX.length));
    const endings: Record<string, JourneyEnding> = {};
    await Promise.all(journeys.map(async (j) => (endings[j] = await this.#end(j, r.erasureId))));
    let documents = 0;
    for (const j of journeys) {
      for (const ref of await this.#o.attachments.takenBy(r.clinicId, j)) {
        await this.#o.attachments.delete(ref);
        documents++;
      }
    }
    const letters = await this.#deleteDeadLetters(new Set(journeys));
    await this.#o.keys.erase(r.patientRef, {
      erasureId: r.erasureId,
      actor: { subject: r.requestedBy, roles: r.requestedRoles },
    });
    await this.#o.keys.completeErasureRequest(r, journeys);
    this.#o.log.info(
      {
        erasureId: r.erasureId,
        journeys: journeys.length,
        terminated: Object.values(endings).filter((e) => e === 'terminated').length,
        documents,
        deadLetters: letters,
        ms: Date.now() - started,
      },
      'patient erasure done',
    );
  }

  /** Ends a journey: cancelled as a clinic would (the journey cancels its invite), terminated if it lingers. */
  async #end(journeyId: string, erasureId: string): Promise<JourneyEnding> {
    const handle = this.#o.temporal.workflow.getHandle(journeyWorkflowId(journeyId));
    const status = async () => (await handle.describe().catch(() => undefined))?.status.name;
    const first = await status();
    if (first === undefined) return 'absent';
    if (first !== 'RUNNING') return 'ended';
    const reason = `patient data erasure ${erasureId}`;
    await handle
      .executeUpdate(cancelUpdate, { args: [{ actor: 'patient-erasure', reason }], updateId: `erase-${erasureId}` })
      .catch(() => undefined);
    const deadline = Date.now() + (this.#o.endWithinMs ?? 30_000);
    while (Date.now() < deadline) {
      if ((await status()) !== 'RUNNING') return 'cancelled';
      await new Promise((r) => setTimeout(r, 500));
    }
    await handle.terminate(`${reason}: it had not ended ${(this.#o.endWithinMs ?? 30_000) / 1000} s after its cancel`);
    return 'terminated';
  }

  /** Deletes the dead letters of these journeys (each deletion on the record); answers how many. */
  async #deleteDeadLetters(journeys: ReadonlySet<string>): Promise<number> {
    if (journeys.size === 0) return 0;
    const doomed: string[] = [];
    let after: string | undefined;
    for (;;) {
      const page = await this.#o.deadLetters.list({ limit: 500, ...(after ? { after } : {}) });
      for (const l of page.letters) if (journeys.has(l.journeyId)) doomed.push(l.id);
      if (!page.next) break;
      after = page.next;
    }
    for (const id of doomed) await this.#o.deadLetters.remove(id);
    return doomed.length;
  }

  async close(): Promise<void> {
    this.#closed = true;
    if (this.#timer) clearTimeout(this.#timer);
    await Promise.all([...this.#running.values()]);
  }
}
