// Schemas of the audit trail's admin routes (src/api/routes/admin/audit-trail.ts): a page of records, and the export.
import { z } from 'zod';

const isoTime = (what: string) =>
  z.iso.datetime({ offset: true, error: 'an ISO 8601 date-time, e.g. 2026-11-23T10:00:00Z' }).optional().describe(what);

/** One line of the trail, exactly as it is hash-chained (src/audit/log.ts AuditRecord). */
export const AuditRecordSchema = z
  .object({
    seq: z.number().int().describe('Its place in the trail: 1, 2, 3... without gaps'),
    at: z.string().describe('When it was written (ISO 8601, UTC)'),
    prev: z.string().describe("The previous record's hash (64 zeros for the first)"),
    action: z.string().describe('What was done: admin.sign-in, journey.abandon, dead-letter.read, audit.export...'),
    subject: z.string().describe('Who: the access token\'s subject, "admin-token", or "anonymous"'),
    roles: z.array(z.string()).readonly().describe('Their roles at the time'),
    outcome: z.string().describe('ok, refused: <reason>, forbidden, failed...'),
    details: z
      .record(z.string(), z.union([z.string(), z.number(), z.boolean()]))
      .optional()
      .describe('What it was about, without patient data: ids, counts, routes'),
    hash: z.string().describe('SHA-256 over the fields above, in a fixed order'),
  })
  .meta({ id: 'AuditRecord', description: 'One record of the hash-chained audit trail' });

const filters = {
  after: z.coerce.number().int().min(0).optional().describe("records after this seq: the previous page's `nextAfter`"),
  subject: z
    .string()
    .min(1)
    .max(200)
    // eslint-disable-next-line no-control-regex
    .regex(/^[^\u0000-\u001f\u007f]+$/, 'one line of text')
    .optional()
    .describe("only this subject's records (a token's subject, admin-token, anonymous)"),
  action: z
    .string()
    .regex(/^[A-Za-z0-9._:-]{1,100}$/, 'an action such as journey.abandon')
    .optional()
    .describe('only records of this action, e.g. journey.abandon'),
  since: isoTime('only records written at or after this time'),
  until: isoTime('only records written before this time'),
};

export const AuditListQuery = z.strictObject({
  ...filters,
  limit: z.coerce.number().int().min(1).max(1000).default(100).describe('records per page (1-1000)'),
});

export const AuditExportQuery = z.strictObject(filters);

export const AuditPageSchema = z.object({
  records: z.array(AuditRecordSchema).describe('In seq order'),
  nextAfter: z.number().int().nullable().describe('Pass it as `after` for the next page; null when no record follows'),
});
