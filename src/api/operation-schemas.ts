// Schemas of the operator routes that act on journeys by query (src/api/routes/admin/journeys.ts): a search that lists the
// journeys a visibility query matches, and one operator action on one journey. A tool (npm run ops) lists, then acts
// on each journey with its own concurrency, rate, progress and interruption.
import { z } from 'zod';
import { MAX_QUERY_LENGTH, queryProblem } from './journey-query';
import { JourneyIdParam, JourneySummaryItem } from './schemas';
import { ruleParams } from '../contract/request-rules';

export const OPERATOR_ACTIONS = ['retry', 'abandon', 'cancel', 'resend', 'reset'] as const;
export type OperatorAction = (typeof OPERATOR_ACTIONS)[number];

const boolParam = z.enum(['true', 'false'], 'true or false').transform((v) => v === 'true');

export const ClinicIdField = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/, 'a clinic id (letters, digits, "_" and "-")');

/** Contact details are the patient data an operator is most likely to paste: refuse what looks like them. */
function contactDetail(v: string): string | undefined {
  if (/[^\s@]+@[^\s@]+\.[^\s@]+/.test(v)) return 'looks like an e-mail address';
  const digitRuns = v.match(/\+?\d[\d\s().-]*\d/g) ?? [];
  if (digitRuns.some((run) => run.replace(/\D/g, '').length >= 10)) return 'looks like a phone number';
  return undefined;
}

const auditText = (max: number, what: string) =>
  z
    .string()
    .trim()
    .min(1, 'required')
    .max(max, `at most ${max} characters`)
    // eslint-disable-next-line no-control-regex
    .regex(/^[^\u0000-\u001f\u007f]+$/, 'one line of text')
    .regex(/\S/, 'not only white space')
    .superRefine((v, ctx) => {
      const found = contactDetail(v);
      if (found) {
        const message = `${found}; ${what} must never hold patient data`;
        ctx.addIssue({ code: 'custom', message, params: ruleParams('no-patient-data') });
      }
    });

export const Actor = auditText(100, 'the actor').describe(
  'who acts, with the admin token: an operator name or a ticket (recorded in the journey; never patient data). ' +
    'Signed in with an access token, the actor is its subject: leave this out',
);
export const Note = auditText(500, 'the note').describe('why (recorded in the journey; never patient data)');

export const JourneySearchQuery = z
  .strictObject({
    query: z
      .string()
      .max(MAX_QUERY_LENGTH)
      .superRefine((q, ctx) => {
        const problem = queryProblem(q);
        if (problem) ctx.addIssue({ code: 'custom', message: problem, params: ruleParams('visibility-query') });
      })
      .describe(
        "a Temporal visibility query, e.g. NeedsAttention = true AND JourneyStage = 'needs_attention'; always ANDed " +
          "with WorkflowType = 'patientJourney' (and ClinicId)",
      )
      .meta({ examples: ["JourneyStage = 'awaiting_consultation'"] }),
    clinicId: ClinicIdField.optional().describe("only this clinic's journeys"),
    running: boolParam.default(false).describe("only running journeys (ExecutionStatus = 'Running')"),
    attention: boolParam
      .default(false)
      .describe("each journey's attention codes, read from its snapshot (pageSize at most 100)"),
    pageSize: z.coerce.number().int().min(1).max(1000).default(100).describe('journeys per page'),
    nextPageToken: z
      .string()
      .regex(/^[A-Za-z0-9_.-]+$/, 'a token from a previous page')
      .max(4096)
      .optional()
      .describe("the previous page's nextPageToken"),
  })
  .superRefine((q, ctx) => {
    if (q.attention && q.pageSize > 100) {
      ctx.addIssue({
        code: 'custom',
        path: ['pageSize'],
        message: 'at most 100 with attention=true',
        params: ruleParams('attention-page-size'),
      });
    }
  });

/** A journey as the clinic's list shows it, without the clinic-API link, with its clinic and attention codes. */
export const AdminJourneyItem = JourneySummaryItem.omit({ links: true }).extend({
  clinicId: z.string().nullable().describe("The journey's clinic (search attribute)"),
  attention: z
    .array(z.string())
    .nullable()
    .optional()
    .describe('attention codes (attention=true); null when no worker answered the snapshot query in time'),
});

export const JourneySearchResponse = z
  .object({
    query: z.string().describe('the query as run: restricted to journeys (and the clinic)'),
    count: z
      .number()
      .int()
      .nullable()
      .describe('journeys matching across all pages (first page only; null on later pages)'),
    journeys: z.array(AdminJourneyItem).describe('Newest first'),
    nextPageToken: z.string().nullable().describe('Pass it to get the next page; null on the last'),
  })
  .meta({ id: 'AdminJourneySearch' });

export const OperatorActionParams = z.object({
  journeyId: JourneyIdParam.describe('The journey'),
  action: z
    .enum(OPERATOR_ACTIONS)
    .describe("The workflow update to send, or reset (the workflow's run reset to a workflow task)"),
});

export const OperatorActionBody = z
  .strictObject({
    actor: Actor.optional(),
    note: Note,
    clinicId: ClinicIdField.optional().describe("act only when the journey is this clinic's (404 otherwise)"),
    operationId: z
      .string()
      .regex(/^[A-Za-z0-9._:-]{1,100}$/, 'letters, digits, ".", "_", ":" and "-", at most 100')
      .optional()
      .describe(
        'the bulk operation this action belongs to: the same operation and action sent again to a journey (a retried ' +
          "request) gets the first answer instead of the journey's refusal",
      ),
    badBuild: z
      .string()
      .regex(/^[A-Za-z0-9_.+-]{1,255}$/, 'a build id (letters, digits, - _ . +)')
      .optional()
      .describe('reset: to before the first workflow task this build completed (a build that decided wrongly)'),
    afterEvent: z
      .string()
      .regex(/^([A-Z][A-Za-z]+|EVENT_TYPE_[A-Z_]+)$/, 'an event type, e.g. ActivityTaskCompleted')
      .optional()
      .describe('reset: to the first workflow task completed after the last event of this type'),
  })
  .refine((b) => !(b.badBuild && b.afterEvent), { message: 'badBuild or afterEvent, not both', path: ['afterEvent'] })
  .meta({
    not: { required: ['badBuild', 'afterEvent'] },
    examples: [{ actor: 'ops-ticket-1234', note: 'portal settings fixed by the clinic' }],
  });

export const OperatorActionResponse = z
  .object({
    journeyId: z.string().describe('The journey'),
    action: z.enum(OPERATOR_ACTIONS).describe('The action taken'),
    outcome: z.literal('done').describe('The journey took the action'),
    result: z.record(z.string(), z.unknown()).describe("the workflow update's answer, e.g. {stage: 'abandoned'}"),
  })
  .meta({ id: 'OperatorActionResult' });
