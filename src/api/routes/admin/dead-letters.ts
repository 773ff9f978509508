// /admin/dead-letters: the callbacks no journey took, to read, replay or discard. Admins only.
import type { FastifyPluginCallbackZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { requireRole, ROLES } from '../../auth';
import type { DeadLetter } from '../../../inbox';
import type { ApiContext } from '../../context';
import { ApiProblem, notFound, Problem } from '../../problem';
import { DeadLetterDetail, DeadLetterList, DeadLetterListQuery, DeadLetterParams, ReplayResponse } from '../../schemas';

const meta = { tags: ['admin'], security: [{ adminAuth: [] }] };
const problems = { 401: Problem, 404: Problem };
/** A filtered list reads the store this many letters at a time, and at most SCAN_LIMIT letters per request. */
const SCAN_PAGE = 200;
const SCAN_LIMIT = 5_000;

function summary(letter: DeadLetter): Omit<DeadLetter, 'rawBody'> {
  const { rawBody: _raw, ...rest } = letter;
  return rest;
}

const deadLetters: FastifyPluginCallbackZod = (app, _options, done) => {
  const ctx: ApiContext = app;
  // A dead letter's body is the callback as received (patient data): admins only, every access on the record.
  app.addHook('preHandler', requireRole(ctx.audit, ROLES.admin));
  app.addHook('onResponse', async (request, reply) => {
    if (!request.operator || reply.statusCode === 403) return;
    const id = (request.params as { id?: string }).id;
    const what =
      request.method === 'DELETE' ? 'delete' : request.url.includes('/replay') ? 'replay' : id ? 'read' : 'list';
    await ctx.audit?.({
      action: `dead-letter.${what}`,
      subject: request.operator.subject,
      roles: request.operator.roles,
      outcome: reply.statusCode < 400 ? 'ok' : `failed: ${reply.statusCode}`,
      details: id ? { deadLetterId: id } : {},
    });
  });

  app.get(
    '/dead-letters',
    {
      schema: {
        ...meta,
        summary:
          'Dead letters, oldest first (without their bodies); filtered by reason and receipt time, a page may hold fewer ' +
          'than limit letters while `next` is not null',
        querystring: DeadLetterListQuery,
        response: { 200: DeadLetterList, 400: Problem, ...problems },
      },
    },
    async (request) => {
      const { limit, after, reason, since } = request.query;
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
        response: { 200: DeadLetterDetail, ...problems },
      },
    },
    async (request) => {
      const letter = await ctx.callbacks.inbox.deadLetters.get(request.params.id);
      if (!letter) throw notFound(`dead letter ${request.params.id}`);
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
        response: { 200: ReplayResponse, 409: Problem, 422: Problem, ...problems },
      },
    },
    async (request) => {
      const letter = await ctx.callbacks.inbox.deadLetters.get(request.params.id);
      if (!letter) throw notFound(`dead letter ${request.params.id}`);
      const replayed = await ctx.callbacks.replay(letter);
      if (replayed.ok) return { id: letter.id, outcome: replayed.outcome };
      switch (replayed.refusal) {
        case 'unreadable':
          throw new ApiProblem(422, 'unparseable-callback', replayed.detail, {
            errors: (replayed.issues ?? []).map((i) => ({ field: i.split(': ')[0] ?? '(body)', message: i })),
          });
        case 'too-large':
          throw new ApiProblem(422, 'callback-too-large', replayed.detail);
        case 'journey-gone':
          throw new ApiProblem(409, 'journey-unavailable', replayed.detail);
      }
    },
  );

  app.delete(
    '/dead-letters/:id',
    {
      schema: {
        ...meta,
        summary: 'Discard a dead letter',
        params: DeadLetterParams,
        response: { 204: z.undefined(), ...problems },
      },
    },
    async (request, reply) => {
      if (!(await ctx.callbacks.inbox.deadLetters.remove(request.params.id)))
        throw notFound(`dead letter ${request.params.id}`);
      return reply.code(204).send();
    },
  );
  done();
};
export default deadLetters;
