/**
 * The exam service's contract in code (spec: exam-service-interface.md, version 1.0.0). The client, the sandbox, the
 * webhook receiver and the tests all validate against these schemas.
 *
 * Conventions:
 * - Responses, resources and callbacks are loose objects: unknown fields are kept, a missing required field fails
 *   with an issue whose path names it.
 * - Responses require only what the engine acts on and read it in every layout the live service is known to use
 *   (docs/live-service.md): ids as integers or digit strings, lists bare or inside an object, fields inside `data`.
 *   Everything else is optional, and checked only where the engine reads it.
 * - Requests are plain objects: unknown fields are dropped before sending, so only contract fields go on the wire.
 * - Custom messages never echo the input value (values may be PHI or the api key).
 */
import { z } from 'zod';

// ---------------------------------------------------------------------------------------------------------------
// Rules and shared primitives

// prettier-ignore
export const US_STATE_CODES = [
  'AL', 'AK', 'AZ', 'AR', 'CA', 'CO', 'CT', 'DE', 'FL', 'GA', 'HI', 'ID', 'IL', 'IN', 'IA', 'KS', 'KY', 'LA', 'ME',
  'MD', 'MA', 'MI', 'MN', 'MS', 'MO', 'MT', 'NE', 'NV', 'NH', 'NJ', 'NM', 'NY', 'NC', 'ND', 'OH', 'OK', 'OR', 'PA',
  'RI', 'SC', 'SD', 'TN', 'TX', 'UT', 'VT', 'VA', 'WA', 'WV', 'WI', 'WY', 'DC',
] as const;
export type UsStateCode = (typeof US_STATE_CODES)[number];

/** `state` and `tele_state` both set to TE put the invite in test mode. */
export const TEST_MODE_STATE = 'TE';
export const TELE_STATE_CODES = [...US_STATE_CODES, TEST_MODE_STATE] as const;
export type TeleStateCode = (typeof TELE_STATE_CODES)[number];

export const EXAM_STATUSES = ['Approved', 'Rejected', 'Deferred to Medical Director', 'NA', 'Missed'] as const;
export type ExamStatus = (typeof EXAM_STATUSES)[number];

/** Test mode: first name `Test`, the keyword in the last name (spec "What the service does", item 6). */
export const TEST_OUTCOME_KEYWORDS = [
  'Approve',
  'Reject',
  'N/A',
  'Prescription Approve',
  'Prescription Reject',
] as const;

/** Fields that must all be present for skip_pharmacy_confirmation 2. */
export const SKIP_CONFIRMATION_PHARMACY_FIELDS = [
  'ncpdpid',
  'pharmacy_name',
  'pharmacy_address_line_1',
  'pharmacy_city',
  'pharmacy_state',
  'pharmacy_zip_code',
  'pharmacy_phone',
] as const;

const ApiKey = z.string().min(1, 'api_key is required');
const Text = z.string().regex(/\S/, 'must not be blank');
const PositiveId = z.int().positive();
const DigitString = z
  .string()
  .regex(/^\d+$/, 'must be a string of digits')
  .refine((s) => Number.isSafeInteger(Number(s)), 'must be a safe integer');
/** Ids in callbacks arrive as integers or digit strings depending on the event; both are accepted. */
const CallbackId = z.union([z.int().nonnegative(), DigitString]);
/** Noise echoed in many bodies; sometimes a string. Never decisive on success. */
const HttpCode = z.union([z.int(), DigitString]);
const DecimalString = z.string().regex(/^\d+(\.\d+)?$/, 'must be a decimal string such as 49.00');
/** An id as the live service sends it: an integer or a digit string; read as the number. */
const LooseId = z.union([PositiveId, DigitString]).transform(Number).pipe(PositiveId);
/** A count or position as an integer or a digit string; read as the number. */
const LooseInt = z.union([z.int().nonnegative(), DigitString]).transform(Number);
/** An identifier the service may send as a number (an NCPDPID, an order set): read as its digits. */
const LooseCode = z.union([z.string().min(1), z.int().nonnegative()]).transform(String);
/** A price as a decimal string or a number; read as the decimal string (49 becomes "49.00"). */
const LoosePrice = z
  .union([DecimalString, z.number().nonnegative()])
  .transform((v) => (typeof v === 'number' ? v.toFixed(2) : v));
/** Echoed status code: never decisive on success (classifyServiceAnswer reads it), so any value is tolerated. */
const Echo = z.unknown().optional();

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * The envelopes the live service is known to use, reduced to the document's: a bare list is `listKey`, a list in
 * `data` is `listKey`, and the fields of a `data` object count as top-level ones (top-level fields win).
 */
export function unwrapEnvelope(body: unknown, listKey?: string): unknown {
  if (Array.isArray(body)) return listKey === undefined ? body : { [listKey]: body };
  if (!isPlainObject(body)) return body;
  const { data, ...rest } = body;
  if (listKey !== undefined && rest[listKey] === undefined && Array.isArray(data)) return { ...rest, [listKey]: data };
  if (isPlainObject(data)) return { ...(unwrapEnvelope(data, listKey) as object), ...rest };
  return body;
}

function enveloped<T extends z.ZodType>(schema: T, listKey?: string) {
  return z.preprocess((body) => unwrapEnvelope(body, listKey), schema);
}
const IsoDateTime = z.iso.datetime({ offset: true, local: true });
const HttpUrl = z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' });
const Phone = z.string().regex(/^(?:\+1)?\d{10}$/, 'must be +1 followed by 10 digits, or 10 digits');
const JsonString = z.string().refine((s) => {
  try {
    JSON.parse(s);
    return true;
  } catch {
    return false;
  }
}, 'must be stringified JSON');

function daysInMonth(year: number, month: number): number {
  if (month === 2) return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0 ? 29 : 28;
  return [4, 6, 9, 11].includes(month) ? 30 : 31;
}

/** YYYY-MM-DD, an existing calendar day, not after today (UTC: never behind a US patient's local date). */
const DateOfBirth = z
  .string()
  .regex(/^\d{4}-\d{2}-\d{2}$/, 'must be YYYY-MM-DD')
  .refine((s) => {
    const [y, m, d] = s.split('-').map(Number) as [number, number, number];
    return m >= 1 && m <= 12 && d >= 1 && d <= daysInMonth(y, m);
  }, 'must be a real calendar date')
  .refine((s) => s <= new Date().toISOString().slice(0, 10), 'must not be in the future');

// ---------------------------------------------------------------------------------------------------------------
// Resources

export const Exam = z.looseObject({
  id: LooseId,
  title: z.string(),
  /** 1 = GFE (no prescription), 2 = prescription exam (partner package, urgent care, own pharmacy). */
  rx_type: z.union([z.literal([1, 2]), z.literal(['1', '2'])]).transform((v): 1 | 2 => (Number(v) === 2 ? 2 : 1)),
  /** Decimal string when a preset price exists; null (or absent) = no special pricing. */
  price: LoosePrice.nullish().transform((v) => v ?? null),
  /** 1 = only the standard ID upload; 2 = attachments must be uploaded. Absent: the standard ID only. */
  attachments_required: LooseInt.nullish().transform((v) => v ?? 1),
  /** Absent or null: no attachment beyond the standard ID. */
  attachments: z
    .array(z.string())
    .nullish()
    .transform((v) => v ?? []),
});
export type Exam = z.infer<typeof Exam>;

export const ExamListResponse = enveloped(
  z.looseObject({
    http_code: Echo,
    exams: z.array(Exam),
    clinic_id: Echo,
  }),
  'exams',
);
export type ExamListResponse = z.infer<typeof ExamListResponse>;

export const PatientExam = z.looseObject({
  patient_exam_id: LooseId,
  exam_id: LooseId,
  /** Not read by every integration and not needed by the engine (the exam list has the title). */
  exam_title: z
    .string()
    .nullish()
    .transform((v) => v ?? ''),
});
export type PatientExam = z.infer<typeof PatientExam>;

export const PartnerPharmacy = z.looseObject({
  pharmacy_id: LooseId,
  name: z.string(),
  type: z.string().nullish(),
});
export type PartnerPharmacy = z.infer<typeof PartnerPharmacy>;

/**
 * A partner pharmacy's package. The engine needs what the invite takes (order_set_id, or the legacy exam_pos_id);
 * the live list describes a package by `title` and a decimal total price instead of the document's drug fields.
 */
export const TreatmentPackage = z
  .looseObject({
    order_set_id: LooseCode.optional(),
    /** Legacy alias of order_set_id; integer, in one description a digit string. */
    exam_pos_id: z.union([z.int().nonnegative(), DigitString]).transform(Number).optional(),
    title: z.string().nullish(),
    drug_name: z.string().nullish(),
    strength: z.string().nullish(),
    size: z.string().nullish(),
    duration_days: LooseInt.nullish(),
    /** Integer cents (unlike the exam's decimal string). */
    price: LooseInt.nullish(),
    /** The live list's total price, a decimal string of dollars. */
    qualiphy_total_price: LoosePrice.nullish(),
  })
  .refine((p) => p.order_set_id !== undefined || p.exam_pos_id !== undefined, {
    path: ['order_set_id'],
    message: 'a treatment package needs order_set_id or exam_pos_id',
  });
export type TreatmentPackage = z.infer<typeof TreatmentPackage>;

/** A package's price in cents, whichever field carried it; null when none did. */
export function packagePriceCents(p: TreatmentPackage): number | null {
  if (typeof p.price === 'number') return p.price;
  if (typeof p.qualiphy_total_price === 'string') return Math.round(Number(p.qualiphy_total_price) * 100);
  return null;
}

/** Custom pharmacy search result, layout A (snake_case, inside `pharmacies`). The invite needs the NCPDPID. */
export const CustomPharmacyA = z.looseObject({
  ncpdpid: LooseCode,
  name: z.string(),
  address_line_1: z.string().nullish(),
  city: z.string().nullish(),
  state: z.string().nullish(),
  zip_code: LooseCode.nullish(),
  phone: z.string().nullish(),
});
export type CustomPharmacyA = z.infer<typeof CustomPharmacyA>;

/** Custom pharmacy search result, layout B (PascalCase, inside `data`). */
export const CustomPharmacyB = z.looseObject({
  NCPDPID: LooseCode,
  Name: z.string(),
  Address: z.string().nullish(),
  /** Empty when not applicable; also accepted null or absent. */
  Address2: z.string().nullish(),
  City: z.string().nullish(),
  State: z.string().nullish(),
  Zip: LooseCode.nullish(),
  Phone: z.string().nullish(),
  Type: z.string().nullish(),
});
export type CustomPharmacyB = z.infer<typeof CustomPharmacyB>;

export const QuestionResponseOption = z.looseObject({
  response: z.string(),
  /** 2 = extra text must accompany the selection; 1 = none. */
  input_field: z.union([z.literal([1, 2]), z.literal(['1', '2'])]).optional(),
  exam_question_response_id: LooseId.optional(),
});
export type QuestionResponseOption = z.infer<typeof QuestionResponseOption>;

export const CatalogQuestion = z.looseObject({
  no: LooseInt,
  question: z.string(),
});
export type CatalogQuestion = z.infer<typeof CatalogQuestion>;

export const PatientQuestion = z
  .looseObject({
    /** The spec names the identifier `id` or `question_id`; either is accepted, at least one is required. */
    id: LooseId.optional(),
    question_id: LooseId.optional(),
    no: LooseInt.optional(),
    question: z.string(),
    /** 1 = text, 2 = single radio, 3 = multi checkbox; 1 when no options exist. */
    response_type: z.union([z.literal([1, 2, 3]), z.literal(['1', '2', '3'])]).optional(),
    input_field: z.union([z.literal([1, 2]), z.literal(['1', '2'])]).optional(),
    responses: z
      .array(QuestionResponseOption)
      .nullish()
      .transform((v) => v ?? []),
  })
  .refine((q) => q.id !== undefined || q.question_id !== undefined, {
    path: ['id'],
    message: 'a question needs id or question_id',
  });
export type PatientQuestion = z.infer<typeof PatientQuestion>;

/** A string, or (event 2, multi-checkbox) an array of strings. */
export const AnswerValue = z.union([z.string(), z.array(z.string())]);
export type AnswerValue = z.infer<typeof AnswerValue>;

export const Answer = z.looseObject({
  no: z.int().nonnegative(),
  question: z.string(),
  answer: AnswerValue,
});
export type Answer = z.infer<typeof Answer>;

/** An answer already on file (pre-fill or earlier submission), tied to its question by question_id. */
export const PrefilledAnswer = z.looseObject({
  question_id: LooseId,
  answer: AnswerValue.optional(),
  /** Live layout: the chosen response and its id instead of `answer`. */
  response: z.string().nullish(),
  exam_question_response_id: LooseId.nullish(),
});
export type PrefilledAnswer = z.infer<typeof PrefilledAnswer>;

/** Answer as it appears inside callbacks: `no` may give way to id/position, extra keys of event 2 allowed. */
export const CallbackAnswer = z.looseObject({
  no: z.int().nonnegative().optional(),
  question: z.string(),
  answer: AnswerValue,
  id: CallbackId.optional(),
  position: z.int().optional(),
  response_type: z.int().optional(),
  responses: z.array(z.unknown()).optional(),
  answers: z.array(z.string()).optional(),
});
export type CallbackAnswer = z.infer<typeof CallbackAnswer>;

export const PrescriptionContact = z.looseObject({
  full_name: z.string().nullish(),
  email: z.string().nullish(),
  phone_number: z.string().nullish(),
  role: z.string().nullish(),
});
export type PrescriptionContact = z.infer<typeof PrescriptionContact>;

export const PrescriptionTracking = z.looseObject({
  rx_number: z.string().nullish(),
  tracking_number: z.string().nullish(),
  ship_carrier: z.string().nullish(),
  delivery_service: z.string().nullish(),
  pharmacy_location: z.string().nullish(),
});
export type PrescriptionTracking = z.infer<typeof PrescriptionTracking>;

/** One drug of an event 2. The id and drug are required; descriptive fields are checked when present. */
export const PrescriptionItem = z.looseObject({
  prescription_id: CallbackId,
  drug_name: z.string(),
  dosage_form_type: z.string().optional(),
  strength: z.string().optional(),
  size: z.string().optional(),
  quantity: z.string().optional(),
  quantity_units: z.string().optional(),
  directions: z.string().optional(),
  duration_days: z.int().nonnegative().optional(),
  refill_amount: z.int().nonnegative().optional(),
  ndc_number: z.string().optional(),
  gpi_number: z.string().optional(),
  active_ingredient: z.string().optional(),
  inactive_ingredient: z.string().optional(),
  dispense_number: z.string().optional(),
  /** Controlled-substance schedule (e.g. C3), otherwise empty. */
  schedule_code: z.string().nullish(),
  pharmacy_name: z.string().optional(),
  pharmacy_contacts: z.array(PrescriptionContact).optional(),
  prescription_tracking: z.array(PrescriptionTracking).optional(),
  created_at: IsoDateTime.optional(),
});
export type PrescriptionItem = z.infer<typeof PrescriptionItem>;

/** Error body as this engine (and the sandbox) reads it; the spec does not show the real shape. */
export const ErrorBody = z.looseObject({
  http_code: HttpCode,
  error_message: z.string(),
  /** The failing request field, when the service names it. */
  field: z.string().optional(),
});
export type ErrorBody = z.infer<typeof ErrorBody>;

// ---------------------------------------------------------------------------------------------------------------
// Requests

export const ExamListRequest = z.object({ api_key: ApiKey });
export type ExamListRequest = z.infer<typeof ExamListRequest>;

export const ExamInviteRequest = z
  .object({
    api_key: ApiKey,
    exams: z.array(PositiveId).min(1, 'exams must hold at least one exam id'),
    first_name: Text,
    last_name: Text,
    email: z.email(),
    dob: DateOfBirth,
    phone_number: Phone,
    tele_state: z.enum(TELE_STATE_CODES, 'must be a two-letter uppercase US state, DC or TE'),
    webhook_url: HttpUrl.optional(),
    additional_data: JsonString.optional(),
    redirect_approve: HttpUrl.optional(),
    redirect_reject: HttpUrl.optional(),
    redirect_na: HttpUrl.optional(),
    redirect_missed: HttpUrl.optional(),
    /** 1 = Male, 2 = Female, 3 = Prefer not to say; the integer, never the string. */
    gender: z.literal([1, 2, 3]).optional(),
    dmv_license_number: z.string().optional(),
    address_line_1: z.string().optional(),
    address_line_2: z.string().optional(),
    city: z.string().optional(),
    zip_code: z.string().optional(),
    state: z.enum(TELE_STATE_CODES, 'must be a two-letter uppercase US state, DC or TE').optional(),
    shipping_address_line_1: z.string().optional(),
    shipping_address_line_2: z.string().optional(),
    shipping_city: z.string().optional(),
    shipping_state: z.string().optional(),
    shipping_zip_code: z.string().optional(),
    pharmacy_id: PositiveId.optional(),
    order_set_id: z.string().min(1).optional(),
    /** Legacy alias of order_set_id; sent as the integer the spec shows. */
    exam_pos_id: z
      .union([z.int().nonnegative(), DigitString])
      .transform((v) => Number(v))
      .optional(),
    /** 1 = custom (retail) pharmacy, 2 = partner pharmacy. */
    custom_pharmacy: z.literal([1, 2]).optional(),
    ncpdpid: z.string().optional(),
    pharmacy_name: z.string().optional(),
    pharmacy_address_line_1: z.string().optional(),
    pharmacy_address_line_2: z.string().optional(),
    pharmacy_city: z.string().optional(),
    pharmacy_state: z.string().optional(),
    pharmacy_zip_code: z.string().optional(),
    pharmacy_phone: z.string().optional(),
    pharmacy_type: z.string().optional(),
    /** 1 = provider chooses neither, 2 = order set only, 3 = pharmacy and order set. */
    provider_pos_selection: z.literal([1, 2, 3]).optional(),
    /** 1 = preselected in this request, 2 = patient picks in the meeting. */
    custom_pharmacy_patient_choice: z.literal([1, 2]).optional(),
    /** 1 = show the confirmation screen, 2 = skip it (needs every pharmacy field). */
    skip_pharmacy_confirmation: z.literal([1, 2]).optional(),
    /** 1 = clinic billed by the pharmacy (needs custom_pharmacy_clinic_billing), 2 = patient billed. */
    custom_pharmacy_patient_billing: z.literal([1, 2]).optional(),
    custom_pharmacy_clinic_billing: z.string().optional(),
    /** 1 = pick up at the pharmacy, 2 = ship. */
    custom_pharmacy_delivery_method: z.literal([1, 2]).optional(),
  })
  .superRefine((invite, ctx) => {
    const missing = (value: string | undefined) => value === undefined || value.trim() === '';
    if (invite.custom_pharmacy === 1 && missing(invite.ncpdpid)) {
      ctx.addIssue({ code: 'custom', path: ['ncpdpid'], message: 'ncpdpid is required when custom_pharmacy is 1' });
    }
    if (invite.custom_pharmacy_patient_billing === 1 && missing(invite.custom_pharmacy_clinic_billing)) {
      ctx.addIssue({
        code: 'custom',
        path: ['custom_pharmacy_clinic_billing'],
        message: 'custom_pharmacy_clinic_billing is required when custom_pharmacy_patient_billing is 1',
      });
    }
    if (invite.skip_pharmacy_confirmation === 2) {
      for (const field of SKIP_CONFIRMATION_PHARMACY_FIELDS) {
        if (missing(invite[field])) {
          ctx.addIssue({
            code: 'custom',
            path: [field],
            message: `${field} is required when skip_pharmacy_confirmation is 2`,
          });
        }
      }
    }
  });
export type ExamInviteRequest = z.infer<typeof ExamInviteRequest>;

/** The spec leaves the upload open; this is the engine's fixed shape (docs/contract-interfaces.md). */
export const UploadAttachmentRequest = z.object({
  api_key: ApiKey,
  patient_exam_id: PositiveId,
  /** An entry of the exam's attachments, or "ID". */
  kind: Text,
  file_name: Text,
  content_type: z.string().regex(/^[\w.+-]+\/[\w.+-]+$/, 'must be a MIME type such as image/jpeg'),
  content_base64: z.base64().min(1, 'must not be empty'),
});
export type UploadAttachmentRequest = z.infer<typeof UploadAttachmentRequest>;

export const ExamQuestionsPatientRequest = z.object({
  api_key: ApiKey,
  meeting_uuid: Text,
  patient_exam_id: PositiveId,
});
export type ExamQuestionsPatientRequest = z.infer<typeof ExamQuestionsPatientRequest>;

export const ExamQuestionsCatalogRequest = z.object({
  api_key: ApiKey,
  exam_id: PositiveId,
});
export type ExamQuestionsCatalogRequest = z.infer<typeof ExamQuestionsCatalogRequest>;

/** Patient-bound form first: a request carrying meeting_uuid and patient_exam_id is bound to the patient. */
export const ExamQuestionsRequest = z.union([ExamQuestionsPatientRequest, ExamQuestionsCatalogRequest]);
export type ExamQuestionsRequest = z.infer<typeof ExamQuestionsRequest>;

export const SubmitAnswersRequest = z.object({
  api_key: ApiKey,
  patient_exam_id: PositiveId,
  answers: z.array(Answer).min(1, 'answers must hold at least one answer'),
});
export type SubmitAnswersRequest = z.infer<typeof SubmitAnswersRequest>;

/** The live service's instructions also carry the invite's meeting_uuid; the engine sends it whenever it knows it. */
export const InviteResendRequest = z.object({
  api_key: ApiKey,
  patient_exam_id: PositiveId,
  meeting_uuid: Text.optional(),
});
export type InviteResendRequest = z.infer<typeof InviteResendRequest>;

export const InviteCancelRequest = z.object({ api_key: ApiKey, patient_exam_id: PositiveId });
export type InviteCancelRequest = z.infer<typeof InviteCancelRequest>;

export const PartnerPharmacyListRequest = z.object({ api_key: ApiKey });
export type PartnerPharmacyListRequest = z.infer<typeof PartnerPharmacyListRequest>;

/**
 * The document's fields, and the live form beside them (lists of ids and the patient's state): the client sends both,
 * each id in both forms, which the service reads whichever way it reads them.
 */
export const TreatmentPackagesRequest = z
  .object({
    api_key: ApiKey,
    pharmacy_id: PositiveId,
    exam_id: PositiveId,
    pharmacy_ids: z.array(PositiveId).min(1).optional(),
    exam_ids: z.array(PositiveId).min(1).optional(),
    /** The patient's state: packages can differ by state. */
    patient_state: z.enum(US_STATE_CODES, 'must be a two-letter uppercase US state or DC').optional(),
  })
  .superRefine((q, ctx) => {
    if (q.pharmacy_ids && !q.pharmacy_ids.includes(q.pharmacy_id)) {
      ctx.addIssue({ code: 'custom', path: ['pharmacy_ids'], message: 'pharmacy_ids must include pharmacy_id' });
    }
    if (q.exam_ids && !q.exam_ids.includes(q.exam_id)) {
      ctx.addIssue({ code: 'custom', path: ['exam_ids'], message: 'exam_ids must include exam_id' });
    }
  });
export type TreatmentPackagesRequest = z.infer<typeof TreatmentPackagesRequest>;

/** Search form A: name fragment, five-digit zip or direct NCPDPID lookup; at least one of them. Strict so forms never mix. */
export const CustomPharmacySearchRequestA = z
  .strictObject({
    api_key: ApiKey,
    search: z.string().optional(),
    zip_code: z
      .string()
      .regex(/^\d{5}$/, 'must be five digits')
      .optional(),
    ncpdpid: z.string().optional(),
  })
  .refine((q) => [q.search, q.zip_code, q.ncpdpid].some((v) => v !== undefined && v.trim() !== ''), {
    path: ['search'],
    message: 'give at least one of search, zip_code, ncpdpid',
  });
export type CustomPharmacySearchRequestA = z.infer<typeof CustomPharmacySearchRequestA>;

/** Search form B: city, capital state abbreviation, zip, pharmacy name; at least one of them. */
export const CustomPharmacySearchRequestB = z
  .strictObject({
    api_key: ApiKey,
    city: z.string().optional(),
    state: z
      .string()
      .regex(/^[A-Z]{2}$/, 'must be a capital two-letter abbreviation')
      .optional(),
    zip_code: z.string().optional(),
    pharmacy_name: z.string().optional(),
  })
  .refine((q) => [q.city, q.state, q.zip_code, q.pharmacy_name].some((v) => v !== undefined && v.trim() !== ''), {
    path: ['pharmacy_name'],
    message: 'give at least one of city, state, zip_code, pharmacy_name',
  });
export type CustomPharmacySearchRequestB = z.infer<typeof CustomPharmacySearchRequestB>;

export const CustomPharmacySearchRequest = z.union([CustomPharmacySearchRequestA, CustomPharmacySearchRequestB]);
export type CustomPharmacySearchRequest = z.infer<typeof CustomPharmacySearchRequest>;

/** What callers pass to the client: the request without api_key (distributes over the union forms). */
type WithoutApiKey<T> = T extends unknown ? Omit<T, 'api_key'> : never;
export type ExamListInput = WithoutApiKey<z.input<typeof ExamListRequest>>;
export type PartnerPharmacyListInput = WithoutApiKey<z.input<typeof PartnerPharmacyListRequest>>;
export type ExamInviteInput = WithoutApiKey<z.input<typeof ExamInviteRequest>>;
export type UploadAttachmentInput = WithoutApiKey<z.input<typeof UploadAttachmentRequest>>;
export type ExamQuestionsPatientInput = WithoutApiKey<z.input<typeof ExamQuestionsPatientRequest>>;
export type ExamQuestionsCatalogInput = WithoutApiKey<z.input<typeof ExamQuestionsCatalogRequest>>;
export type ExamQuestionsInput = ExamQuestionsPatientInput | ExamQuestionsCatalogInput;
export type SubmitAnswersInput = WithoutApiKey<z.input<typeof SubmitAnswersRequest>>;
export type InviteResendInput = WithoutApiKey<z.input<typeof InviteResendRequest>>;
export type InviteCancelInput = WithoutApiKey<z.input<typeof InviteCancelRequest>>;
export type TreatmentPackagesInput = WithoutApiKey<z.input<typeof TreatmentPackagesRequest>>;
export type CustomPharmacySearchInputA = WithoutApiKey<z.input<typeof CustomPharmacySearchRequestA>>;
export type CustomPharmacySearchInputB = WithoutApiKey<z.input<typeof CustomPharmacySearchRequestB>>;
export type CustomPharmacySearchInput = CustomPharmacySearchInputA | CustomPharmacySearchInputB;

// ---------------------------------------------------------------------------------------------------------------
// Responses (HTTP 200)

export const ExamInviteResponse = enveloped(
  z.looseObject({
    http_code: Echo,
    meeting_url: z.string().min(1),
    meeting_uuid: z.string().min(1),
    /** One per invited exam, all linked to the one meeting. */
    patient_exams: z.array(PatientExam).min(1),
  }),
);
export type ExamInviteResponse = z.infer<typeof ExamInviteResponse>;

/** The document shows no answer: a 200 is the upload done. An id the service gives is kept. */
export const UploadAttachmentResponse = enveloped(
  z.looseObject({
    http_code: Echo,
    patient_exam_id: LooseId.nullish(),
    attachment_id: LooseCode.nullish(),
    kind: z.string().nullish(),
  }),
);
export type UploadAttachmentResponse = z.infer<typeof UploadAttachmentResponse>;

/** The engine needs the questions (to match answers to them); the ids around them it already knows. */
export const ExamQuestionsPatientResponse = z.looseObject({
  http_code: Echo,
  exam_id: LooseId.nullish(),
  meeting_uuid: z.string().nullish(),
  patient_exam_id: LooseId.nullish(),
  questions: z.array(PatientQuestion),
  /** Empty (or absent) when nothing is pre-filled. */
  answers: z
    .array(PrefilledAnswer)
    .nullish()
    .transform((v) => v ?? []),
});
export type ExamQuestionsPatientResponse = z.infer<typeof ExamQuestionsPatientResponse>;

export const ExamQuestionsCatalogResponse = z.looseObject({
  http_code: Echo,
  exam_id: LooseId.nullish(),
  questions: z.array(CatalogQuestion),
});
export type ExamQuestionsCatalogResponse = z.infer<typeof ExamQuestionsCatalogResponse>;

/** Which layout answers which request form is not shown; the patient-bound layout is tried first. */
export const ExamQuestionsResponse = enveloped(
  z.union([ExamQuestionsPatientResponse, ExamQuestionsCatalogResponse]),
  'questions',
);
export type ExamQuestionsResponse = z.infer<typeof ExamQuestionsResponse>;

/** Patient-bound: every question carries its id (the catalog form numbers them instead). */
export function isPatientBoundQuestions(r: ExamQuestionsResponse): r is ExamQuestionsPatientResponse {
  return (
    Array.isArray(r.answers) &&
    r.questions.every(
      (q) => (q as PatientQuestion).id !== undefined || (q as PatientQuestion).question_id !== undefined,
    )
  );
}

/** The document shows no answer: a 200 is the answers stored. Counts the service gives are kept. */
export const SubmitAnswersResponse = enveloped(
  z.looseObject({
    http_code: Echo,
    patient_exam_id: LooseId.nullish(),
    answered: LooseInt.nullish(),
    questionnaire_skipped: z.boolean().nullish(),
  }),
);
export type SubmitAnswersResponse = z.infer<typeof SubmitAnswersResponse>;

/** The document shows no answer; the live service answers with its http_code alone. A 200 is the invite resent. */
export const InviteResendResponse = enveloped(
  z.looseObject({
    http_code: Echo,
    patient_exam_id: LooseId.nullish(),
    deliveries: LooseInt.nullish(),
  }),
);
export type InviteResendResponse = z.infer<typeof InviteResendResponse>;

/**
 * A 200 is the exam cancelled. What the engine checks is that a status, when the service gives one, says so; the
 * time is kept when it reads as a date (the document's ISO form or another one Date understands).
 */
export const InviteCancelResponse = enveloped(
  z.looseObject({
    http_code: Echo,
    patient_exam_id: LooseId.nullish(),
    status: z
      .string()
      .regex(/^\s*cancel{1,2}ed\s*$/i, 'a cancel that succeeded reports status cancelled')
      .nullish(),
    cancelled_at: z
      .string()
      .nullish()
      .transform((v) => {
        if (typeof v !== 'string' || v.trim() === '') return undefined;
        if (IsoDateTime.safeParse(v).success) return v;
        const ms = Date.parse(v);
        return Number.isNaN(ms) ? undefined : new Date(ms).toISOString();
      }),
  }),
);
export type InviteCancelResponse = z.infer<typeof InviteCancelResponse>;

export const PartnerPharmacyListResponse = enveloped(
  z.looseObject({
    http_code: Echo,
    pharmacies: z.array(PartnerPharmacy),
  }),
  'pharmacies',
);
export type PartnerPharmacyListResponse = z.infer<typeof PartnerPharmacyListResponse>;

export const TreatmentPackagesResponse = enveloped(
  z.looseObject({
    http_code: Echo,
    treatment_packages: z.array(TreatmentPackage),
  }),
  'treatment_packages',
);
export type TreatmentPackagesResponse = z.infer<typeof TreatmentPackagesResponse>;

export const CustomPharmacySearchResponseA = z.looseObject({
  http_code: Echo,
  pharmacies: z.array(CustomPharmacyA),
});
export type CustomPharmacySearchResponseA = z.infer<typeof CustomPharmacySearchResponseA>;

export const CustomPharmacySearchResponseB = z.looseObject({
  http_code: Echo,
  data: z.array(CustomPharmacyB),
});
export type CustomPharmacySearchResponseB = z.infer<typeof CustomPharmacySearchResponseB>;

/** A bare list is layout B when its entries are PascalCase, layout A otherwise. */
function searchEnvelope(body: unknown): unknown {
  if (!Array.isArray(body)) return body;
  const first: unknown = body[0];
  return isPlainObject(first) && 'NCPDPID' in first ? { data: body } : { pharmacies: body };
}

/** Either layout may answer either request form. */
export const CustomPharmacySearchResponse = z.preprocess(
  searchEnvelope,
  z.union([CustomPharmacySearchResponseA, CustomPharmacySearchResponseB]),
);
export type CustomPharmacySearchResponse = z.infer<typeof CustomPharmacySearchResponse>;

/** The invite's custom pharmacy fields, whichever search layout supplied the pharmacy (absent ones left out). */
export interface CustomPharmacyInviteFields {
  ncpdpid: string;
  pharmacy_name: string;
  pharmacy_address_line_1?: string;
  pharmacy_address_line_2?: string;
  pharmacy_city?: string;
  pharmacy_state?: string;
  pharmacy_zip_code?: string;
  pharmacy_phone?: string;
  pharmacy_type?: string;
}

function present<K extends string>(key: K, value: unknown): Partial<Record<K, string>> {
  return typeof value === 'string' && value !== '' ? ({ [key]: value } as Record<K, string>) : {};
}

export function customPharmacyInviteFields(p: CustomPharmacyA | CustomPharmacyB): CustomPharmacyInviteFields {
  if ('NCPDPID' in p && typeof p.NCPDPID === 'string') {
    const b = p as CustomPharmacyB;
    return {
      ncpdpid: b.NCPDPID,
      pharmacy_name: b.Name,
      ...present('pharmacy_address_line_1', b.Address),
      ...present('pharmacy_address_line_2', b.Address2),
      ...present('pharmacy_city', b.City),
      ...present('pharmacy_state', b.State),
      ...present('pharmacy_zip_code', b.Zip),
      ...present('pharmacy_phone', b.Phone),
      ...present('pharmacy_type', b.Type),
    };
  }
  const a = p as CustomPharmacyA;
  return {
    ncpdpid: a.ncpdpid,
    pharmacy_name: a.name,
    ...present('pharmacy_address_line_1', a.address_line_1),
    ...present('pharmacy_address_line_2', a.address_line_2),
    ...present('pharmacy_city', a.city),
    ...present('pharmacy_state', a.state),
    ...present('pharmacy_zip_code', a.zip_code),
    ...present('pharmacy_phone', a.phone),
  };
}

export function isSearchLayoutA(r: CustomPharmacySearchResponse): r is CustomPharmacySearchResponseA {
  return Array.isArray((r as { pharmacies?: unknown }).pharmacies);
}

/** Every pharmacy of a search response as invite fields, whichever layout answered. */
export function searchResultPharmacies(r: CustomPharmacySearchResponse): CustomPharmacyInviteFields[] {
  return isSearchLayoutA(r) ? r.pharmacies.map(customPharmacyInviteFields) : r.data.map(customPharmacyInviteFields);
}

// ---------------------------------------------------------------------------------------------------------------
// Operations: path segment, request and response schema of each

export const OPERATIONS = {
  exam_list: { request: ExamListRequest, response: ExamListResponse },
  exam_invite: { request: ExamInviteRequest, response: ExamInviteResponse },
  exam_upload_attachment: { request: UploadAttachmentRequest, response: UploadAttachmentResponse },
  exam_questions: { request: ExamQuestionsRequest, response: ExamQuestionsResponse },
  exam_submit_answers: { request: SubmitAnswersRequest, response: SubmitAnswersResponse },
  exam_invite_resend: { request: InviteResendRequest, response: InviteResendResponse },
  exam_invite_cancel: { request: InviteCancelRequest, response: InviteCancelResponse },
  partner_pharmacy_list: { request: PartnerPharmacyListRequest, response: PartnerPharmacyListResponse },
  partner_pharmacy_treatment_packages: { request: TreatmentPackagesRequest, response: TreatmentPackagesResponse },
  custom_pharmacy_search: { request: CustomPharmacySearchRequest, response: CustomPharmacySearchResponse },
} as const;
export type ExamServiceOperation = keyof typeof OPERATIONS;
export const EXAM_SERVICE_OPERATIONS = Object.keys(OPERATIONS) as ExamServiceOperation[];

/** Top-level request field names of an operation (used to spot a field named inside a service message). */
export function requestFieldNames(operation: ExamServiceOperation): string[] {
  const request = OPERATIONS[operation].request;
  const options = request instanceof z.ZodUnion ? request.options : [request];
  const names = new Set<string>();
  for (const option of options) for (const key of Object.keys(option.shape)) names.add(key);
  return [...names];
}

// ---------------------------------------------------------------------------------------------------------------
// Callbacks (POSTed by the service to the invite's webhook_url)
// Required: what a receiver needs to correlate and act; the rest optional, type-checked when present: a rejected
// callback is an outcome lost (docs/design-notes.md#callback-schemas).

/** What events 1 and 2 both tell about the consultation ("same meaning as event 1", says the spec). */
const consultationFields = {
  exam_name: z.string().optional(),
  reason: z.string().nullish(),
  /** PDF of the consultation record, expiring; null for NA and Missed. */
  exam_url: z.string().nullish(),
  rx_status: z.string().nullish(),
  clinic_name: z.string().optional(),
  patient_email: z.string().optional(),
  patient_phone_number: z.string().optional(),
  provider_name: z.string().nullish(),
  /** Echo of the invite's additional_data; absent or null when the invite had none. */
  additional_data: z.string().nullish(),
  /** Empty for Missed when the patient never started. */
  questions_answers: z.array(CallbackAnswer).optional(),
};

export const Event1 = z.looseObject({
  event: z.literal(1),
  /** String in this payload; integers accepted. */
  exam_id: CallbackId,
  /** String in this payload; integers accepted. The idempotency key. */
  patient_exam_id: CallbackId,
  exam_status: z.enum(EXAM_STATUSES),
  ...consultationFields,
});
export type Event1 = z.infer<typeof Event1>;

export const Event2 = z.looseObject({
  event: z.literal(2),
  /** Integer in this payload; digit strings accepted. */
  exam_id: CallbackId,
  /** Integer in this payload; digit strings accepted. */
  patient_exam_id: CallbackId,
  prescription: z.array(PrescriptionItem),
  prescribed_os_id: CallbackId.optional(),
  exam_status: z.enum(EXAM_STATUSES).optional(),
  ...consultationFields,
});
export type Event2 = z.infer<typeof Event2>;

export const Event3 = z.looseObject({
  event: z.literal(3),
  /** String in this payload; integers accepted. */
  patient_exam_id: CallbackId,
  /** String in this payload; matches a prescription[].prescription_id of event 2. */
  prescription_id: CallbackId,
  tracking_number: z.string().min(1),
  delivery_service: z.string().optional(),
  pharmacy_location: z.string().optional(),
  order_id: z.union([z.string(), z.int()]).optional(),
});
export type Event3 = z.infer<typeof Event3>;

export const CallbackEvent = z.discriminatedUnion('event', [Event1, Event2, Event3]);
export type CallbackEvent = z.infer<typeof CallbackEvent>;

export type NormalizedCallback =
  | { event: 1; patientExamId: number; examId: number; examStatus: ExamStatus; payload: Event1 }
  | { event: 2; patientExamId: number; examId: number; prescriptionIds: number[]; payload: Event2 }
  | { event: 3; patientExamId: number; prescriptionId: number; payload: Event3 };

export type ParseCallbackResult = { ok: true; event: NormalizedCallback } | { ok: false; issues: string[] };

/** Validates a callback body (object, or its JSON text) and gives numeric ids whichever form the payload used. */
export function parseCallback(raw: unknown): ParseCallbackResult {
  let value = raw;
  if (typeof raw === 'string') {
    try {
      value = JSON.parse(raw) as unknown;
    } catch {
      return { ok: false, issues: ['(body): is not JSON'] };
    }
  }
  const parsed = CallbackEvent.safeParse(value);
  if (!parsed.success) return { ok: false, issues: formatIssues(parsed.error) };
  const payload = parsed.data;
  switch (payload.event) {
    case 1:
      return {
        ok: true,
        event: {
          event: 1,
          patientExamId: Number(payload.patient_exam_id),
          examId: Number(payload.exam_id),
          examStatus: payload.exam_status,
          payload,
        },
      };
    case 2:
      return {
        ok: true,
        event: {
          event: 2,
          patientExamId: Number(payload.patient_exam_id),
          examId: Number(payload.exam_id),
          prescriptionIds: payload.prescription.map((p) => Number(p.prescription_id)),
          payload,
        },
      };
    case 3:
      return {
        ok: true,
        event: {
          event: 3,
          patientExamId: Number(payload.patient_exam_id),
          prescriptionId: Number(payload.prescription_id),
          payload,
        },
      };
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Catalog rule: at most one prescription exam per invite

export type PrescriptionLimitViolation =
  | { code: 'unknown_exam'; field: 'exams'; examIds: number[]; message: string }
  | { code: 'too_many_prescription_exams'; field: 'exams'; examIds: number[]; message: string };

/** Violations of the catalog rules for an invite's exam list; empty when the list is acceptable. */
export function checkPrescriptionLimit(
  examIds: readonly number[],
  catalog: readonly Exam[],
): PrescriptionLimitViolation[] {
  const byId = new Map(catalog.map((e) => [e.id, e]));
  const violations: PrescriptionLimitViolation[] = [];
  const unknown = examIds.filter((id) => !byId.has(id));
  if (unknown.length > 0) {
    violations.push({
      code: 'unknown_exam',
      field: 'exams',
      examIds: unknown,
      message: `exams: not in the clinic's exam list: ${unknown.join(', ')}`,
    });
  }
  const prescription = examIds.filter((id) => byId.get(id)?.rx_type === 2);
  if (prescription.length > 1) {
    violations.push({
      code: 'too_many_prescription_exams',
      field: 'exams',
      examIds: prescription,
      message: `exams: at most one prescription exam (rx_type 2) per invite, got ${prescription.length}`,
    });
  }
  return violations;
}

// ---------------------------------------------------------------------------------------------------------------
// Issue formatting

type Issue = z.core.$ZodIssue;

/**
 * For a union that failed as a whole, the issues of the option that got furthest: the deepest first issue (it matched
 * the outer shape), then the fewest issues; ties go to the first option.
 */
function expandIssue(issue: Issue): Issue[] {
  if (issue.code === 'invalid_union' && issue.errors.length > 0) {
    const depth = (issues: Issue[]) => issues[0]?.path.length ?? -1;
    const closest = issue.errors.reduce((best, e) =>
      depth(e) > depth(best) || (depth(e) === depth(best) && e.length < best.length) ? e : best,
    );
    if (closest.length > 0) {
      return closest.flatMap((inner) => expandIssue({ ...inner, path: [...issue.path, ...inner.path] }));
    }
  }
  return [issue];
}

function pathOf(path: readonly PropertyKey[]): string {
  return path.map((p) => String(p)).join('.');
}

/** Each issue as "field.path: message" ("(root): message" when the issue is about the whole value). */
export function formatIssues(error: z.ZodError): string[] {
  return error.issues.flatMap(expandIssue).map((i) => `${pathOf(i.path) || '(root)'}: ${i.message}`);
}

/** The dotted path of the first failing field (e.g. "dob", "exams.0"), or undefined when no field is at fault. */
export function firstIssueField(error: z.ZodError): string | undefined {
  for (const issue of error.issues.flatMap(expandIssue)) {
    const path = pathOf(issue.path);
    if (path !== '') return path;
  }
  return undefined;
}
