// The clinic API's request and response schemas: one zod schema per route part serves validation, the handler's
// types and the OpenAPI document. The journey request itself comes from workflows/journey-request (one source).
import { z } from 'zod';
import { US_STATE_CODES } from '../exam-service/schemas';
import type { DeadLetterReason } from '../inbox/types';
import {
  AttachmentRef,
  JourneyRequest,
  PrefilledAnswer,
  Scenario,
  type JourneyRequest as JourneyRequestType,
} from '../workflows/journey-request';

const { clinicId: _clinicId, journeyId: _journeyId, ...startShape } = JourneyRequest.shape;

/**
 * The journey request without clinicId (the bearer token says which clinic) and journeyId (derived from the
 * Idempotency-Key). Unknown fields are refused, so a misspelt optional field is not silently dropped.
 */
export const StartJourneyBody = z
  .strictObject(startShape)
  .superRefine((body, ctx) => {
    // The cross-field rules of JourneyRequest, run on the body with placeholder ids.
    const full = JourneyRequest.safeParse({ ...body, clinicId: 'c', journeyId: 'j' });
    if (full.success) return;
    for (const issue of full.error.issues) {
      if (issue.code === 'custom') ctx.addIssue({ code: 'custom', path: issue.path, message: issue.message });
    }
  })
  .meta({ id: 'StartJourneyRequest' });
export type StartJourneyBody = Omit<JourneyRequestType, 'clinicId' | 'journeyId'>;

export const IdempotencyHeaders = z.looseObject({
  'idempotency-key': z
    .string({ error: 'the Idempotency-Key header is required' })
    .min(1, 'must not be empty')
    .max(255, 'at most 255 characters')
    .regex(/^[\x21-\x7e]+$/, 'visible ASCII characters only')
    .describe('Any unique string per journey; the same key returns the same journey'),
});

export const JourneyIdParam = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/, 'a journey id (letters, digits, "_" and "-")');
export const JourneyParams = z.object({ journeyId: JourneyIdParam });

export const JourneyLinks = z.object({
  self: z.string(),
  cancel: z.string(),
  resend: z.string(),
  answers: z.string(),
  attachments: z.string(),
});

export function journeyLinks(journeyId: string): z.infer<typeof JourneyLinks> {
  const self = `/v1/journeys/${journeyId}`;
  return {
    self,
    cancel: `${self}/cancel`,
    resend: `${self}/resend`,
    answers: `${self}/answers`,
    attachments: `${self}/attachments`,
  };
}

export const StartJourneyResponse = z
  .object({
    journeyId: z.string(),
    /** False when the Idempotency-Key had already started this journey. */
    created: z.boolean(),
    links: JourneyLinks,
  })
  .meta({ id: 'StartJourneyResponse' });

export const JOURNEY_STAGES = [
  'validating',
  'inviting',
  'preparing',
  'awaiting_consultation',
  'awaiting_final_verdict',
  'awaiting_reinvite',
  'awaiting_prescription',
  'awaiting_tracking',
  'needs_attention',
  'completed',
  'cancelled',
  'abandoned',
  'failed',
] as const;
export const EXAM_STATUS_VALUES = [
  'pending',
  'Approved',
  'Rejected',
  'Deferred to Medical Director',
  'NA',
  'Missed',
  'cancelled',
  'expired',
] as const;
export const SCENARIO_TYPES = Scenario.options.map((o) => o.shape.type.value) as [string, ...string[]];

const ReceivedEvent = z.looseObject({
  deliveryId: z.string(),
  event: z.number().int(),
  patientExamId: z.number().int().nullable(),
  prescriptionId: z.number().int().optional(),
  receivedAt: z.string(),
  disposition: z.enum(['applied', 'duplicate', 'buffered', 'foreign', 'ignored', 'held']),
  note: z.string().optional(),
  layout: z.string().optional(),
});

const ExamView = z.looseObject({
  patientExamId: z.number().int(),
  examId: z.number().int(),
  examTitle: z.string(),
  status: z.string(),
  rxStatus: z.string().nullable(),
  phase: z.string().optional(),
  prescriptions: z.array(z.looseObject({ prescriptionId: z.number().int(), drugName: z.string() })),
});

/** The journey as the workflow's snapshot query (or, when that is not possible, its result) tells it. */
export const JourneyState = z
  .looseObject({
    journeyId: z.string(),
    clinicId: z.string(),
    scenario: z.string(),
    stage: z.enum(JOURNEY_STAGES),
    startedAt: z.string().optional(),
    updatedAt: z.string().optional(),
    meetings: z.array(z.looseObject({ meetingUuid: z.string(), meetingUrl: z.string() })).optional(),
    exams: z.array(ExamView).optional(),
    events: z.array(ReceivedEvent).optional(),
    deadlines: z.array(z.looseObject({ at: z.string(), action: z.string() })).optional(),
    attention: z.array(z.looseObject({ code: z.string(), message: z.string() })).optional(),
    lastError: z.looseObject({ kind: z.string(), operation: z.string(), message: z.string() }).nullable().optional(),
    actions: z
      .array(
        z.looseObject({
          at: z.string().describe('When it was done'),
          action: z.enum(['retry', 'abandon', 'cancel', 'resend']),
          actor: z.string().describe("The operator's name or ticket; `clinic` for the clinic API's own calls"),
          note: z.string().optional().describe('Why, in the actor’s words'),
          detail: z.string().describe('What it acted on: the attention settled, the patient exams cancelled or resent'),
        }),
      )
      .optional()
      .describe('Every action taken on the journey from outside, in order'),
    resolvedAttention: z
      .array(
        z.looseObject({
          code: z.string(),
          since: z.string(),
          resolvedAt: z.string(),
          why: z.string().describe('What settled it, e.g. a callback that proved an invite in doubt was created'),
        }),
      )
      .optional()
      .describe('Attention settled by evidence rather than by an operator'),
  })
  .meta({ id: 'JourneyState' });

export const WorkflowStatus = z.enum([
  'RUNNING',
  'COMPLETED',
  'FAILED',
  'CANCELLED',
  'TERMINATED',
  'CONTINUED_AS_NEW',
  'TIMED_OUT',
  'PAUSED',
  'UNSPECIFIED',
  'UNKNOWN',
]);

export const JourneyView = z
  .object({
    journeyId: z.string(),
    workflowStatus: WorkflowStatus,
    startedAt: z.string(),
    closedAt: z.string().nullable(),
    /** query: live snapshot; result: the finished journey's summary; visibility: search attributes only. */
    source: z.enum(['query', 'result', 'visibility']),
    journey: JourneyState,
    links: JourneyLinks,
  })
  .meta({ id: 'Journey' });

const boolParam = z.enum(['true', 'false'], 'true or false').transform((v) => v === 'true');

export const ListJourneysQuery = z.strictObject({
  stage: z.enum(JOURNEY_STAGES).optional(),
  scenario: z.enum(SCENARIO_TYPES).optional(),
  examStatus: z.enum(EXAM_STATUS_VALUES).optional().describe('journeys with at least one exam in this status'),
  needsAttention: boolParam.optional(),
  pageSize: z.coerce.number().int().min(1).max(100).default(20),
  nextPageToken: z
    .string()
    .regex(/^[A-Za-z0-9_.-]+$/, 'a token from a previous page')
    .max(4096)
    .optional(),
});

export const JourneySummaryItem = z.object({
  journeyId: z.string(),
  stage: z.string().nullable(),
  scenario: z.string().nullable(),
  examStatus: z.array(z.string()),
  rxStatus: z.array(z.string()),
  needsAttention: z.boolean().nullable(),
  workflowStatus: WorkflowStatus,
  startedAt: z.string(),
  closedAt: z.string().nullable(),
  links: z.object({ self: z.string() }),
});

export const ListJourneysResponse = z
  .object({ journeys: z.array(JourneySummaryItem), nextPageToken: z.string().nullable() })
  .meta({ id: 'JourneyList' });

export const CancelBody = z.strictObject({
  patientExamId: z.number().int().positive().optional().describe('only this patient exam; every pending one if absent'),
  reason: z.string().max(500).optional(),
});
export const ResendBody = z.strictObject({ patientExamId: z.number().int().positive().optional() });
export const AnswersBody = z.strictObject({
  patientExamId: z.number().int().positive(),
  answers: z.array(PrefilledAnswer).min(1).max(200),
});

const ContentType = z.string().regex(/^[\w.+-]+\/[\w.+-]+$/, 'a MIME type such as image/jpeg');
const FileName = z
  .string()
  .min(1)
  .max(200)
  .regex(/^[^/\\\0]+$/, 'a file name without a path');

/** An attachment sent as JSON; multipart/form-data with fields kind, patientExamId and one file works too. */
export const AttachmentUploadJson = z.strictObject({
  kind: z.string().min(1).max(100).describe('ID, Lab or another name from the exam'),
  fileName: FileName,
  contentType: ContentType,
  contentBase64: z.base64('standard base64').min(1, 'must not be empty'),
});
export const JourneyAttachmentJson = AttachmentUploadJson.extend({ patientExamId: z.number().int().positive() });
export const AttachmentMultipartFields = z.object({
  kind: z.string().min(1).max(100),
  patientExamId: z.coerce.number().int().positive(),
});
export const AttachmentMultipartFile = z.object({ fileName: FileName, contentType: ContentType });

export const UpdateResponse = z.object({ journeyId: z.string(), result: z.record(z.string(), z.unknown()) });
export const AttachmentResponse = z.object({
  journeyId: z.string().optional(),
  attachment: AttachmentRef,
  result: z.record(z.string(), z.unknown()).optional(),
});

// ---- catalog pass-through: camelCase, one layout whatever the service answered --------------------------------

export const CatalogExams = z
  .object({
    exams: z.array(
      z.object({
        examId: z.number().int(),
        title: z.string(),
        rxType: z.union([z.literal(1), z.literal(2)]),
        price: z.string().nullable(),
        attachmentsRequired: z.number().int(),
        attachments: z.array(z.string()),
      }),
    ),
  })
  .meta({ id: 'CatalogExams' });

export const PartnerPharmacies = z.object({
  /** type: absent when the service gives none. */
  pharmacies: z.array(z.object({ pharmacyId: z.number().int(), name: z.string(), type: z.string().optional() })),
});

export const PharmacyParams = z.object({ pharmacyId: z.coerce.number().int().positive() });
export const TreatmentPackagesQuery = z.strictObject({
  examId: z.coerce.number().int().positive(),
  /** The patient's state (packages can differ by state); passed to the service when given. */
  state: z.enum(US_STATE_CODES).optional(),
});
/** What the service described; orderSetId or examPosId is always there (the journey's scenario takes either). */
export const TreatmentPackages = z.object({
  treatmentPackages: z.array(
    z.object({
      orderSetId: z.string().nullable(),
      examPosId: z.number().int().nullable(),
      title: z.string().optional(),
      drugName: z.string().optional(),
      strength: z.string().optional(),
      size: z.string().optional(),
      durationDays: z.number().int().optional(),
      priceCents: z.number().int().nullable(),
    }),
  ),
});

/** Form A (search, zipCode, ncpdpid) or form B (city, state, zipCode, pharmacyName): any of city/state/name is B. */
export const PharmacySearchQuery = z
  .strictObject({
    search: z.string().min(1).max(100).optional(),
    ncpdpid: z.string().min(1).max(20).optional(),
    zipCode: z
      .string()
      .regex(/^\d{5}$/, 'five digits')
      .optional(),
    city: z.string().min(1).max(100).optional(),
    state: z
      .string()
      .regex(/^[A-Z]{2}$/, 'a capital two-letter abbreviation')
      .optional(),
    pharmacyName: z.string().min(1).max(100).optional(),
  })
  .superRefine((q, ctx) => {
    if (Object.values(q).every((v) => v === undefined)) {
      ctx.addIssue({
        code: 'custom',
        path: ['search'],
        message: 'give at least one of search, ncpdpid, zipCode, city, state, pharmacyName',
      });
    }
    const formB = q.city !== undefined || q.state !== undefined || q.pharmacyName !== undefined;
    if (formB && (q.search !== undefined || q.ncpdpid !== undefined)) {
      ctx.addIssue({
        code: 'custom',
        path: [q.search !== undefined ? 'search' : 'ncpdpid'],
        message: 'search and ncpdpid do not combine with city, state or pharmacyName',
      });
    }
  });

/** Ready to use as scenario.pharmacy of a journey request. */
export const CustomPharmacies = z.object({
  pharmacies: z.array(
    z.object({
      ncpdpid: z.string(),
      name: z.string(),
      /** The address fields are absent when the service gave none. */
      addressLine1: z.string().optional(),
      addressLine2: z.string().optional(),
      city: z.string().optional(),
      state: z.string().optional(),
      zipCode: z.string().optional(),
      phone: z.string().optional(),
      type: z.string().optional(),
    }),
  ),
});

// ---- operations and admin ----------------------------------------------------------------------------------------

export const DeadLetterSummary = z.object({
  id: z.string(),
  journeyId: z.string(),
  reason: z.string(),
  detail: z.string(),
  issues: z.array(z.string()).optional(),
  event: z.number().int().optional(),
  patientExamId: z.number().int().optional(),
  deliveryId: z.string().optional(),
  receivedAt: z.string(),
  deadLetteredAt: z.string(),
  replays: z.number().int(),
  lastReplayAt: z.string().optional(),
  bodyBytes: z.number().int().optional(),
});
export const DeadLetterDetail = DeadLetterSummary.extend({ rawBody: z.string() });
export const DeadLetterList = z.object({ deadLetters: z.array(DeadLetterSummary), next: z.string().nullable() });
export const DEAD_LETTER_REASONS = [
  'unparseable',
  'oversized',
  'journey_not_found',
  'journey_finished',
  'corrupt_inbox_entry',
  'corrupt_spool_entry',
] as const satisfies readonly DeadLetterReason[];
// Every reason the inbox can keep a letter for is one a list can filter on.
const _everyReason: Exclude<DeadLetterReason, (typeof DEAD_LETTER_REASONS)[number]> extends never ? true : never = true;
export const DeadLetterListQuery = z.strictObject({
  limit: z.coerce.number().int().min(1).max(500).default(100),
  after: z.string().max(100).optional(),
  reason: z.enum(DEAD_LETTER_REASONS).optional().describe('only letters kept for this reason'),
  since: z.iso
    .datetime({ offset: true, error: 'an ISO 8601 date-time, e.g. 2026-11-23T10:00:00Z' })
    .optional()
    .describe('only callbacks received at or after this time'),
});
export const DeadLetterParams = z.object({ id: z.string().min(1).max(100) });
export const ReplayResponse = z.object({
  id: z.string(),
  /** signalled: the journey took it now; queued: Temporal did not answer, the inbox's forwarder will send it. */
  outcome: z.enum(['signalled', 'queued']),
});
