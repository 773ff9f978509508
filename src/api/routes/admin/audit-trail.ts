// The audit trail for admins: read it a page at a time, or export it as JSON lines that `npm run audit-trail:verify`
// checks. Either store serves them (the file of AUDIT_FILE, or the PostgreSQL table). Each read and export is itself
// on the trail (`audit.read`, `audit.export`), written before the records leave.
import { Readable } from 'node:stream';
import type { FastifyRequest } from 'fastify';
import type { FastifyPluginCallbackZod } from 'fastify-type-provider-zod';
import type { AuditQuery, AuditRecord, AuditTrail } from '../../../audit/types';
import { readerOf, requireRole, ROLES } from '../../auth';
import type { ApiContext } from '../../context';
import { ApiProblem, operatorProblems } from '../../problem';
import { AuditExportQuery, AuditListQuery, AuditPageSchema, AuditRecordSchema } from '../../audit-schemas';

const meta = { tags: ['admin'], security: [{ adminAuth: [] }] };
const problems = operatorProblems([400, 401, 403, 404, 429, 503], {
  400:
    "The query breaks the operation's schema (`validation`, each field in `errors`); with the admin token, no " +
    '`X-Actor` naming who reads, or one that is not one line of text free of patient data (field `X-Actor`)',
  403: 'Signed in with an access token without the role journey-admin (`forbidden`; on the audit trail)',
  404:
    'No audit trail is kept here (neither `AUDIT_FILE` nor `AUDIT_STORE=postgres`), or the operator routes are off ' +
    '(`not-found`)',
  503:
    'The audit trail could not be read, or this read could not be recorded on it, so nothing was served ' +
    '(`audit-unavailable`, `Retry-After`)',
});
/** The export's lines are sent this many bytes at a time, at least. */
const CHUNK_BYTES = 64 * 1024;

type Filters = { after?: number; subject?: string; action?: string; since?: string; until?: string };

function queryOf(f: Filters): AuditQuery {
  return {
    ...(f.after !== undefined ? { after: f.after } : {}),
    ...(f.subject !== undefined ? { subject: f.subject } : {}),
    ...(f.action !== undefined ? { action: f.action } : {}),
    ...(f.since !== undefined ? { since: new Date(f.since) } : {}),
    ...(f.until !== undefined ? { until: new Date(f.until) } : {}),
  };
}

/** The filters of a request, for its own audit record (operator subjects, actions and times: no patient data). */
function filterDetails(f: Filters): Record<string, string | number> {
  return Object.fromEntries(Object.entries(f).filter(([, v]) => v !== undefined));
}

/** The trail could not be read or written: the request is refused rather than served unrecorded (and logged). */
const unavailable =
  (request: FastifyRequest) =>
  (err: unknown): never => {
    if (err instanceof ApiProblem) throw err;
    request.log.warn({ err }, 'the audit trail could not be read or written');
    throw new ApiProblem(503, 'audit-unavailable', 'the audit trail could not be reached; try again', {
      headers: { 'retry-after': '5' },
    });
  };

const auditTrail: FastifyPluginCallbackZod = (app, _options, done) => {
  const ctx: ApiContext = app;
  // Who did what to patient data, and who signed in: admins only.
  app.addHook('preHandler', requireRole(ctx.audit, ROLES.admin));

  const trailOf = (): AuditTrail => {
    if (!ctx.auditTrail) {
      throw new ApiProblem(404, 'not-found', 'no audit trail is kept here (set AUDIT_FILE, or AUDIT_STORE=postgres)');
    }
    return ctx.auditTrail;
  };
  const record = (request: FastifyRequest, action: string, details: Record<string, string | number>) =>
    trailOf().append({
      action,
      subject: request.operator!.subject,
      roles: request.operator!.roles,
      outcome: 'ok',
      // The static admin token names nobody: who reads the record comes with it (X-Actor).
      details: { store: trailOf().kind, ...details, ...readerOf(request) },
    });

  app.get(
    '/audit',
    {
      schema: {
        ...meta,
        summary: 'The audit trail, a page at a time in seq order; filtered by subject, action and time',
        description:
          'Records in seq order after `after` (exclusive), at most `limit` (1-1000, default 100); `nextAfter` is the ' +
          '`after` of the next page, null on the last. The filters go together: `subject`, `action`, `since` ' +
          '(inclusive) and `until` (exclusive), ISO 8601 times. Each read is itself recorded (`audit.read`).',
        querystring: AuditListQuery,
        response: { 200: AuditPageSchema, ...problems },
      },
    },
    async (request) => {
      const trail = trailOf();
      const { limit, ...filters } = request.query;
      const page = await trail.read(queryOf(filters), limit).catch(unavailable(request));
      await record(request, 'audit.read', { ...filterDetails(filters), limit, returned: page.records.length }).catch(
        unavailable(request),
      );
      return page;
    },
  );

  app.get(
    '/audit/export',
    {
      schema: {
        ...meta,
        summary: 'The audit trail as JSON lines (application/x-ndjson), one record per line, for audit-trail:verify',
        description:
          'Every record in seq order (or those the filters select), one AuditRecord JSON per line, up to and ' +
          "including this export's own `audit.export` record, which is written before the first line is sent: a " +
          'whole export ends with it. A whole export (no filter) verifies from seq 1: ' +
          '`npm run audit-trail:verify -- <file>`. A range export (`after`, `since`/`until`) is contiguous and ' +
          "verifies from its first record's `prev`: `npm run audit-trail:verify -- --range <file>`. One filtered by " +
          '`subject` or `action` is a selection, not a chain: each record still carries its hash.',
        querystring: AuditExportQuery,
        response: {
          200: {
            description: 'One AuditRecord JSON per line',
            content: { 'application/x-ndjson': { schema: AuditRecordSchema } },
          },
          ...problems,
        },
      },
    },
    async (request, reply) => {
      const trail = trailOf();
      const filters = request.query;
      // On the record before any line leaves; the export ends with this record (when the filters select it).
      const own = await record(request, 'audit.export', filterDetails(filters)).catch(unavailable(request));
      const query: AuditQuery = { ...queryOf(filters), upTo: own.seq };
      const source = trail.records(query)[Symbol.asyncIterator]();
      // The first page is read before the answer starts, so a store that cannot be read is a 503, not a cut stream.
      const first = await source.next().catch(unavailable(request));
      async function* lines(): AsyncGenerator<string> {
        let chunk = '';
        for (let next: IteratorResult<AuditRecord> = first; !next.done; next = await source.next()) {
          chunk += `${JSON.stringify(next.value)}\n`;
          if (chunk.length >= CHUNK_BYTES) {
            yield chunk;
            chunk = '';
          }
        }
        if (chunk) yield chunk;
      }
      const stamp = own.at.replace(/[:.]/g, '-');
      return (
        reply
          .type('application/x-ndjson; charset=utf-8')
          .header('content-disposition', `attachment; filename="audit-trail-${stamp}.jsonl"`)
          .header('cache-control', 'no-store')
          // A stream is sent as it is (the typed reply knows the record schema only).
          .send(Readable.from(lines(), { objectMode: false }) as never)
      );
    },
  );
  done();
};
export default auditTrail;
