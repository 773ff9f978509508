// Operator routes for incidents (admin bearer token): list journeys by a visibility query, act on one with the
// workflow's own updates; each action is safe to repeat (docs/design-notes.md#incident-operations).
import { randomUUID } from 'node:crypto';
import type { FastifyPluginCallbackZod } from 'fastify-type-provider-zod';
import { clinicById } from '../../../config';
import {
  abandonUpdate,
  cancelUpdate,
  resendUpdate,
  retryUpdate,
  type CancelRequest,
  type OperatorRequest,
  type ResendRequest,
} from '../../../contract/definitions';
import { actorOf, recordFirst, recordOutcome, requireRole, ROLES } from '../../auth';
import { ruleParams, rulesOf } from '../../../contract/request-rules';
import type { ApiContext } from '../../context';
import { restrictToJourneys } from '../../journey-query';
import {
  JourneySearchQuery,
  JourneySearchResponse,
  OperatorActionBody,
  OperatorActionParams,
  OperatorActionResponse,
  type OperatorAction,
} from '../../operation-schemas';
import { ApiProblem, operatorProblems, validationProblem } from '../../problem';
import type { ResetTarget } from '../../reset-point';

const meta = { tags: ['admin'], security: [{ adminAuth: [] }] };
/** Attention codes are read a few journeys at a time: each is a query the workers answer. */
const ATTENTION_CONCURRENCY = 8;

function knownClinic(ctx: ApiContext, clinicId: string | undefined, field: string): void {
  if (clinicId !== undefined && !clinicById(ctx.config, clinicId)) {
    throw validationProblem([
      { field, message: `no clinic ${clinicId} is configured`, ...ruleParams('clinic-configured') },
    ]);
  }
}

async function mapLimit<T, R>(items: T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const out = new Array<R>(items.length);
  let next = 0;
  const lane = async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i]!);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, lane));
  return out;
}

/** One operator action through the journey's update; the refusal of a journey it no longer applies to is a 409. */
async function act(
  ctx: ApiContext,
  journeyId: string,
  action: OperatorAction,
  body: {
    actor: string;
    note: string;
    clinicId?: string;
    operationId?: string;
    badBuild?: string;
    afterEvent?: string;
  },
): Promise<Record<string, unknown>> {
  const desc = await ctx.journeys.findJourney(journeyId, body.clinicId);
  if (action === 'reset') {
    const target: ResetTarget = body.badBuild
      ? { badBuild: body.badBuild }
      : body.afterEvent
        ? { afterEvent: body.afterEvent }
        : { lastTask: true };
    // Who and why go into the reset event of the history; an operation's retried request resets once.
    const requestId = body.operationId ? `operator:${body.operationId}:reset:${journeyId}` : randomUUID();
    const reason = `${body.actor}: ${body.note}`;
    const operation = body.operationId ? { operationId: body.operationId } : {};
    const keys = ctx.patientKeys ? { patientKeys: ctx.patientKeys } : {};
    return { ...(await ctx.journeys.reset(desc, { target, reason, requestId, ...operation, ...keys })) };
  }
  const operator: OperatorRequest = { actor: body.actor, note: body.note };
  const updateId = body.operationId ? `operator:${body.operationId}:${action}` : undefined;
  const options = updateId ? { updateId } : {};
  switch (action) {
    case 'retry':
      return { ...(await ctx.journeys.update(desc, retryUpdate, operator, options)) };
    case 'abandon':
      return { ...(await ctx.journeys.update(desc, abandonUpdate, operator, options)) };
    case 'cancel': {
      // Cancel and resend take no actor yet: they are sent along for when the journey records them.
      const request: CancelRequest & OperatorRequest = { reason: body.note, ...operator };
      return { ...(await ctx.journeys.update(desc, cancelUpdate, request, options)) };
    }
    case 'resend': {
      const request: ResendRequest & OperatorRequest = { ...operator };
      return { ...(await ctx.journeys.update(desc, resendUpdate, request, options)) };
    }
  }
}

const journeyOperations: FastifyPluginCallbackZod = (app, _options, done) => {
  const ctx: ApiContext = app;

  app.get(
    '/journeys',
    {
      // Journeys' stages, statuses and ids: no patient data, so a viewer may list them.
      preHandler: requireRole(ctx.audit, ROLES.viewer, ROLES.operator, ROLES.admin),
      schema: {
        ...meta,
        summary: 'Journeys a Temporal visibility query matches, restricted to journeys (and a clinic), newest first',
        querystring: JourneySearchQuery,
        response: {
          200: JourneySearchResponse,
          ...operatorProblems([400, 401, 403, 404, 429, 503, 504], {
            403:
              'Signed in with an access token without the role journey-viewer, journey-operator or journey-admin ' +
              '(`forbidden`; on the audit trail)',
            503:
              'Temporal did not answer (`temporal-unavailable`, `Retry-After`), or the audit trail could not record ' +
              'a refusal (`audit-unavailable`)',
          }),
        },
        'x-rules': rulesOf('visibility-query', 'clinic-configured', 'attention-page-size', 'page-token-of-list'),
      },
    },
    async (request) => {
      const q = request.query;
      knownClinic(ctx, q.clinicId, 'querystring.clinicId');
      const query = restrictToJourneys(q.query, {
        ...(q.clinicId !== undefined ? { clinicId: q.clinicId } : {}),
        runningOnly: q.running,
      });
      const first = q.nextPageToken === undefined;
      const [page, count] = await Promise.all([
        ctx.journeys.search(query, q.clinicId !== undefined ? { clinicId: q.clinicId } : {}, {
          pageSize: q.pageSize,
          ...(first ? {} : { nextPageToken: q.nextPageToken }),
        }),
        first ? ctx.journeys.count(query) : Promise.resolve(null),
      ]);
      const journeys = q.attention
        ? await mapLimit(page.journeys, ATTENTION_CONCURRENCY, async (j) => ({
            ...j,
            attention: await ctx.journeys.attentionCodes(j.journeyId),
          }))
        : page.journeys;
      return { query, count, journeys, nextPageToken: page.nextPageToken };
    },
  );

  app.post(
    '/journeys/:journeyId/:action',
    {
      schema: {
        ...meta,
        summary:
          "An operator action on one journey through the workflow's update (retry, abandon, cancel, resend), with " +
          "who and why; 409 with the journey's reason when it does not apply (already done, not parked, ended)",
        params: OperatorActionParams,
        body: OperatorActionBody,
        response: {
          200: OperatorActionResponse,
          ...operatorProblems([400, 401, 403, 404, 409, 413, 414, 415, 422, 429, 502, 503, 504], {
            403:
              'Signed in with an access token without the role journey-operator or journey-admin, or without ' +
              'journey-admin for reset (`forbidden`; on the audit trail)',
            404: "No journey with this id (or not the clinicId's: `not-found`); or the operator routes are off",
            409:
              'The journey refused the action (`refused-by-journey`, its reason in `detail`: not parked, already ' +
              'abandoned, nothing to cancel, another action on the same patient exam in progress), it has ended ' +
              '(`journey-ended`), the provider has already acted (`already-final`), a document is no longer in the ' +
              'store (`attachment-missing`), its history allows no such reset (`reset-refused`), or its patient was erased ' +
              'and its history can no longer run (`journey-erased`)',
            422: 'The exam service refused the cancel or the resend (`exam-service-refused`)',
            502:
              "The exam service refused the clinic's key (`exam-service-unauthorized`), asks for account setup " +
              '(`exam-service-account-setup`) or answered outside its contract (`exam-service-bad-response`)',
            503:
              'The audit trail could not record the action first, so nothing was done (`audit-unavailable`); or ' +
              'Temporal (`temporal-unavailable`) or the exam service (`exam-service-unavailable`) did not answer; ' +
              'retry after `Retry-After` (with the same `operationId`)',
          }),
        },
        'x-rules': rulesOf('no-patient-data', 'actor-named', 'clinic-configured'),
      },
    },
    async (request) => {
      const { journeyId, action } = request.params;
      // Acting on journeys is an operator's; rewinding their history (reset) an admin's.
      await requireRole(ctx.audit, ...(action === 'reset' ? [ROLES.admin] : [ROLES.operator, ROLES.admin]))(request);
      const body = { ...request.body, actor: actorOf(request, request.body.actor) };
      knownClinic(ctx, body.clinicId, 'clinicId');
      const event = (outcome: string) => ({
        action: `journey.${action}`,
        subject: request.operator!.subject,
        roles: request.operator!.roles,
        outcome,
        details: {
          journeyId,
          actor: body.actor,
          ...(body.operationId ? { operationId: body.operationId } : {}),
        },
      });
      // On the record before it takes effect (a trail that cannot be written is a 503 and nothing is done); how it
      // ended, after.
      await recordFirst(ctx.audit, event('requested'));
      let result: Record<string, unknown>;
      try {
        result = await act(ctx, journeyId, action, body);
      } catch (err) {
        await recordOutcome(
          ctx.audit,
          event(err instanceof ApiProblem ? `failed: ${err.status}` : 'failed'),
          request.log,
        );
        throw err;
      }
      await recordOutcome(ctx.audit, event('ok'), request.log);
      request.log.info({ journeyId, action, actor: body.actor }, 'operator action');
      return { journeyId, action, outcome: 'done' as const, result };
    },
  );
  done();
};
export default journeyOperations;
