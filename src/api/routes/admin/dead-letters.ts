// /admin/dead-letters: the callbacks no journey took, to read, replay or discard. Admins only.
import type { FastifyPluginCallbackZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { FastifyRequest } from 'fastify';
import { readerOf, recordFirst, recordOutcome, requireRole, ROLES } from '../../auth';
import type { AuditEvent } from '../../../audit/types';
import type { DeadLetter, ReplayOutcome } from '../../../inbox';
import { ruleParams, rulesOf } from '../../../contract/request-rules';
import type { ApiContext } from '../../context';
import { ApiProblem, notFound, operatorProblems } from '../../problem';
import { DeadLetterDetail, DeadLetterList, DeadLetterListQuery, DeadLetterParams, ReplayResponse } from '../../schemas';

const meta = { tags: ['admin'], security: [{ adminAuth: [] }] };
/** What every dead-letter route may answer beside its own. */
const why = {
  400:
    "The request breaks the operation's schema (`validation`, each field in `errors`); with the admin token, no " +
    '`X-Actor` naming who reads or acts, or one that is not one line of text free of patient data (field `X-Actor`)',
  403: 'Signed in with an access token without the role journey-admin (`forbidden`; on the audit trail)',
  404: 'No dead letter with this id: never kept, or already replayed or discarded (`not-found`); or the operator routes are off',
  503: 'The audit trail could not record the access first, so nothing was served or done (`audit-unavailable`, `Retry-After`)',
};
const rules = (...names: Parameters<typeof rulesOf>) => ({ 'x-rules': rulesOf(...names) });
/** A filtered list reads the store this many letters at a time, and at most SCAN_LIMIT letters per request. */
const SCAN_PAGE = 200;
const SCAN_LIMIT = 5_000;

type Access = 'list' | 'read' | 'replay' | 'delete';

const readable = ruleParams('callback-readable');

/** A replay the callback path refused, as the operator's answer. */
function replayProblem(refused: Exclude<ReplayOutcome, { ok: true }>): ApiProblem {
  switch (refused.refusal) {
    case 'unreadable': {
      const errors = (refused.issues ?? []).map((i) => ({
        field: i.split(': ')[0] ?? '(body)',
        message: i,
        ...readable,
      }));
      return new ApiProblem(422, 'unparseable-callback', refused.detail, {
        errors: errors.length > 0 ? errors : [{ field: '(body)', message: refused.detail, ...readable }],
      });
    }
    case 'too-large':
      return new ApiProblem(422, 'callback-too-large', refused.detail, {
        errors: [{ field: '(body)', message: 'larger than a journey keeps of a callback', ...readable }],
      });
    case 'journey-gone':
      return new ApiProblem(409, 'journey-unavailable', refused.detail);
  }
}

function summary(letter: DeadLetter): Omit<DeadLetter, 'rawBody'> {
  const { rawBody: _raw, ...rest } = letter;
  return rest;
}

const deadLetters: FastifyPluginCallbackZod = (app, _options, done) => {
  const ctx: ApiContext = app;
  // A dead letter's body is the callback as received (patient data): admins only, every access on the record.
  app.addHook('preHandler', requireRole(ctx.audit, ROLES.admin));
  /** Who read or acted on which letter: the action named by the route that ran, never read from the URL. */
  const event = (request: FastifyRequest, what: Access, outcome: string, deadLetterId?: string): AuditEvent => ({
    action: `dead-letter.${what}`,
    subject: request.operator!.subject,
    roles: request.operator!.roles,
    outcome,
    // The static admin token names nobody: who reads or acts comes with it (X-Actor).
    details: { ...(deadLetterId ? { deadLetterId } : {}), ...readerOf(request) },
  });
  /** On the record before the body goes out or the act happens (a trail that fails is a 503, nothing served). */
  const record = (request: FastifyRequest, what: Access, details: { deadLetterId?: string } = {}, outcome = 'ok') =>
    recordFirst(ctx.audit, event(request, what, outcome, details.deadLetterId));

  app.get(
    '/dead-letters',
    {
      schema: {
        ...meta,
        summary:
          'Dead letters, oldest first (without their bodies); filtered by reason and receipt time, a page may hold fewer ' +
          'than limit letters while `next` is not null',
        querystring: DeadLetterListQuery,
        response: {
          200: DeadLetterList,
          ...operatorProblems([400, 401, 403, 404, 429, 503], {
            ...why,
            404: 'The operator routes are off (`not-found`)',
          }),
        },
      },
    },
    async (request) => {
      const { limit, after, reason, since } = request.query;
      await record(request, 'list');
      if (reason === undefined && since === undefined) {
        const page = await ctx.callbacks.inbox.deadLetters.list({ limit, ...(after ? { after } : {}) });
        return { deadLetters: page.letters.map(summary), next: page.next ?? null };
      }
      // Filtered: read on until the page is full or SCAN_LIMIT letters were read; `next` is the last one read, so a
      // page may hold fewer than `limit` letters while more follow.
      const from = since === undefined ? undefined : Date.parse(since);
      const keep = (l: DeadLetter) =>
        (reason === undefined || l.reason === reason) && (from === undefined || Date.parse(l.receivedAt) >= from);
      const letters: DeadLetter[] = [];
      let cursor = after;
      let read = 0;
      while (read < SCAN_LIMIT) {
        const page = await ctx.callbacks.inbox.deadLetters.list({
          limit: Math.min(SCAN_PAGE, SCAN_LIMIT - read),
          ...(cursor ? { after: cursor } : {}),
        });
        for (const letter of page.letters) {
          read++;
          cursor = letter.id;
          if (keep(letter)) letters.push(letter);
          if (letters.length === limit) break;
        }
        const stoppedEarly = page.letters.length > 0 && cursor !== page.letters.at(-1)!.id;
        const more = page.next !== undefined || stoppedEarly;
        if (!more) return { deadLetters: letters.map(summary), next: null };
        if (letters.length === limit) break;
      }
      return { deadLetters: letters.map(summary), next: cursor ?? null };
    },
  );

  app.get(
    '/dead-letters/:id',
    {
      schema: {
        ...meta,
        summary: 'One dead letter with the body as received',
        params: DeadLetterParams,
        response: { 200: DeadLetterDetail, ...operatorProblems([400, 401, 403, 404, 414, 429, 503], why) },
      },
    },
    async (request) => {
      const { id } = request.params;
      const letter = await ctx.callbacks.inbox.deadLetters.get(id);
      if (!letter) {
        await recordOutcome(ctx.audit, event(request, 'read', 'failed: 404', id), request.log);
        throw notFound(`dead letter ${id}`);
      }
      // The body as received (patient data): on the record before it leaves.
      await record(request, 'read', { deadLetterId: id });
      return letter;
    },
  );

  app.post(
    '/dead-letters/:id/replay',
    {
      schema: {
        ...meta,
        summary: 'Deliver a dead letter to its journey again; it is removed once signalled or queued in the inbox',
        params: DeadLetterParams,
        response: {
          200: ReplayResponse,
          ...operatorProblems([400, 401, 403, 404, 409, 413, 414, 415, 422, 429, 503], {
            ...why,
            409: 'Its journey does not exist, or has ended and had not taken this delivery (`journey-unavailable`); the letter stays',
            422:
              'Its body still cannot be read (`unparseable-callback`) or is more than a journey keeps of a callback ' +
              '(`callback-too-large`): the rule `callback-readable`; the letter stays',
          }),
        },
        ...rules('callback-readable'),
      },
    },
    async (request) => {
      const { id } = request.params;
      const letter = await ctx.callbacks.inbox.deadLetters.get(id);
      if (!letter) {
        await recordOutcome(ctx.audit, event(request, 'replay', 'failed: 404', id), request.log);
        throw notFound(`dead letter ${id}`);
      }
      // On the record before the callback goes to its journey; how it ended, after.
      await record(request, 'replay', { deadLetterId: id }, 'requested');
      const replayed = await ctx.callbacks.replay(letter);
      if (!replayed.ok) {
        const problem = replayProblem(replayed);
        await recordOutcome(ctx.audit, event(request, 'replay', `failed: ${problem.status}`, id), request.log);
        throw problem;
      }
      await recordOutcome(ctx.audit, event(request, 'replay', 'ok', id), request.log);
      return { id: letter.id, outcome: replayed.outcome };
    },
  );

  app.delete(
    '/dead-letters/:id',
    {
      schema: {
        ...meta,
        summary: 'Discard a dead letter',
        params: DeadLetterParams,
        response: {
          204: z.undefined().describe('Discarded'),
          ...operatorProblems([400, 401, 403, 404, 413, 414, 415, 429, 503], why),
        },
      },
    },
    async (request, reply) => {
      const { id } = request.params;
      // On the record before it is deleted.
      await record(request, 'delete', { deadLetterId: id }, 'requested');
      const removed = await ctx.callbacks.inbox.deadLetters.remove(id);
      await recordOutcome(ctx.audit, event(request, 'delete', removed ? 'ok' : 'failed: 404', id), request.log);
      if (!removed) throw notFound(`dead letter ${id}`);
      return reply.code(204).send();
    },
  );
  done();
};
export default deadLetters;
