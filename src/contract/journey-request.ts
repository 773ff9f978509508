// The journey request: what a clinic asks for when it starts a patient journey. Validated at the edge (API); the
// workflow imports the types only, so zod never enters the workflow bundle. Every object refuses keys it does not
// know (a misspelt optional field is an error, not silently dropped), and every rule of the exam service's invite
// that can be known before calling it is checked here, so a start the service would refuse is a 400 naming the
// field rather than a journey that fails later.
import { z } from 'zod';
import { TELE_STATE_CODES, TEST_MODE_STATE, US_STATE_CODES } from '../exam-service/schemas';
import { ruleParams } from './request-rules';

const MS = { minute: 60_000, hour: 3_600_000, day: 86_400_000 } as const;

const id = z
  .string()
  .min(1)
  .max(64)
  .regex(/^[A-Za-z0-9][A-Za-z0-9_-]*$/, 'letters, digits, "_" and "-" only');

/** A US state (two uppercase letters, DC for Washington D.C.); TE, the service's test mode, where the service takes it. */
const usState = z.enum(US_STATE_CODES, 'a two-letter uppercase US state code, or DC');
const teleState = z.enum(TELE_STATE_CODES, 'a two-letter uppercase US state code, DC, or TE (test mode)');

/** A calendar date (YYYY-MM-DD) that exists: JSON Schema's `date` format (RFC 3339 full-date). */
const calendarDate = z
  .string()
  .regex(/^\d{4}-\d{2}-\d{2}$/, 'YYYY-MM-DD')
  .refine((d) => {
    const t = Date.parse(`${d}T00:00:00Z`);
    return Number.isFinite(t) && new Date(t).toISOString().slice(0, 10) === d;
  }, 'not a calendar date')
  .meta({ format: 'date' });

const isJsonText = (text: string) => {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
};

/** The service echoes it in every callback and takes only stringified JSON. */
export const stringifiedJson = z
  .string()
  .max(4000)
  .refine(isJsonText, {
    message: 'must be stringified JSON (e.g. JSON.stringify of an object); the exam service takes nothing else',
    params: ruleParams('additional-data-json'),
  })
  .meta({ contentMediaType: 'application/json', contentSchema: {} });

export const Address = z.strictObject({
  line1: z.string().min(1).max(200).describe('Street and number'),
  line2: z.string().max(200).optional().describe('Apartment, suite or unit'),
  city: z.string().min(1).max(100).describe('City'),
  /** TE (test mode) only together with the patient's teleState TE. */
  state: teleState.describe("Two-letter state; TE (test mode) only together with the patient's teleState TE"),
  zipCode: z
    .string()
    .regex(/^\d{5}(-\d{4})?$/, 'five-digit ZIP code')
    .describe('Five-digit ZIP code, optionally ZIP+4'),
});
export type Address = z.infer<typeof Address>;

export const Patient = z.strictObject({
  firstName: z.string().min(1).max(100).describe('In test mode `Test`'),
  lastName: z.string().min(1).max(100).describe('In test mode the outcome keyword, e.g. `Approve`'),
  email: z.email().max(254).describe('Where the service sends the invite; it also identifies the patient there'),
  dob: calendarDate.describe('Date of birth, YYYY-MM-DD'),
  phoneNumber: z
    .string()
    .regex(/^(\+1)?\d{10}$/, '+1 and 10 digits, or 10 digits')
    .describe('Ten digits, optionally after +1; the invite is also sent here as a text'),
  /** Two-letter state the patient is in for the consultation; DC for Washington D.C.; TE for test mode. */
  teleState: teleState.describe(
    'Two-letter state the patient is in for the consultation (it chooses the provider); DC; TE for test mode',
  ),
  gender: z
    .union([z.literal(1), z.literal(2), z.literal(3)])
    .optional()
    .describe('1 male, 2 female, 3 prefers not to say'),
  dmvLicenseNumber: z.string().max(50).optional().describe("The patient's driving licence number"),
});
export type Patient = z.infer<typeof Patient>;

export const CustomPharmacy = z.strictObject({
  ncpdpid: z.string().min(1).max(20).describe("The pharmacy's NCPDP id, from GET /v1/catalog/pharmacies/search"),
  name: z.string().min(1).max(200).optional().describe("The pharmacy's name"),
  addressLine1: z.string().max(200).optional().describe('Street address'),
  addressLine2: z.string().max(200).optional().describe('Second address line'),
  city: z.string().max(100).optional().describe('City'),
  state: usState.optional().describe('Two-letter state'),
  zipCode: z.string().max(10).optional().describe('ZIP code'),
  phone: z.string().max(20).optional().describe('Phone number'),
  type: z.string().max(50).optional().describe('Pharmacy type as the search gave it, e.g. Retail'),
});
export type CustomPharmacy = z.infer<typeof CustomPharmacy>;

const customPharmacyScenario = {
  pharmacy: CustomPharmacy.describe('The retail pharmacy the prescription goes to'),
  /** 1: the pharmacy is preselected here; 2: the patient picks it in the meeting. */
  patientChoice: z
    .union([z.literal(1), z.literal(2)])
    .optional()
    .describe('1: the pharmacy is preselected here; 2: the patient picks it in the meeting'),
  /** Who the pharmacy bills: the clinic (with its billing identifier) or the patient. */
  billing: z
    .discriminatedUnion('billedTo', [
      z.strictObject({
        billedTo: z.literal('clinic').describe('The pharmacy bills the clinic'),
        clinicBillingId: z.string().min(1).max(100).describe("The clinic's identifier at the pharmacy"),
      }),
      z.strictObject({ billedTo: z.literal('patient').describe('The pharmacy bills the patient') }),
    ])
    .optional()
    .describe('Who the pharmacy bills'),
  deliveryMethod: z.enum(['pickup', 'ship']).optional().describe('Picked up at the pharmacy or shipped'),
  /** Skip the patient's pharmacy confirmation screen; needs every pharmacy field. */
  skipConfirmation: z
    .boolean()
    .optional()
    .describe("Skip the patient's pharmacy confirmation screen; needs every pharmacy field"),
};

const PHARMACY_FIELDS_TO_SKIP_CONFIRMATION = ['name', 'addressLine1', 'city', 'state', 'zipCode', 'phone'] as const;

/** The rule of skipConfirmation (below, in superRefine) as JSON Schema says it, for the OpenAPI document. */
const skipConfirmationNeedsPharmacy = {
  if: { properties: { skipConfirmation: { const: true } }, required: ['skipConfirmation'] },
  then: {
    properties: {
      pharmacy: {
        required: [...PHARMACY_FIELDS_TO_SKIP_CONFIRMATION],
        properties: Object.fromEntries(PHARMACY_FIELDS_TO_SKIP_CONFIRMATION.map((f) => [f, { minLength: 1 }])),
      },
    },
  },
};

export const Scenario = z.discriminatedUnion('type', [
  z.strictObject({ type: z.literal('gfe').describe('Good faith exam: event 1 only') }),
  z.strictObject({
    type: z.literal('partner_pharmacy').describe('A package from a partner pharmacy, shipped: events 1, 2 and 3'),
    pharmacyId: z.number().int().positive().describe('From GET /v1/catalog/partner-pharmacies'),
    orderSetId: z
      .string()
      .min(1)
      .max(64)
      .optional()
      .describe('The treatment package; the provider chooses when absent'),
    /** Legacy alias of orderSetId, still accepted by the service. */
    examPosId: z.number().int().positive().optional().describe('Legacy alias of orderSetId'),
    providerPosSelection: z
      .union([z.literal(1), z.literal(2), z.literal(3)])
      .optional()
      .describe('What the provider chooses: 1 neither pharmacy nor package, 2 the package, 3 both'),
  }),
  z
    .strictObject({
      type: z.literal('urgent_care').describe('Urgent care, the prescription sent to a retail pharmacy: events 1, 2'),
      ...customPharmacyScenario,
    })
    .meta(skipConfirmationNeedsPharmacy),
  z
    .strictObject({
      type: z.literal('custom_pharmacy').describe('A pharmacy the patient chooses: events 1, 2'),
      ...customPharmacyScenario,
    })
    .meta(skipConfirmationNeedsPharmacy),
]);
export type Scenario = z.infer<typeof Scenario>;
export type ScenarioType = Scenario['type'];

export const PrefilledAnswer = z.strictObject({
  no: z.number().int().positive().describe("The question's position number in the exam's questions"),
  /** Filled in from the service's own question list when absent. */
  question: z
    .string()
    .min(1)
    .max(2000)
    .optional()
    .describe("The question's text; filled in from the service's question list when absent"),
  answer: z
    .union([z.string().max(5000), z.array(z.string().max(5000)).max(50)])
    .describe('The answer text, or the chosen responses of a multiple-choice question'),
});
export type PrefilledAnswer = z.infer<typeof PrefilledAnswer>;

/** A claim check: the bytes live in the attachment store, the workflow history holds only this reference. */
export const AttachmentRef = z.object({
  ref: z
    .string()
    .regex(/^att_[A-Za-z0-9_-]{8,64}$/, 'an attachment reference from the attachment store')
    .describe('The reference POST /v1/attachments answered'),
  kind: z.string().min(1).max(100).describe('ID, Lab or another attachment name the exam asks for'),
  fileName: z.string().min(1).max(200).describe('The file name as uploaded'),
  contentType: z.string().min(1).max(100).describe('MIME type, e.g. image/jpeg'),
  size: z.number().int().nonnegative().describe('Bytes'),
});
export type AttachmentRef = z.infer<typeof AttachmentRef>;

export const Duration = z.number().int().positive().describe('milliseconds');

export const JourneyTimings = z.strictObject({
  /** Resend the invite at these offsets from the invite while no consultation happened. */
  remindersMs: z.array(Duration).max(10).describe('Resend the invite at these offsets (ms) from the invite'),
  /** Cancel the invite and expire the exam when no consultation happened within this. */
  consultationDeadlineMs: Duration,
  /** After Missed or NA: re-invite this many times (0: never) after the cool-down. */
  reinviteMaxAttempts: z.number().int().min(0).max(5).describe('Re-invites after Missed or NA (0: never)'),
  reinviteCoolDownMs: Duration,
  /** Deferred to Medical Director: the final verdict expected within this; then the clinic is told, a person acts. */
  finalVerdictDeadlineMs: Duration.optional(),
  /** Event 2 expected this long after approval; then overdue, waiting on to the hard limit. */
  prescriptionDeadlineMs: Duration,
  prescriptionHardLimitMs: Duration,
  /** Drugs one per event 2 (a callback layout): after the last, wait this long for more before the exam is final. */
  moreDrugsGraceMs: Duration.optional(),
  /** Event 3 expected this long after event 2 (partner pharmacy); then overdue, waiting on to the hard limit. */
  trackingDeadlineMs: Duration,
  trackingHardLimitMs: Duration,
  /** After the journey ends, its uploaded documents are kept this long, then deleted (retention). */
  attachmentGraceMs: Duration.optional(),
});
export type JourneyTimings = z.infer<typeof JourneyTimings>;

export const DEFAULT_TIMINGS: JourneyTimings = {
  remindersMs: [24 * MS.hour, 72 * MS.hour],
  consultationDeadlineMs: 7 * MS.day,
  reinviteMaxAttempts: 0,
  reinviteCoolDownMs: 30 * MS.minute,
  finalVerdictDeadlineMs: 3 * MS.day,
  prescriptionDeadlineMs: 3 * MS.day,
  prescriptionHardLimitMs: 14 * MS.day,
  moreDrugsGraceMs: 15 * MS.minute,
  trackingDeadlineMs: 10 * MS.day,
  trackingHardLimitMs: 30 * MS.day,
  attachmentGraceMs: 7 * MS.day,
};

export const JourneyRequest = z
  .object({
    clinicId: id,
    journeyId: id,
    patient: Patient.describe('Who is invited'),
    homeAddress: Address.optional().describe("The patient's home address"),
    shippingAddress: Address.optional().describe('Where a prescription is shipped'),
    exams: z
      .array(z.number().int().positive())
      .min(1)
      .max(20)
      .meta({ uniqueItems: true })
      .describe("Exam ids from the clinic's exam list; GFEs stack, at most one prescription exam"),
    scenario: Scenario.describe('How a prescription is fulfilled, or `gfe`'),
    answers: z
      .array(
        z.strictObject({
          examId: z.number().int().positive().describe("One of the journey's exams"),
          answers: z.array(PrefilledAnswer).min(1).max(200).describe('Screening answers for that exam'),
        }),
      )
      .max(20)
      .optional()
      .describe('Pre-filled screening answers, submitted once the invite exists'),
    attachments: z
      .array(
        z.strictObject({
          examId: z.number().int().positive().describe("One of the journey's exams"),
          attachment: AttachmentRef.strict().describe('As POST /v1/attachments answered it'),
        }),
      )
      .max(50)
      .optional()
      .describe('Attachments uploaded to the patient exams once the invite exists'),
    redirects: z
      .strictObject({
        approve: z.url().optional().describe('After an Approved verdict'),
        reject: z.url().optional().describe('After Rejected'),
        na: z.url().optional().describe('After NA (no provider could complete the call)'),
        missed: z.url().optional().describe('After Missed (no provider within the wait)'),
      })
      .optional()
      .describe('Where the patient is sent after the consultation'),
    /** The clinic's own data, echoed back by the service in every callback. */
    additionalData: stringifiedJson
      .optional()
      .describe('Stringified JSON of the clinic, echoed back by the service in every callback'),
    /** Where the journey posts its state changes (Standard Webhooks signed). */
    notificationUrl: z.url().optional().describe('Where the journey posts its state changes, signed'),
    timings: JourneyTimings.partial().optional().describe("Overrides of the deployment's timings"),
  })
  .superRefine((req, ctx) => {
    if (new Set(req.exams).size !== req.exams.length) {
      ctx.addIssue({ code: 'custom', path: ['exams'], message: 'an exam may appear once per journey' });
    }
    for (const [i, a] of (req.answers ?? []).entries()) {
      if (!req.exams.includes(a.examId)) {
        ctx.addIssue({
          code: 'custom',
          path: ['answers', i, 'examId'],
          message: "not one of this journey's exams",
          params: ruleParams('answers-exam-in-journey'),
        });
      }
    }
    for (const [i, a] of (req.attachments ?? []).entries()) {
      if (!req.exams.includes(a.examId)) {
        ctx.addIssue({
          code: 'custom',
          path: ['attachments', i, 'examId'],
          message: "not one of this journey's exams",
          params: ruleParams('attachments-exam-in-journey'),
        });
      }
    }
    // The service's test mode: a home state TE only with the patient's teleState TE.
    for (const key of ['homeAddress', 'shippingAddress'] as const) {
      if (req[key]?.state === TEST_MODE_STATE && req.patient.teleState !== TEST_MODE_STATE) {
        ctx.addIssue({
          code: 'custom',
          path: [key, 'state'],
          message: 'TE (test mode) only together with patient.teleState TE',
        });
      }
    }
    if (Date.parse(`${req.patient.dob}T00:00:00Z`) > Date.now()) {
      ctx.addIssue({
        code: 'custom',
        path: ['patient', 'dob'],
        message: 'in the future',
        params: ruleParams('dob-not-in-future'),
      });
    }
    const s = req.scenario;
    if ((s.type === 'urgent_care' || s.type === 'custom_pharmacy') && s.skipConfirmation) {
      const p = s.pharmacy;
      for (const f of PHARMACY_FIELDS_TO_SKIP_CONFIRMATION) {
        if (!p[f]) {
          ctx.addIssue({
            code: 'custom',
            path: ['scenario', 'pharmacy', f],
            message: 'required when skipConfirmation is true',
          });
        }
      }
    }
  });
export type JourneyRequest = z.infer<typeof JourneyRequest>;

/**
 * The rules a journey started now runs by, named in its start (JourneyInput's `rules`): the newest rules of
 * src/workflows/journey-rules.ts, by the name of their patch marker. A worker that knows them runs them and records no
 * marker for them; one that does not (an earlier release, during a deploy) records the markers of its own rules.
 */
export const JOURNEY_RULES = 'journey-rules-2027-02';

/** What the workflow receives: the request with every timing resolved (deployment defaults, then overrides). */
export type JourneyInput = Omit<JourneyRequest, 'timings'> & {
  timings: JourneyTimings;
  /**
   * The rules its starter named (JOURNEY_RULES). Absent (a journey started before starters named them): the patch
   * markers of its history decide, recorded at its first workflow task.
   */
  rules?: string;
  /**
   * The deployment's (never the clinic's) number of callbacks after which the journey asks for a person, and again each
   * time as many more came (JOURNEY_CALLBACK_FLOOD_LIMIT). Absent: 100, as for journeys started before it was set.
   */
  callbackFloodLimit?: number;
};

export function resolveTimings(defaults: JourneyTimings, overrides?: Partial<JourneyTimings>): JourneyTimings {
  return { ...defaults, ...Object.fromEntries(Object.entries(overrides ?? {}).filter(([, v]) => v !== undefined)) };
}
