// The clinic API's request and response schemas: one zod schema per route part serves validation, the handler's
// types and the OpenAPI document. The journey request itself comes from contract/journey-request (one source).
import { z } from 'zod';
import { TEST_MODE_STATE, US_STATE_CODES } from '../exam-service/schemas';
import type { DeadLetterReason } from '../inbox/types';
import {
  AttachmentRef,
  JourneyRequest,
  PrefilledAnswer,
  Scenario,
  stringifiedJson,
  type JourneyRequest as JourneyRequestType,
} from '../contract/journey-request';
import { ruleParams } from '../contract/request-rules';

const { clinicId: _clinicId, journeyId: _journeyId, ...requestShape } = JourneyRequest.shape;

/** additionalData as a clinic may send it: an object (written as JSON for the service), or the JSON text itself. */
export const AdditionalDataInput = z
  .union([
    z
      .record(z.string(), z.unknown())
      .describe('Any JSON object; the API writes it as JSON text (at most 4,000 characters) for the service'),
    stringifiedJson.describe(
      'JSON text (JSON.stringify of a value), as earlier versions took it; at most 4,000 characters',
    ),
  ])
  .describe("The clinic's own data, echoed back by the service in every callback: an object, or JSON text");

/** additionalData as the journey and the service take it: JSON text. */
export function additionalDataText(value: string | Record<string, unknown> | undefined): string | undefined {
  return value === undefined || typeof value === 'string' ? value : JSON.stringify(value);
}

const startShape = { ...requestShape, additionalData: AdditionalDataInput.optional() };

const notTestMode = { properties: { state: { not: { const: TEST_MODE_STATE } } } };
/** The request's rule that an address is in test mode (TE) only with the patient's teleState TE, as JSON Schema. */
const testModeTogether = {
  if: { properties: { patient: { properties: { teleState: { const: TEST_MODE_STATE } } } } },
  else: { properties: { homeAddress: notTestMode, shippingAddress: notTestMode } },
};

/** A test-mode patient of the sandbox: `Test` and the outcome keyword, state TE. */
const testPatient = {
  firstName: 'Test',
  lastName: 'Approve',
  email: 'patient@example.com',
  dob: '1990-01-01',
  phoneNumber: '4155550100',
  teleState: 'TE',
};

/**
 * The journey request without clinicId (the bearer token says which clinic) and journeyId (derived from the
 * Idempotency-Key). Unknown fields are refused, so a misspelt optional field is not silently dropped. The examples are
 * requests the sandbox's clinic accepts (test/openapi/examples.test.ts sends each).
 */
export const StartJourneyBody = z
  .strictObject(startShape)
  .superRefine((body, ctx) => {
    const additionalData = additionalDataText(body.additionalData);
    if (typeof body.additionalData === 'object' && additionalData !== undefined && additionalData.length > 4000) {
      ctx.addIssue({
        code: 'custom',
        path: ['additionalData'],
        message: `at most 4000 characters as JSON text; this object is ${additionalData.length}`,
        params: ruleParams('additional-data-size'),
      });
    }
    // The cross-field rules of JourneyRequest, run on the body with placeholder ids.
    const full = JourneyRequest.safeParse({ ...body, additionalData, clinicId: 'c', journeyId: 'j' });
    if (full.success) return;
    for (const issue of full.error.issues) {
      if (issue.code !== 'custom') continue;
      const { path, message, params } = issue;
      if (body.additionalData !== undefined && path[0] === 'additionalData' && typeof body.additionalData !== 'string')
        continue;
      ctx.addIssue({ code: 'custom', path, message, ...(params ? { params } : {}) });
    }
  })
  .meta({
    id: 'StartJourneyRequest',
    ...testModeTogether,
    examples: [
      {
        patient: testPatient,
        exams: [101],
        scenario: { type: 'gfe' },
        additionalData: { clinicPatientRef: 'cp-1042', campaign: 'spring' },
        notificationUrl: 'https://clinic.example/journey-events',
      },
      {
        patient: { ...testPatient, lastName: 'Prescription Approve', phoneNumber: '+15125550199' },
        shippingAddress: { line1: '100 Congress Ave', city: 'Austin', state: 'TE', zipCode: '78701' },
        exams: [301],
        scenario: {
          type: 'urgent_care',
          pharmacy: {
            ncpdpid: '4512345',
            name: 'Sandbox Drug Mart #101',
            addressLine1: '100 Congress Ave',
            city: 'Austin',
            state: 'TX',
            zipCode: '78701',
            phone: '5125550111',
          },
          skipConfirmation: true,
        },
        additionalData: '{"clinicPatientRef":"cp-1043"}',
      },
    ],
  });
export type StartJourneyBody = Omit<JourneyRequestType, 'clinicId' | 'journeyId' | 'additionalData'> & {
  additionalData?: string | Record<string, unknown>;
};

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
export const JourneyParams = z.object({ journeyId: JourneyIdParam.describe('The journey') });

export const JourneyLinks = z
  .object({
    self: z.string().describe('GET: the journey'),
    cancel: z.string().describe('POST: cancel the invite'),
    resend: z.string().describe('POST: resend the invite'),
    answers: z.string().describe('POST: submit screening answers'),
    attachments: z.string().describe('POST: upload an attachment to a patient exam'),
  })
  .describe("The journey's own routes");

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
    journeyId: z.string().describe('The journey, derived from the Idempotency-Key'),
    /** False when the Idempotency-Key had already started this journey. */
    created: z.boolean().describe('False when the Idempotency-Key had already started this journey'),
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
  deliveryId: z.string().describe('The id the webhook gave the delivery'),
  event: z.number().int().describe('1 consultation complete, 2 prescription confirmed, 3 package shipped'),
  patientExamId: z.number().int().nullable().describe('The patient exam it is about; null when unreadable'),
  prescriptionId: z.number().int().optional().describe('The prescription of an event 3'),
  receivedAt: z.string().describe('When the webhook received it (ISO 8601)'),
  disposition: z
    .enum(['applied', 'duplicate', 'buffered', 'foreign', 'ignored', 'held'])
    .describe('What the journey did with it'),
  note: z.string().optional().describe('Why, when it was not applied'),
  layout: z.string().optional().describe('The callback layout it was read in, when not the documented one'),
});

const ExamView = z.looseObject({
  patientExamId: z.number().int().describe("The service's id of this exam for this patient"),
  examId: z.number().int().describe("The exam's id in the clinic's exam list"),
  examTitle: z.string().describe("The exam's title"),
  status: z.string().describe('pending, the verdict (Approved, Rejected, ...), cancelled or expired'),
  rxStatus: z.string().nullable().describe('The prescription status, e.g. Pharmacy Confirmed; null before event 2'),
  phase: z.string().optional().describe('What the exam waits for'),
  prescriptions: z
    .array(
      z.looseObject({
        prescriptionId: z.number().int().describe("The service's prescription id"),
        drugName: z.string().describe('The drug'),
        tracking: z
          .looseObject({
            trackingNumber: z.string().describe("The carrier's tracking number"),
            deliveryService: z.string().nullable().describe('The carrier, when the service named it'),
            shippedAt: z.string().describe('When event 3 told it (ISO 8601)'),
          })
          .nullable()
          .optional()
          .describe('The shipment of event 3; null until it came'),
      }),
    )
    .describe('The drugs of event 2'),
  prescriptionOverdue: z.boolean().optional().describe('Event 2 is later than the prescription deadline'),
  trackingOverdue: z.boolean().optional().describe('Event 3 is later than the tracking deadline'),
});

/** The journey as the workflow's snapshot query (or, when that is not possible, its result) tells it. */
export const JourneyState = z
  .looseObject({
    journeyId: z.string().describe('The journey'),
    clinicId: z.string().describe('The clinic that started it'),
    scenario: z.string().describe('gfe, partner_pharmacy, urgent_care or custom_pharmacy'),
    stage: z.enum(JOURNEY_STAGES).describe('Where the journey is'),
    examStatus: z
      .array(z.string())
      .optional()
      .describe('The status of each patient exam, when read from visibility (source `visibility`)'),
    startedAt: z.string().optional().describe('ISO 8601'),
    updatedAt: z.string().optional().describe('ISO 8601, the last change'),
    meetings: z
      .array(
        z.looseObject({
          meetingUuid: z.string().describe("The invite's meeting at the service"),
          meetingUrl: z.string().describe("The patient's link to the meeting"),
        }),
      )
      .optional()
      .describe('One per invite (a re-invite adds one)'),
    exams: z.array(ExamView).optional().describe('Each patient exam of the invite'),
    events: z.array(ReceivedEvent).optional().describe('Every callback received, in order of arrival'),
    deadlines: z
      .array(
        z.looseObject({
          at: z.string().describe('ISO 8601'),
          action: z.string().describe('What happens then, e.g. consultation deadline'),
        }),
      )
      .optional()
      .describe('The running timers'),
    attention: z
      .array(
        z.looseObject({
          code: z.string().describe('e.g. invite_ambiguous, verdict_lost'),
          message: z.string().describe('What a person should know, without patient data'),
        }),
      )
      .optional()
      .describe('Why the journey waits for a person'),
    lastError: z
      .looseObject({
        kind: z.string().describe('How the error is classified, e.g. not_sent, ambiguous'),
        operation: z.string().describe('The exam-service operation'),
        message: z.string().describe('What went wrong'),
      })
      .nullable()
      .optional()
      .describe('The last exam-service error'),
    actions: z
      .array(
        z.looseObject({
          at: z.string().describe('When it was done'),
          action: z.enum(['retry', 'abandon', 'cancel', 'resend']).describe('What was done'),
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
          code: z.string().describe('The attention code'),
          since: z.string().describe('When the journey started waiting (ISO 8601)'),
          resolvedAt: z.string().describe('When it was settled (ISO 8601)'),
          why: z.string().describe('What settled it, e.g. a callback that proved an invite in doubt was created'),
        }),
      )
      .optional()
      .describe('Attention settled by evidence rather than by an operator'),
  })
  .meta({ id: 'JourneyState', description: "The journey as the workflow's snapshot tells it" });

export const WorkflowStatus = z
  .enum([
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
  ])
  .describe("The Temporal workflow's status");

export const JourneyView = z
  .object({
    journeyId: z.string().describe('The journey'),
    workflowStatus: WorkflowStatus,
    startedAt: z.string().describe('ISO 8601'),
    closedAt: z.string().nullable().describe('ISO 8601; null while it runs'),
    /** query: live snapshot; result: the finished journey's summary; visibility: search attributes only. */
    source: z
      .enum(['query', 'result', 'visibility'])
      .describe("query: live snapshot; result: the finished journey's summary; visibility: search attributes only"),
    journey: JourneyState,
    links: JourneyLinks,
  })
  .meta({ id: 'Journey' });

const boolParam = z.enum(['true', 'false'], 'true or false').transform((v) => v === 'true');

export const ListJourneysQuery = z.strictObject({
  stage: z.enum(JOURNEY_STAGES).optional().describe('journeys in this stage'),
  scenario: z.enum(SCENARIO_TYPES).optional().describe('journeys of this scenario'),
  examStatus: z.enum(EXAM_STATUS_VALUES).optional().describe('journeys with at least one exam in this status'),
  needsAttention: boolParam.optional().describe('journeys that wait for a person (or not)'),
  pageSize: z.coerce.number().int().min(1).max(100).default(20).describe('journeys per page'),
  nextPageToken: z
    .string()
    .regex(/^[A-Za-z0-9_.-]+$/, 'a token from a previous page')
    .max(4096)
    .optional()
    .describe("the previous page's nextPageToken"),
});

export const JourneySummaryItem = z.object({
  journeyId: z.string().describe('The journey'),
  stage: z.string().nullable().describe('Its stage (search attribute); null when not set yet'),
  scenario: z.string().nullable().describe('Its scenario; null when not set yet'),
  examStatus: z.array(z.string()).describe('The status of each patient exam'),
  rxStatus: z.array(z.string()).describe('The prescription status of each prescription exam'),
  needsAttention: z.boolean().nullable().describe('True while it waits for a person'),
  workflowStatus: WorkflowStatus,
  startedAt: z.string().describe('ISO 8601'),
  closedAt: z.string().nullable().describe('ISO 8601; null while it runs'),
  links: z.object({ self: z.string().describe('GET: the journey') }).describe("The journey's route"),
});

export const ListJourneysResponse = z
  .object({
    journeys: z.array(JourneySummaryItem).describe('Most recent first'),
    nextPageToken: z.string().nullable().describe('Pass it to get the next page; null on the last'),
  })
  .meta({ id: 'JourneyList' });

export const CancelBody = z
  .strictObject({
    patientExamId: z
      .number()
      .int()
      .positive()
      .optional()
      .describe('only this patient exam; every pending one if absent'),
    reason: z.string().max(500).optional().describe('Why, recorded in the journey (never patient data)'),
  })
  .meta({ examples: [{ reason: 'booked by mistake' }] });
export const ResendBody = z
  .strictObject({
    patientExamId: z
      .number()
      .int()
      .positive()
      .optional()
      .describe('only this patient exam; every pending one if absent'),
  })
  .meta({ examples: [{}] });
export const AnswersBody = z
  .strictObject({
    patientExamId: z.number().int().positive().describe('The patient exam the answers are for'),
    answers: z.array(PrefilledAnswer).min(1).max(200).describe('Screening answers by question number'),
  })
  .meta({ examples: [{ patientExamId: 90001, answers: [{ no: 2, answer: 'No' }] }] });

const ContentType = z.string().regex(/^[\w.+-]+\/[\w.+-]+$/, 'a MIME type such as image/jpeg');
const FileName = z
  .string()
  .min(1)
  .max(200)
  // eslint-disable-next-line no-control-regex -- NUL is refused; written \x00 as JSON Schema's regex engines read it
  .regex(/^[^/\\\x00]+$/, 'a file name without a path');

/** An attachment sent as JSON; multipart/form-data with fields kind, patientExamId and one file works too. */
const attachmentExample = {
  kind: 'ID',
  fileName: 'id-front.jpg',
  contentType: 'image/jpeg',
  contentBase64: '/9j/4AAQSkZJRgABAQAAAQABAAD/2wBDAA==',
};
export const AttachmentUploadJson = z
  .strictObject({
    kind: z.string().min(1).max(100).describe('ID, Lab or another name from the exam'),
    fileName: FileName.describe('The file name, without a path'),
    contentType: ContentType.describe('MIME type, e.g. image/jpeg'),
    contentBase64: z.base64('standard base64').min(1, 'must not be empty').describe('The file, standard base64'),
  })
  .meta({ examples: [attachmentExample] });
export const JourneyAttachmentJson = AttachmentUploadJson.extend({
  patientExamId: z.number().int().positive().describe('The patient exam it is for'),
}).meta({ examples: [{ ...attachmentExample, patientExamId: 90001 }] });
export const AttachmentMultipartFields = z.object({
  kind: z.string().min(1).max(100),
  patientExamId: z.coerce.number().int().positive(),
});
export const AttachmentMultipartFile = z.object({ fileName: FileName, contentType: ContentType });

export const UpdateResponse = z.object({
  journeyId: z.string().describe('The journey'),
  result: z.record(z.string(), z.unknown()).describe("The workflow update's answer"),
});
export const AttachmentResponse = z.object({
  journeyId: z.string().optional().describe('The journey, when uploaded to one'),
  attachment: AttachmentRef.describe('The stored attachment; reference it in a start request'),
  result: z.record(z.string(), z.unknown()).optional().describe("The workflow update's answer"),
});

// ---- catalog pass-through: camelCase, one layout whatever the service answered --------------------------------

export const CatalogExams = z
  .object({
    exams: z
      .array(
        z.object({
          examId: z.number().int().describe('Pass it in `exams` of a start request'),
          title: z.string().describe("The exam's name at the clinic"),
          rxType: z.union([z.literal(1), z.literal(2)]).describe('1: no prescription (GFE); 2: prescription exam'),
          price: z.string().nullable().describe('Preset price, a decimal string; null when none'),
          attachmentsRequired: z.number().int().describe('2: the attachments below are required; 1: the ID only'),
          attachments: z.array(z.string()).describe('Attachments required beyond the ID'),
        }),
      )
      .describe("The clinic's exams at the service"),
  })
  .meta({ id: 'CatalogExams' });

export const PartnerPharmacies = z.object({
  /** type: absent when the service gives none. */
  pharmacies: z
    .array(
      z.object({
        pharmacyId: z.number().int().describe('Pass it as scenario.pharmacyId'),
        name: z.string().describe("The pharmacy's name"),
        type: z.string().optional().describe('e.g. 503A; absent when the service gives none'),
      }),
    )
    .describe('Partner (compounding) pharmacies'),
});

export const PharmacyParams = z.object({
  pharmacyId: z.coerce
    .number()
    .int()
    .positive()
    .describe('A partner pharmacy')
    .meta({ examples: [501] }),
});
export const TreatmentPackagesQuery = z.strictObject({
  examId: z.coerce
    .number()
    .int()
    .positive()
    .describe("A prescription exam of the clinic's exam list")
    .meta({ examples: [201] }),
  /** The patient's state (packages can differ by state); passed to the service when given. */
  state: z.enum(US_STATE_CODES).optional().describe("The patient's state (packages can differ by state)"),
});
/** What the service described; orderSetId or examPosId is always there (the journey's scenario takes either). */
export const TreatmentPackages = z.object({
  treatmentPackages: z
    .array(
      z.object({
        orderSetId: z.string().nullable().describe('Pass it as scenario.orderSetId; null when the service gave none'),
        examPosId: z.number().int().nullable().describe('Legacy id, scenario.examPosId; null when none'),
        title: z.string().optional().describe("The package's title"),
        drugName: z.string().optional().describe('The drug'),
        strength: z.string().optional().describe('e.g. 2.5 mg/mL'),
        size: z.string().optional().describe('e.g. 2 mL vial'),
        durationDays: z.number().int().optional().describe('Days of treatment'),
        priceCents: z.number().int().nullable().describe('Price in cents; null when not given'),
      }),
    )
    .describe("The pharmacy's packages for the exam"),
});

/** Text the service reads trimmed: at least one character that is not white space. */
const searchText = (max: number) => z.string().min(1).max(max).regex(/\S/, 'not only white space');

const searchFields = {
  search: searchText(100).describe('form A: a fragment of the name'),
  ncpdpid: searchText(20).describe('form A: one pharmacy by NCPDP id'),
  zipCode: z
    .string()
    .regex(/^\d{5}$/, 'five digits')
    .describe('either form: five-digit ZIP code'),
  city: searchText(100).describe('form B: city'),
  state: z
    .string()
    .regex(/^[A-Z]{2}$/, 'a capital two-letter abbreviation')
    .describe('form B: two-letter state'),
  pharmacyName: searchText(100).describe('form B: the name or part of it'),
};

/** Form A (search, zipCode, ncpdpid) or form B (city, state, zipCode, pharmacyName): any of city/state/name is B. */
export const PharmacySearchQuery = z
  .strictObject({
    search: searchFields.search.optional(),
    ncpdpid: searchFields.ncpdpid.optional(),
    zipCode: searchFields.zipCode.optional(),
    city: searchFields.city.optional(),
    state: searchFields.state.optional(),
    pharmacyName: searchFields.pharmacyName.optional(),
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

/**
 * The same rules as the two forms JSON Schema can say (the document's query of the search, `oneOf`): form A, at least
 * one of its three fields; form B, at least one of city, state, pharmacyName (zipCode alone is form A).
 */
export const PharmacySearchForms = z
  .union([
    z
      .strictObject({
        search: searchFields.search.optional(),
        zipCode: searchFields.zipCode.optional(),
        ncpdpid: searchFields.ncpdpid.optional(),
      })
      .meta({ title: 'Form A', minProperties: 1 }),
    z
      .strictObject({
        city: searchFields.city.optional(),
        state: searchFields.state.optional(),
        zipCode: searchFields.zipCode.optional(),
        pharmacyName: searchFields.pharmacyName.optional(),
      })
      .meta({
        title: 'Form B',
        anyOf: [{ required: ['city'] }, { required: ['state'] }, { required: ['pharmacyName'] }],
      }),
  ])
  .describe(
    'Form A: search, zipCode, ncpdpid (at least one). Form B: city, state, pharmacyName (at least one) and zipCode',
  );

/** Ready to use as scenario.pharmacy of a journey request. */
export const CustomPharmacies = z.object({
  pharmacies: z
    .array(
      z.object({
        ncpdpid: z.string().describe('NCPDP id: scenario.pharmacy.ncpdpid'),
        name: z.string().describe("The pharmacy's name"),
        /** The address fields are absent when the service gave none. */
        addressLine1: z.string().optional().describe('Street address; absent when the service gave none'),
        addressLine2: z.string().optional().describe('Second address line'),
        city: z.string().optional().describe('City'),
        state: z.string().optional().describe('Two-letter state'),
        zipCode: z.string().optional().describe('ZIP code'),
        phone: z.string().optional().describe('Phone number'),
        type: z.string().optional().describe('e.g. Retail'),
      }),
    )
    .describe('Matching pharmacies'),
});

// ---- operations and admin ----------------------------------------------------------------------------------------

export const DeadLetterSummary = z.object({
  id: z.string().describe('The dead letter'),
  journeyId: z.string().describe('The journey whose webhook URL received it'),
  reason: z.string().describe('Why no journey took it, e.g. unparseable, journey_finished'),
  detail: z.string().describe('The reason in words'),
  issues: z.array(z.string()).optional().describe('What could not be read'),
  event: z.number().int().optional().describe('The event number, when readable'),
  patientExamId: z.number().int().optional().describe('The patient exam, when readable'),
  deliveryId: z.string().optional().describe('The delivery, when the webhook gave it one'),
  receivedAt: z.string().describe('When the webhook received it (ISO 8601)'),
  deadLetteredAt: z.string().describe('When it became a dead letter (ISO 8601)'),
  replays: z.number().int().describe('Replays tried so far'),
  lastReplayAt: z.string().optional().describe('The last replay (ISO 8601)'),
  bodyBytes: z.number().int().optional().describe('Size of the body as received'),
});
export const DeadLetterDetail = DeadLetterSummary.extend({
  rawBody: z.string().describe('The body as received'),
});
export const DeadLetterList = z.object({
  deadLetters: z.array(DeadLetterSummary).describe('Oldest first'),
  next: z.string().nullable().describe('Pass it as `after` for the next page; null on the last'),
});
export const DEAD_LETTER_REASONS = [
  'unparseable',
  'oversized',
  'journey_not_found',
  'journey_finished',
  'journey_flooded',
  'corrupt_inbox_entry',
  'corrupt_spool_entry',
] as const satisfies readonly DeadLetterReason[];
// Every reason the inbox can keep a letter for is one a list can filter on.
const _everyReason: Exclude<DeadLetterReason, (typeof DEAD_LETTER_REASONS)[number]> extends never ? true : never = true;
export const DeadLetterListQuery = z.strictObject({
  limit: z.coerce.number().int().min(1).max(500).default(100).describe('letters per page'),
  after: z.string().max(100).optional().describe("the previous page's `next`"),
  reason: z.enum(DEAD_LETTER_REASONS).optional().describe('only letters kept for this reason'),
  since: z.iso
    .datetime({ offset: true, error: 'an ISO 8601 date-time, e.g. 2026-11-23T10:00:00Z' })
    .optional()
    .describe('only callbacks received at or after this time'),
});
export const DeadLetterParams = z.object({ id: z.string().min(1).max(100).describe('A dead letter') });
export const ReplayResponse = z.object({
  id: z.string().describe('The dead letter'),
  /**
   * signalled: the journey took it now; queued: Temporal did not answer, the inbox's forwarder will send it;
   * already_recorded: the journey has finished and had taken this very delivery before it did.
   */
  outcome: z
    .enum(['signalled', 'queued', 'already_recorded'])
    .describe(
      "signalled: the journey took it now; queued: the inbox's forwarder will send it; already_recorded: the " +
        'finished journey had taken this very delivery',
    ),
});

/** POST /v1/patients/erasure: the patient, as the clinic invited them (the e-mail names them across journeys). */
export const PatientErasureBody = z
  .strictObject({
    email: z.email().max(254).describe("The patient's e-mail, as the clinic's journeys invited them"),
  })
  .meta({ id: 'PatientErasureBody', examples: [{ email: 'erase.me@example.com' }] });

/** POST /admin/patients/erasure: any clinic's patient. */
export const AdminPatientErasureBody = z
  .strictObject({
    clinicId: z
      .string()
      .regex(/^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/, 'a clinic id')
      .describe('The clinic whose patient is erased'),
    email: z.email().max(254).describe("The patient's e-mail, as the clinic's journeys invited them"),
  })
  .meta({ id: 'AdminPatientErasureBody', examples: [{ clinicId: 'demo-clinic', email: 'erase.me@example.com' }] });

export const ErasureParams = z.object({
  erasureId: z
    .string()
    .regex(/^er_[0-9a-f-]{36}$/, 'an erasure id (er_ and a UUID)')
    .describe('The erasure, as its request answered it'),
});

export const PatientErasureView = z
  .object({
    erasureId: z.string().describe('The erasure'),
    status: z
      .enum(['pending', 'done'])
      .describe(
        "pending: its journeys are being ended, its documents deleted; done: the patient's data key is destroyed",
      ),
    requestedAt: z.string().describe('When it was asked for'),
    completedAt: z
      .string()
      .nullable()
      .describe("When it was done (the patient's data key destroyed); null while pending"),
    unreadableEverywhereAt: z
      .string()
      .nullable()
      .describe(
        'When no process can read the patient data any more: completedAt, since an erasure is done only once every process has checked the keys it holds against the destroyed ones; null while pending',
      ),
    journeys: z
      .array(z.string())
      .describe('The journeys it ended and made unreadable (ids); empty while pending, and for a patient without one'),
    links: z.object({ self: z.string().describe('GET: this erasure') }),
  })
  .meta({ id: 'PatientErasure' });
