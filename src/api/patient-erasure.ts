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
// The request is a fence: from the moment it is kept nothing new is bound to the patient (a start is a 409 until it is
// done), so the journeys it lists are final; starts that bound one just before are waited for (each reaches Temporal
// by its deadline or never). `done` comes only once no process can use the key any more (each checks the keys it
// holds against the tombstones, `destroyedEverywhereAfterMs`).
//
// Journeys bound to no patient (started before patients had keys, or while the API ran without them; their payloads
// under the master key ring alone) cannot be shredded by a key. The runner finds the clinic's unbound journeys whose
// input names the patient, ends them as above, deletes their documents and dead letters, and then deletes their
// workflow executions, so that their histories leave Temporal's database (a backup taken before keeps them, readable
// with the payload keys, until it expires).
//
// Each step may run again without harm, so a request cut short (the API stopped) is taken up again at the next start,
// by any replica. Replicas sharing the key store carry out each request once at a time: a runner first takes a lease
// on it in the store (`leaseMs`, renewed while it works; given up when it fails), and every other replica's sweep
// passes it over until it is done or its lease ran out (its holder stopped). Nothing of the patient is logged or
// recorded: refs, ids and counts.
import { randomBytes } from 'node:crypto';
import os from 'node:os';
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import { decodeFromPayloadsAtIndex } from '@temporalio/common/lib/internal-non-workflow';
import type { AttachmentStore } from '../attachments/types';
import { cancelUpdate, journeyWorkflowId } from '../contract/definitions';
import type { JourneyInput } from '../contract/journey-request';
import { JOURNEY_WORKFLOW_TYPE, quoted } from './journey-query';
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
  /**
   * How long this runner's lease on a request lasts unless renewed (every third of it while it works): 2 min. A
   * replica that stops mid-request leaves it to the others this long at most.
   */
  leaseMs?: number;
}

/** Thrown out of a request whose lease this runner lost (it renewed too late, another replica took it over). */
class ErasureLeaseLostError extends Error {
  override name = 'ErasureLeaseLostError';
}

/** What a journey was when its patient was erased. */
export type JourneyEnding = 'ended' | 'cancelled' | 'terminated' | 'absent';

const JOURNEY_PREFIX = 'journey-';
/** How often an erasure looks again whether the starts it waits for have answered. */
const START_POLL_MS = 100;
/** Journeys checked for a binding at once. */
const UNBOUND_PAGE = 500;

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export class PatientErasures {
  readonly #o: PatientErasureOptions;
  /** The request each erasure id is being carried out by, in this process. */
  readonly #running = new Map<string, Promise<void>>();
  #timer: NodeJS.Timeout | undefined;
  #closed = false;
  /** This runner's name on the leases it takes (its host and process, and a random part: no patient data). */
  readonly holder = `${os.hostname()}/${process.pid}/${randomBytes(4).toString('hex')}`;

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
    const run = this.#underLease(r).finally(() => this.#running.delete(r.erasureId));
    this.#running.set(r.erasureId, run);
    return run;
  }

  /** Carries out a request while this runner holds its lease; passes it over when another replica holds it. */
  async #underLease(r: ErasureRequest): Promise<void> {
    const { keys } = this.#o;
    const leaseMs = this.#o.leaseMs ?? 120_000;
    let claimed: boolean;
    try {
      claimed = await keys.claimErasureRequest(r.erasureId, this.holder, leaseMs);
    } catch (err) {
      this.#o.log.warn(
        { erasureId: r.erasureId, err: err instanceof Error ? err.name : 'Error' },
        'patient erasure: its lease could not be taken; tried again shortly',
      );
      return;
    }
    // Another replica carries it out, or it is done.
    if (!claimed) return;
    const lease = { lost: false };
    const renew = setInterval(
      () => {
        keys.claimErasureRequest(r.erasureId, this.holder, leaseMs).then(
          (held) => {
            if (!held) lease.lost = true;
          },
          // A renewal the store did not take: the next one may; the lease runs a while yet.
          () => undefined,
        );
      },
      Math.max(1, Math.floor(leaseMs / 3)),
    );
    renew.unref();
    try {
      await this.#carryOut(r, lease);
    } catch (err) {
      // Taken up again by the next sweep, this replica's or another's: each step may run again.
      this.#o.log.warn(
        { erasureId: r.erasureId, err: err instanceof Error ? err.name : 'Error' },
        'patient erasure: cut short; tried again shortly',
      );
      await keys.releaseErasureRequest(r.erasureId, this.holder).catch(() => undefined);
    } finally {
      clearInterval(renew);
    }
  }

  async #carryOut(r: ErasureRequest, lease: { readonly lost: boolean }): Promise<void> {
    const started = Date.now();
    const { keys } = this.#o;
    const stillHeld = () => {
      if (lease.lost) throw new ErasureLeaseLostError('another replica took the request over');
    };
    // Done by another replica since it was read (its lease taken after that one's ended).
    if ((await keys.erasureRequest(r.erasureId))?.status === 'done') return;
    // Since the request was kept nothing new is bound to the patient (a start is refused until it is done), so these
    // are all the journeys the key will ever have. Starts that bound one before are waited for: each reaches
    // Temporal by its deadline or never, and a journey seen absent here must not start after it is passed over.
    const bindings = await this.#startsAnswered(r.patientRef);
    const bound = bindings
      .map((b) => b.workflowId)
      .filter((w) => w.startsWith(JOURNEY_PREFIX))
      .map((w) => w.slice(JOURNEY_PREFIX.length));
    const unbound = await this.#unboundJourneysOf(r);
    const journeys = [...bound, ...unbound];
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
    // Under the master key ring alone, nothing else makes them unreadable: their histories go.
    for (const j of unbound) await this.#deleteExecution(j);
    stillHeld();
    const erased = await keys.erase(r.patientRef, {
      erasureId: r.erasureId,
      actor: { subject: r.requestedBy, roles: r.requestedRoles },
    });
    // Done meanwhile by another replica (the patient may already have a new key for new journeys): nothing is left.
    if (erased.state === 'already-done') return;
    // Done only once no process can use the key: each checks the keys it holds against the tombstones this often.
    await sleep(keys.destroyedEverywhereAfterMs);
    // A start that reached Temporal after its deadline all the same can read nothing now: it is ended, not left
    // failing every workflow task.
    let late = 0;
    for (const j of bound) {
      if (endings[j] === 'absent' && (await this.#terminateIfRunning(j, r.erasureId))) late++;
    }
    stillHeld();
    await keys.completeErasureRequest(r, journeys);
    this.#o.log.info(
      {
        erasureId: r.erasureId,
        journeys: journeys.length,
        deletedFromTemporal: unbound.length,
        terminated: Object.values(endings).filter((e) => e === 'terminated').length + late,
        documents,
        deadLetters: letters,
        ms: Date.now() - started,
      },
      'patient erasure done',
    );
  }

  /**
   * The patient's journeys, once no start that bound one can still reach Temporal: each binding's start has answered
   * (settled) or its deadline has passed.
   */
  async #startsAnswered(patientRef: ErasureRequest['patientRef']) {
    for (;;) {
      const bindings = await this.#o.keys.journeysOf(patientRef);
      const until = Math.max(0, ...bindings.map((b) => (b.startingUntil ? Date.parse(b.startingUntil) : 0)));
      if (until <= Date.now()) return bindings;
      await sleep(Math.min(START_POLL_MS, until - Date.now()));
    }
  }

  /** Terminates a journey still running after its key's destruction; whether it was. */
  async #terminateIfRunning(journeyId: string, erasureId: string): Promise<boolean> {
    const handle = this.#o.temporal.workflow.getHandle(journeyWorkflowId(journeyId));
    const status = (await handle.describe().catch(() => undefined))?.status.name;
    if (status !== 'RUNNING') return false;
    const gone = await handle
      .terminate(`patient data erasure ${erasureId}: started after its patient's journeys were ended`)
      .then(
        () => false,
        (err: unknown) => {
          if (err instanceof WorkflowNotFoundError) return true;
          throw err;
        },
      );
    if (gone) return false;
    this.#o.log.warn({ erasureId, journeyId }, 'patient erasure: a journey started late was terminated');
    return true;
  }

  /**
   * The clinic's journeys bound to no patient (started before the key store's first start, or while the API ran
   * without patient keys) whose input names this patient (the same keyed hash of clinic and e-mail). Each unbound one
   * is read from its history's start; bound ones are skipped a page at a time.
   */
  async #unboundJourneysOf(r: ErasureRequest): Promise<string[]> {
    const { temporal, keys } = this.#o;
    const query = `WorkflowType = ${quoted(JOURNEY_WORKFLOW_TYPE)} AND ClinicId = ${quoted(r.clinicId)}`;
    const found = new Set<string>();
    const examine = async (page: { workflowId: string; runId: string }[]) => {
      const bound = await keys.boundAmong(page.map((w) => w.workflowId));
      for (const wf of page) {
        if (bound.has(wf.workflowId) || !(await this.#namesPatient(wf, r))) continue;
        found.add(wf.workflowId.slice(JOURNEY_PREFIX.length));
      }
    };
    let page: { workflowId: string; runId: string }[] = [];
    for await (const wf of temporal.workflow.list({ query })) {
      if (!wf.workflowId.startsWith(JOURNEY_PREFIX)) continue;
      page.push({ workflowId: wf.workflowId, runId: wf.runId });
      if (page.length >= UNBOUND_PAGE) {
        await examine(page);
        page = [];
      }
    }
    await examine(page);
    return [...found];
  }

  /** Whether an unbound journey's input names the patient. */
  async #namesPatient(wf: { workflowId: string; runId: string }, r: ErasureRequest): Promise<boolean> {
    const { temporal, keys } = this.#o;
    let history;
    try {
      history = await temporal.workflow.getHandle(wf.workflowId, wf.runId).fetchHistory();
    } catch (err) {
      // Listed by visibility, deleted since (by the same request taken up on another replica): nothing left of it.
      if (err instanceof WorkflowNotFoundError) return false;
      throw err;
    }
    const payloads = history.events?.[0]?.workflowExecutionStartedEventAttributes?.input?.payloads;
    let input: JourneyInput;
    try {
      input = await decodeFromPayloadsAtIndex<JourneyInput>(temporal.options.loadedDataConverter, 0, payloads);
    } catch {
      return false; // not a journey's input this version reads: not this patient's to judge
    }
    const email = input?.patient?.email;
    return typeof email === 'string' && keys.patientRef(r.clinicId, email) === r.patientRef;
  }

  /** Deletes a journey's workflow execution, its history with it (Temporal removes it in the background). */
  async #deleteExecution(journeyId: string): Promise<void> {
    const { temporal } = this.#o;
    try {
      await temporal.workflowService.deleteWorkflowExecution({
        namespace: temporal.options.namespace,
        workflowExecution: { workflowId: journeyWorkflowId(journeyId) },
      });
    } catch (err) {
      // Gone already (a request taken up again): nothing left to delete.
      if ((err as { code?: number }).code !== 5) throw err;
    }
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
    try {
      await handle.terminate(
        `${reason}: it had not ended ${(this.#o.endWithinMs ?? 30_000) / 1000} s after its cancel`,
      );
    } catch (err) {
      // Ended (and gone) meanwhile: what the terminate was for.
      if (err instanceof WorkflowNotFoundError) return 'ended';
      throw err;
    }
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
