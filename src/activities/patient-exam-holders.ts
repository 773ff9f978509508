// Who holds a patient exam, asked before a journey in doubt adopts the one a callback names. A holder is found by its
// PatientExamIds, or, on rules from before journey-rules-2026-12 (which did not publish them), asked to name its
// patient exams (running) or read from its end (ended). What cannot be read makes the answer unknown, never "none".
import { Context, log } from '@temporalio/activity';
import { WorkflowFailedError } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { namePatientExams, snapshotQuery } from '../contract/definitions';
import type { PatientExamHolders } from '../contract/activity-contract';
import type { JourneySummary } from '../contract/journey-types';

/** Other journeys, as the check reaches them through Temporal. */
export interface OtherJourneys {
  /** Every workflow execution a visibility query matches (all its pages). */
  list(query: string): Promise<{ workflowId: string; runId: string; running: boolean }[]>;
  /** Asks a running journey to publish the ids of its patient exams (namePatientExams). */
  askToName(workflowId: string, runId: string): Promise<void>;
  /** The ids of the patient exams an ended journey held: from its summary, else from its last state (a query). */
  patientExamIdsOf(workflowId: string, runId: string): Promise<number[]>;
}

/** A journey on earlier rules is asked, or read, at most this many at a time per check; the next ask goes on. */
const UNNAMED_PER_CHECK = 100;
/** Journeys asked to name their patient exams do so in their next workflow task. */
const ASK_AGAIN_SOON_MS = 2_000;
const VISIBILITY_RETRY_MS = 30_000;
/** An ended journey that could not be read (its patient's key destroyed, no worker to replay it) rarely can be soon. */
const UNREADABLE_RETRY_MS = 5 * 60_000;
const READ_TIMEOUT_MS = 10_000;

/** The activity's log; nothing outside an activity (a unit test calling the check directly). */
function note(level: 'info' | 'warn', message: string, meta: Record<string, unknown>): void {
  try {
    log[level](message, meta);
  } catch {
    // Not inside an activity: no logger to write to.
  }
}

const quoted = (v: string) => `'${v.replace(/['\\]/g, (c) => `\\${c}`)}'`;

/** The visibility query for the journeys, other than `workflowId`, that hold a patient exam. */
export function holdersQuery(patientExamId: number, workflowId: string): string {
  // Both values are ours (an integer and a workflow id of our own making); quotes are escaped all the same.
  return (
    `WorkflowType = 'patientJourney' AND PatientExamIds = ${quoted(String(Math.trunc(patientExamId)))} ` +
    `AND WorkflowId != ${quoted(workflowId)}`
  );
}

/**
 * The visibility query for the journeys, other than `workflowId`, that hold patient exams without naming them: their
 * exams have statuses but they publish no PatientExamIds (an empty list and an unset attribute are the same to it).
 */
export function unnamedHoldingsQuery(workflowId: string): string {
  return (
    `WorkflowType = 'patientJourney' AND ExamStatus IS NOT NULL AND PatientExamIds IS NULL ` +
    `AND WorkflowId != ${quoted(workflowId)}`
  );
}

const unknown = (reason: string, retryAfterMs: number): PatientExamHolders => ({
  workflowIds: [],
  unknown: { reason, retryAfterMs },
});

/** The worker's own Temporal client (the activity's context): its connection and its data converter. */
export function workerJourneys(): OtherJourneys {
  const client = () => Context.current().client;
  const RUNNING = temporal.api.enums.v1.WorkflowExecutionStatus.WORKFLOW_EXECUTION_STATUS_RUNNING;
  return {
    async list(query) {
      const c = client();
      const found: { workflowId: string; runId: string; running: boolean }[] = [];
      let nextPageToken: Uint8Array | undefined;
      do {
        // The raw service: a page is not decoded (a memo sealed under a destroyed key would fail the whole list).
        const page = await c.withDeadline(Date.now() + READ_TIMEOUT_MS, () =>
          c.workflowService.listWorkflowExecutions({
            namespace: c.options.namespace,
            query,
            pageSize: 1000,
            ...(nextPageToken ? { nextPageToken } : {}),
          }),
        );
        for (const e of page.executions ?? []) {
          const { workflowId, runId } = e.execution ?? {};
          if (workflowId && runId) found.push({ workflowId, runId, running: e.status === RUNNING });
        }
        nextPageToken = page.nextPageToken?.length ? page.nextPageToken : undefined;
      } while (nextPageToken);
      return found;
    },
    async askToName(workflowId, runId) {
      const c = client();
      await c.withDeadline(Date.now() + READ_TIMEOUT_MS, () =>
        c.workflow.getHandle(workflowId, runId).signal(namePatientExams),
      );
    },
    async patientExamIdsOf(workflowId, runId) {
      const c = client();
      const handle = c.workflow.getHandle(workflowId, runId, { followRuns: false });
      return c.withDeadline(Date.now() + READ_TIMEOUT_MS, async () => {
        try {
          const summary = (await handle.result()) as JourneySummary;
          return summary.exams.map((e) => e.patientExamId);
        } catch (err) {
          // Ended without a summary (terminated, failed, timed out): its last state, replayed by a worker.
          if (!(err instanceof WorkflowFailedError)) throw err;
        }
        return (await handle.query(snapshotQuery)).exams.map((e) => e.patientExamId);
      });
    },
  };
}

/** The ownership check's reads, with what it learned of ended journeys on earlier rules (their holdings are final). */
export class PatientExamHolderCheck {
  readonly #ended = new Map<string, number[]>();

  constructor(
    private readonly listWorkflowIds: ((query: string, max: number) => Promise<string[]>) | undefined,
    private readonly journeys: OtherJourneys,
  ) {}

  async find(patientExamId: number, workflowId: string): Promise<PatientExamHolders> {
    if (!this.listWorkflowIds) return unknown('this worker cannot read Temporal visibility', VISIBILITY_RETRY_MS);
    try {
      const named = await this.listWorkflowIds(holdersQuery(patientExamId, workflowId), 10);
      if (named.length > 0) return { workflowIds: [...new Set(named)] };
      return await this.#unnamed(patientExamId, workflowId);
    } catch (err) {
      // Its name only: a message may quote the query.
      note('warn', 'the ownership check could not read Temporal visibility', {
        patientExamId,
        error: err instanceof Error ? err.name : typeof err,
      });
      return unknown('Temporal visibility could not be read', VISIBILITY_RETRY_MS);
    }
  }

  async #unnamed(patientExamId: number, workflowId: string): Promise<PatientExamHolders> {
    const holders: string[] = [];
    let asked = 0;
    let read = 0;
    let unreadable = 0;
    let more = false;
    for (const j of await this.journeys.list(unnamedHoldingsQuery(workflowId))) {
      if (j.running) {
        if (asked >= UNNAMED_PER_CHECK) {
          more = true;
          continue;
        }
        asked++;
        // One that ended meanwhile named its patient exams at its last change, or is read at the next ask.
        await this.journeys.askToName(j.workflowId, j.runId).catch(() => undefined);
        continue;
      }
      const key = `${j.workflowId}/${j.runId}`;
      let ids = this.#ended.get(key);
      if (!ids) {
        if (read >= UNNAMED_PER_CHECK) {
          more = true;
          continue;
        }
        read++;
        try {
          ids = await this.journeys.patientExamIdsOf(j.workflowId, j.runId);
        } catch {
          unreadable++;
          continue;
        }
        this.#ended.set(key, ids);
      }
      if (ids.includes(patientExamId)) holders.push(j.workflowId);
    }
    if (holders.length > 0) return { workflowIds: [...new Set(holders)] };
    if (asked > 0) note('info', 'journeys on earlier rules asked to name their patient exams', { count: asked });
    if (asked > 0 || more) {
      return unknown('journeys on earlier rules had not named their patient exams yet', ASK_AGAIN_SOON_MS);
    }
    if (unreadable > 0) return unknown('an ended journey on earlier rules could not be read', UNREADABLE_RETRY_MS);
    return { workflowIds: [] };
  }
}
