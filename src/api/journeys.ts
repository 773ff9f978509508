// The API's side of the journey workflows: idempotent start, ownership-checked lookups, the snapshot (query, then
// result, then visibility), the clinic's list from Temporal visibility, and updates with their failures mapped to
// problems. Routes stay thin; everything Temporal-specific is here.
import {
  ActivityFailure,
  ApplicationFailure,
  WorkflowExecutionAlreadyStartedError,
  WorkflowIdConflictPolicy,
  WorkflowIdReusePolicy,
  WorkflowUpdateFailedError,
  WorkflowUpdateRPCTimeoutOrCancelledError,
  isGrpcCancelledError,
  isGrpcDeadlineError,
  isGrpcServiceError,
  type Client,
  type WorkflowExecutionDescription,
  type WorkflowExecutionInfo,
} from '@temporalio/client';
import { createHmac, timingSafeEqual } from 'node:crypto';
import Long from 'long';
import { executionInfoFromRaw } from '@temporalio/client/lib/helpers';
import { NamespaceNotFoundError, WorkflowNotFoundError, type UpdateDefinition } from '@temporalio/common';
import type { FailureFacts } from '../contract/activity-contract';
import { sealedKeyOf } from '../codec/patient-codec';
import { journeyWorkflowId, SearchAttr, snapshotQuery } from '../contract/definitions';
import type { PatientKeys } from '../patient-keys/patient-keys';
import { failureKindOf } from '../contract/failures';
import { ruleParams } from '../contract/request-rules';
import { serviceProblem } from './exam-service';
import type { JourneyInput } from '../contract/journey-request';
import type { JourneySummary } from '../workflows/journey-state';
import type { temporal as proto } from '@temporalio/proto';
import { JOURNEY_WORKFLOW_TYPE, quoted } from './journey-query';
import { ApiProblem, notFound } from './problem';
import { resetBy, resetPoint, ResetRefused, type ResetTarget } from './reset-point';
import { journeyLinks, type JourneyState } from './schemas';
import type { z } from 'zod';

const WORKFLOW_TYPE = JOURNEY_WORKFLOW_TYPE;
/** gRPC status codes the API decides on. */
const status = { INVALID_ARGUMENT: 3, RESOURCE_EXHAUSTED: 8, ABORTED: 10, UNAVAILABLE: 14 } as const;
const WORKFLOW_ID_PREFIX = journeyWorkflowId('');

export interface JourneyGatewayOptions {
  temporal: Client;
  taskQueue: string;
  /** Deadline of describe, query, update and list calls. */
  timeoutMs: number;
  /** Key of the page tokens' MAC (a token only works for the clinic and filters it was made for). */
  pageTokenSecret: string;
}

export interface StartOutcome {
  journeyId: string;
  created: boolean;
}

type JourneyStateOut = z.output<typeof JourneyState>;

export type JourneyStatus = WorkflowExecutionInfo['status']['name'];

export interface JourneyViewData {
  journeyId: string;
  workflowStatus: JourneyStatus;
  startedAt: string;
  closedAt: string | null;
  source: 'query' | 'result' | 'visibility';
  /** A JourneySnapshot (query), a JourneySummary (result), or what the search attributes tell (visibility). */
  journey: z.output<typeof JourneyState>;
  links: ReturnType<typeof journeyLinks>;
}

const temporalUnavailable = (what: string) =>
  new ApiProblem(503, 'temporal-unavailable', `${what}: the workflow service is not reachable; try again shortly`, {
    headers: { 'retry-after': '5' },
  });

/** Seconds a client waits before it sends a request Temporal did not answer in time again. */
const TEMPORAL_TIMEOUT_RETRY_AFTER_S = 2;

/**
 * Errors of Temporal calls that say nothing about the request: the service is slow or down. An update whose call ran
 * out of time or was cancelled (the SDK's WorkflowUpdateRPCTimeoutOrCancelledError, around DEADLINE_EXCEEDED or
 * CANCELLED: the API cancels none of its calls, so either is the server or the connection giving up) did not answer in
 * time: a 504, not an unknown error.
 */
function unavailable(err: unknown, what: string): ApiProblem | undefined {
  if (
    isGrpcDeadlineError(err) ||
    err instanceof WorkflowUpdateRPCTimeoutOrCancelledError ||
    isGrpcCancelledError(err)
  ) {
    return new ApiProblem(
      504,
      'temporal-timeout',
      `${what}: the workflow service did not answer in time (the request may have taken effect); try again after ` +
        'Retry-After',
      { headers: { 'retry-after': String(TEMPORAL_TIMEOUT_RETRY_AFTER_S) } },
    );
  }
  const grpc = isGrpcServiceError(err)
    ? err
    : err instanceof Error && isGrpcServiceError(err.cause)
      ? err.cause
      : undefined;
  // UNAVAILABLE, RESOURCE_EXHAUSTED, ABORTED: the server is down, shedding load or racing; anything else is a bug.
  if (grpc && [status.UNAVAILABLE, status.RESOURCE_EXHAUSTED, status.ABORTED].some((c) => c === Number(grpc.code))) {
    return temporalUnavailable(what);
  }
  // The engine's namespace is registered before it runs: Temporal not finding it means the server cannot read its
  // namespace registry now (its database failing over, say). Nothing the clinic sent is wrong: the service is away.
  if (err instanceof NamespaceNotFoundError) return temporalUnavailable(what);
  return undefined;
}

type Attributed = Pick<WorkflowExecutionInfo, 'typedSearchAttributes' | 'memo'>;

function searchAttributes(info: Attributed) {
  const sa = info.typedSearchAttributes;
  return {
    clinicId: sa.get(SearchAttr.ClinicId) ?? null,
    stage: sa.get(SearchAttr.JourneyStage) ?? null,
    scenario: sa.get(SearchAttr.Scenario) ?? null,
    examStatus: sa.get(SearchAttr.ExamStatus) ?? [],
    rxStatus: sa.get(SearchAttr.RxStatus) ?? [],
    needsAttention: sa.get(SearchAttr.NeedsAttention) ?? null,
  };
}

export class JourneyGateway {
  constructor(private readonly o: JourneyGatewayOptions) {}

  #deadline<T>(fn: () => Promise<T>, by?: number): Promise<T> {
    const deadline = Date.now() + this.o.timeoutMs;
    return this.o.temporal.connection.withDeadline(by === undefined ? deadline : Math.min(deadline, by), fn);
  }

  /** The workflow's description, or undefined when no journey has this id. */
  async describe(journeyId: string): Promise<WorkflowExecutionDescription | undefined> {
    const handle = this.o.temporal.workflow.getHandle(journeyWorkflowId(journeyId));
    try {
      return await this.#deadline(() => handle.describe());
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) return undefined;
      throw unavailable(err, 'looking up the journey') ?? err;
    }
  }

  /** The journey if the clinic owns it; another clinic's journey is as absent as a missing one. */
  async findOwned(clinicId: string, journeyId: string): Promise<WorkflowExecutionDescription> {
    const desc = await this.describe(journeyId);
    if (!desc || desc.type !== WORKFLOW_TYPE || !ownedBy(desc, clinicId)) throw notFound(`journey ${journeyId}`);
    return desc;
  }

  /**
   * Starts the journey once per workflow id. A start that finds the id taken (a replay, or a concurrent twin) is a
   * replay when the request hash matches and a conflict when it does not.
   */
  /** Starts the journey; `deadline` (epoch ms) is when the call to Temporal gives up at the latest. */
  async start(input: JourneyInput, requestSha256: string, o: { deadline?: number } = {}): Promise<StartOutcome> {
    const workflowId = journeyWorkflowId(input.journeyId);
    try {
      await this.#deadline(
        () =>
          this.o.temporal.workflow.start(WORKFLOW_TYPE, {
            workflowId,
            taskQueue: this.o.taskQueue,
            args: [input],
            workflowIdReusePolicy: WorkflowIdReusePolicy.REJECT_DUPLICATE,
            workflowIdConflictPolicy: WorkflowIdConflictPolicy.FAIL,
            memo: { clinicId: input.clinicId, requestSha256 },
            // What the Temporal UI shows beside the run: the scenario and exam ids, never the patient.
            staticSummary: `${input.scenario.type} journey: exams ${input.exams.join(', ')} (clinic ${input.clinicId})`,
            typedSearchAttributes: [
              { key: SearchAttr.ClinicId, value: input.clinicId },
              { key: SearchAttr.Scenario, value: input.scenario.type },
              { key: SearchAttr.JourneyStage, value: 'validating' },
              { key: SearchAttr.NeedsAttention, value: false },
            ],
          }),
        o.deadline,
      );
      return { journeyId: input.journeyId, created: true };
    } catch (err) {
      if (!(err instanceof WorkflowExecutionAlreadyStartedError)) {
        throw unavailable(err, 'starting the journey') ?? err;
      }
    }
    const existing = await this.describe(input.journeyId);
    const replay = existing && this.isReplay(existing, input.clinicId, requestSha256);
    if (!replay) throw idempotencyConflict();
    return { journeyId: input.journeyId, created: false };
  }

  /** Same clinic and same request hash as the journey that holds this id. */
  isReplay(desc: WorkflowExecutionDescription, clinicId: string, requestSha256: string): boolean {
    return ownedBy(desc, clinicId) && desc.memo?.requestSha256 === requestSha256;
  }

  async view(desc: WorkflowExecutionDescription, journeyId: string): Promise<JourneyViewData> {
    const data = await this.#view(desc, journeyId);
    if (!endedByTemporal(desc.status.name)) return data;
    // The workflow's own last state still reads as waiting (a history over its limit is terminated by the server,
    // an operator may terminate one): the journey is ended and a person must look, whatever that state says.
    const journey = data.journey as JourneyStateOut & { needsAttention?: boolean | null };
    return {
      ...data,
      journey: {
        ...journey,
        stage: 'failed',
        ...('needsAttention' in journey ? { needsAttention: true } : {}),
        attention: [...(journey.attention ?? []), workflowEndedAttention(desc.status.name)],
      },
    };
  }

  async #view(desc: WorkflowExecutionDescription, journeyId: string): Promise<JourneyViewData> {
    const base = {
      journeyId,
      workflowStatus: desc.status.name,
      startedAt: desc.startTime.toISOString(),
      closedAt: desc.closeTime?.toISOString() ?? null,
      links: journeyLinks(journeyId),
    };
    const handle = this.o.temporal.workflow.getHandle(desc.workflowId, desc.runId);
    try {
      const snapshot: unknown = await this.#deadline(() => handle.query(snapshotQuery));
      // A string is an erased journey's marker (its patient's key destroyed): visibility answers it instead.
      if (typeof snapshot === 'object' && snapshot !== null) {
        return { ...base, source: 'query', journey: snapshot as JourneyStateOut };
      }
    } catch {
      // No worker answered in time (or the query failed): fall back to what the server alone can tell.
    }
    if (desc.status.name === 'COMPLETED') {
      try {
        const summary = (await this.#deadline(() => handle.result())) as JourneySummary | string;
        // A string is an erased journey's marker (its patient's key destroyed): visibility answers it instead.
        if (typeof summary === 'object' && summary !== null) {
          return { ...base, source: 'result', journey: summary as unknown as JourneyStateOut };
        }
      } catch {
        // fall through to visibility
      }
    }
    const sa = searchAttributes(desc);
    return {
      ...base,
      source: 'visibility',
      journey: {
        journeyId,
        clinicId: sa.clinicId ?? '',
        scenario: sa.scenario ?? '',
        stage: (sa.stage ?? 'validating') as JourneyStateOut['stage'],
        examStatus: sa.examStatus,
        rxStatus: sa.rxStatus,
        needsAttention: sa.needsAttention,
      },
    };
  }

  async list(
    clinicId: string,
    filters: { stage?: string; scenario?: string; examStatus?: string; needsAttention?: boolean },
    page: { pageSize: number; nextPageToken?: string },
  ) {
    // The clinic is always in the query: nothing else decides what a clinic can see.
    const clauses = [`WorkflowType = ${quoted(WORKFLOW_TYPE)}`, `ClinicId = ${quoted(clinicId)}`];
    if (filters.stage) clauses.push(`JourneyStage = ${quoted(filters.stage)}`);
    if (filters.scenario) clauses.push(`Scenario = ${quoted(filters.scenario)}`);
    if (filters.examStatus) clauses.push(`ExamStatus = ${quoted(filters.examStatus)}`);
    if (filters.needsAttention !== undefined) clauses.push(`NeedsAttention = ${String(filters.needsAttention)}`);
    const query = clauses.join(' AND ');
    const found = await this.#listPage(query, page, 'listing journeys');
    const journeys = found.infos.map((info) => {
      const sa = searchAttributes(info);
      const journeyId = info.workflowId.slice(WORKFLOW_ID_PREFIX.length);
      const ended = endedByTemporal(info.status.name);
      return {
        journeyId,
        stage: ended ? 'failed' : sa.stage,
        scenario: sa.scenario,
        examStatus: sa.examStatus,
        rxStatus: sa.rxStatus,
        needsAttention: ended ? true : sa.needsAttention,
        workflowStatus: info.status.name,
        startedAt: info.startTime.toISOString(),
        closedAt: info.closeTime?.toISOString() ?? null,
        links: { self: journeyLinks(journeyId).self },
      };
    });
    return { journeys, nextPageToken: found.nextPageToken };
  }

  /**
   * Journeys matching an operator's query, already restricted to journeys (and a clinic) by restrictToJourneys. What
   * Temporal answers is checked again: an execution of another type or clinic is never in the page.
   */
  async search(query: string, restriction: { clinicId?: string }, page: { pageSize: number; nextPageToken?: string }) {
    const found = await this.#listPage(query, page, 'searching journeys');
    const journeys = found.infos
      .filter((info) => info.type === WORKFLOW_TYPE && info.workflowId.startsWith(WORKFLOW_ID_PREFIX))
      .filter((info) => restriction.clinicId === undefined || ownedBy(info, restriction.clinicId))
      .map((info) => {
        const sa = searchAttributes(info);
        const ended = endedByTemporal(info.status.name);
        return {
          journeyId: info.workflowId.slice(WORKFLOW_ID_PREFIX.length),
          clinicId: sa.clinicId,
          stage: ended ? 'failed' : sa.stage,
          scenario: sa.scenario,
          examStatus: sa.examStatus,
          rxStatus: sa.rxStatus,
          needsAttention: ended ? true : sa.needsAttention,
          workflowStatus: info.status.name,
          startedAt: info.startTime.toISOString(),
          closedAt: info.closeTime?.toISOString() ?? null,
        };
      });
    return { journeys, nextPageToken: found.nextPageToken };
  }

  /** How many executions match (a restricted query); null when the visibility store cannot count. */
  async count(query: string): Promise<number | null> {
    const { temporal } = this.o;
    try {
      const r = await this.#deadline(() =>
        temporal.workflowService.countWorkflowExecutions({ namespace: temporal.options.namespace, query }),
      );
      return Number(r.count ?? 0);
    } catch (err) {
      if (isInvalidArgument(err)) throw badQuery(err);
      const down = unavailable(err, 'counting journeys');
      if (down) throw down;
      return null;
    }
  }

  /** The codes of what the journey needs attention for (its snapshot); null when no worker answered in time. */
  async attentionCodes(journeyId: string): Promise<string[] | null> {
    const handle = this.o.temporal.workflow.getHandle(journeyWorkflowId(journeyId));
    try {
      const snapshot = await this.#deadline(() => handle.query(snapshotQuery));
      return (snapshot.attention ?? []).map((a) => a.code);
    } catch {
      return null;
    }
  }

  /**
   * Resets the journey to a workflow task (reset-point.ts): a new run from there, which the current version then
   * decides again. The same requestId again (a retried request) gets the same new run. A point the history does not
   * allow is the journey's refusal, 409.
   */
  async reset(
    desc: WorkflowExecutionDescription,
    o: {
      target: ResetTarget;
      reason: string;
      requestId: string;
      operationId?: string;
      patientKeys?: Pick<PatientKeys, 'erasureOfKey'>;
    },
  ): Promise<{ runId: string; resetTo: number }> {
    const { temporal } = this.o;
    const history = await this.#deadline(() => temporal.workflow.getHandle(desc.workflowId, desc.runId).fetchHistory());
    // A journey whose patient was erased cannot run again: its new run could not read its own start (every attempt
    // of its first workflow task would fail). Refused, rather than left running and stuck.
    const input = history.events?.[0]?.workflowExecutionStartedEventAttributes?.input?.payloads?.[0];
    const sealed = input ? sealedKeyOf(input) : undefined;
    if (sealed && (await o.patientKeys?.erasureOfKey(sealed.patientRef, sealed.dekId))) {
      throw new ApiProblem(
        409,
        'journey-erased',
        `journey ${desc.workflowId.slice(WORKFLOW_ID_PREFIX.length)}: its patient was erased, so its history can no longer run; nothing to reset`,
      );
    }
    // A retried request of the same operation finds this run made by its own reset: the same answer, no second reset.
    const done = o.operationId ? resetBy(history.events ?? [], o.operationId) : undefined;
    if (done !== undefined) return { runId: desc.runId, resetTo: done };
    let at: number;
    try {
      at = resetPoint(history.events ?? [], o.target);
    } catch (err) {
      if (err instanceof ResetRefused) throw new ApiProblem(409, 'reset-refused', err.message);
      throw err;
    }
    const { runId } = await this.#deadline(() =>
      temporal.workflowService.resetWorkflowExecution({
        namespace: temporal.options.namespace,
        workflowExecution: { workflowId: desc.workflowId, runId: desc.runId },
        reason: o.operationId ? `${o.reason} [operation ${o.operationId}]` : o.reason,
        workflowTaskFinishEventId: Long.fromNumber(at),
        requestId: o.requestId,
      }),
    );
    return { runId, resetTo: at };
  }

  /** A journey (of this clinic when one is given); anything else with this id is as absent as a missing one. */
  async findJourney(journeyId: string, clinicId?: string): Promise<WorkflowExecutionDescription> {
    const desc = await this.describe(journeyId);
    if (!desc || desc.type !== WORKFLOW_TYPE || (clinicId !== undefined && !ownedBy(desc, clinicId))) {
      throw notFound(`journey ${journeyId}${clinicId !== undefined ? ` of clinic ${clinicId}` : ''}`);
    }
    return desc;
  }

  async #listPage(query: string, page: { pageSize: number; nextPageToken?: string }, what: string) {
    const { temporal } = this.o;
    const pageToken = page.nextPageToken === undefined ? undefined : this.#openPageToken(page.nextPageToken, query);
    let response;
    try {
      response = await this.#deadline(() =>
        temporal.workflowService.listWorkflowExecutions({
          namespace: temporal.options.namespace,
          // No ORDER BY: SQL visibility (dev server, self-hosted) refuses it; its default order is newest first.
          query,
          pageSize: page.pageSize,
          nextPageToken: pageToken,
        }),
      );
    } catch (err) {
      if (isInvalidArgument(err)) throw badQuery(err);
      throw unavailable(err, what) ?? err;
    }
    // A journey's memo is sealed for its patient: opening it costs a key lookup per journey. A list reads only the
    // search attributes, so the memo is opened only for an execution without its ClinicId (ownedBy's fallback).
    const infos = await Promise.all(
      response.executions.map((raw) =>
        executionInfoFromRaw(
          raw.searchAttributes?.indexedFields?.[SearchAttr.ClinicId.name] ? withoutMemo(raw) : raw,
          temporal.options.loadedDataConverter,
          raw,
          temporal.options.namespace,
        ),
      ),
    );
    const token = response.nextPageToken;
    return { infos, nextPageToken: token && token.length > 0 ? this.#sealPageToken(token, query) : null };
  }

  #pageTokenMac(token: string, query: string): string {
    return createHmac('sha256', this.o.pageTokenSecret)
      .update(`journey-list-page\n${query}\n${token}`)
      .digest('base64url')
      .slice(0, 22);
  }

  /** Temporal's token, with a MAC over it and the list's query (which holds the clinic and the filters). */
  #sealPageToken(raw: Uint8Array, query: string): string {
    const token = Buffer.from(raw).toString('base64url');
    return `${token}.${this.#pageTokenMac(token, query)}`;
  }

  #openPageToken(sealed: string, query: string): Buffer {
    const at = sealed.lastIndexOf('.');
    const token = sealed.slice(0, at);
    const mac = Buffer.from(sealed.slice(at + 1));
    const expected = Buffer.from(this.#pageTokenMac(token, query));
    if (at <= 0 || mac.length !== expected.length || !timingSafeEqual(mac, expected)) {
      throw new ApiProblem(400, 'validation', 'nextPageToken is not a token of this list (same clinic, same filters)', {
        errors: [
          { field: 'querystring.nextPageToken', message: 'not a token of this list', rule: 'page-token-of-list' },
        ],
      });
    }
    return Buffer.from(token, 'base64url');
  }

  /**
   * Runs an update; a validator's refusal is a 409 with its message, the exam service's refusal a 4xx/5xx. With an
   * updateId, the same update sent again (a retried request) is answered with the first one's result.
   */
  async update<Ret, Arg>(
    desc: WorkflowExecutionDescription,
    def: UpdateDefinition<Ret, [Arg]>,
    arg: Arg,
    options: { updateId?: string } = {},
  ): Promise<Ret> {
    const ended = desc.status.name !== 'RUNNING';
    // An ended journey takes no update, but still answers one it completed under the same id (Temporal keeps them).
    if (ended && !options.updateId) throw journeyEnded(desc.status.name);
    const handle = this.o.temporal.workflow.getHandle(desc.workflowId, desc.runId);
    try {
      return await this.#deadline(() =>
        handle.executeUpdate(def, { args: [arg], ...(options.updateId ? { updateId: options.updateId } : {}) }),
      );
    } catch (err) {
      if (ended && err instanceof WorkflowNotFoundError) throw journeyEnded(desc.status.name);
      const problem = updateProblem(err);
      if (problem !== err) throw problem;
      // Not a failure we know: the journey may have ended while the update was on its way (Temporal then answers
      // in more than one way). If it has, that is the answer; anything else is a fault of ours.
      const now = await handle.describe().catch(() => undefined);
      if (now && now.status.name !== 'RUNNING') throw journeyEnded(now.status.name);
      throw err;
    }
  }
}

function isInvalidArgument(err: unknown): boolean {
  const grpc = isGrpcServiceError(err)
    ? err
    : err instanceof Error && isGrpcServiceError(err.cause)
      ? err.cause
      : undefined;
  return grpc !== undefined && Number(grpc.code) === status.INVALID_ARGUMENT;
}

/** Temporal refused the query (an unknown search attribute, a syntax error): its words, naming the field. */
function badQuery(err: unknown): ApiProblem {
  const raw = err instanceof Error ? ((err as { details?: string }).details ?? err.message) : String(err);
  const message = raw.replace(/^\d+ INVALID_ARGUMENT: /, '');
  return new ApiProblem(400, 'validation', `Temporal refused the query: ${message}`, {
    errors: [{ field: 'query', message, ...ruleParams('visibility-query') }],
  });
}

/** The execution as listed, its memo left out (every other field read through to it). */
function withoutMemo(raw: proto.api.workflow.v1.IWorkflowExecutionInfo): proto.api.workflow.v1.IWorkflowExecutionInfo {
  return Object.create(raw, { memo: { value: null } }) as proto.api.workflow.v1.IWorkflowExecutionInfo;
}

function ownedBy(desc: Attributed, clinicId: string): boolean {
  return desc.typedSearchAttributes.get(SearchAttr.ClinicId) === clinicId || desc.memo?.clinicId === clinicId;
}

function idempotencyConflict(): ApiProblem {
  return new ApiProblem(
    409,
    'idempotency-conflict',
    'this Idempotency-Key was already used with a different request body; use a new key for a new journey',
    { errors: [{ field: 'headers.idempotency-key', message: 'already used with a different body' }] },
  );
}
export { idempotencyConflict };

/**
 * A journey whose workflow Temporal ended rather than the journey itself: terminated (by an operator, or by the server
 * when the history passed its limits), timed out, failed or cancelled. Its last state is not where it stands.
 */
export function endedByTemporal(status: string): boolean {
  return status === 'TERMINATED' || status === 'TIMED_OUT' || status === 'FAILED' || status === 'CANCELLED';
}

function workflowEndedAttention(status: string) {
  return {
    code: 'workflow_ended',
    message:
      `the journey's workflow was ${status.toLowerCase().replace('_', ' ')} by Temporal: it no longer follows ` +
      'callbacks or deadlines; its callbacks go to the dead letters. Look at it in the Temporal UI',
  };
}

export function journeyEnded(status: string): ApiProblem {
  return new ApiProblem(409, 'journey-ended', `the journey has ended (workflow ${status.toLowerCase()})`);
}

export function updateProblem(err: unknown): unknown {
  if (err instanceof WorkflowNotFoundError) return journeyEnded('closed');
  if (err instanceof WorkflowUpdateFailedError) {
    const cause = err.cause;
    if (cause instanceof ActivityFailure) {
      const failure = cause.cause instanceof ApplicationFailure ? cause.cause : undefined;
      const facts = failure?.details?.[0] as FailureFacts | undefined;
      const kind = failureKindOf(failure?.type ?? undefined);
      if (kind) return serviceProblem(kind, facts ?? {});
      return new ApiProblem(502, 'exam-service-failed', `the exam service call failed (${facts?.kind ?? 'unknown'})`);
    }
    // The workflow's validator (or handler) refused: its message says why, e.g. "patient exam 9 is Approved".
    return new ApiProblem(409, 'refused-by-journey', cause?.message ?? err.message);
  }
  return unavailable(err, 'updating the journey') ?? err;
}
