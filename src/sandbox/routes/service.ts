/**
 * The exam service's operations at their paths (POST, JSON, api_key in the body), validated with the contract's
 * request schemas. Order of checks in every operation: injected faults, api_key (401), request schema (400),
 * then the operation's own rules.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import {
  checkPrescriptionLimit,
  type CustomPharmacyA,
  type CustomPharmacyB,
  CustomPharmacySearchRequestA,
  CustomPharmacySearchRequestB,
  type ExamInviteRequest,
  ExamInviteRequest as ExamInviteRequestSchema,
  type ExamInviteResponse,
  type ExamListResponse,
  ExamQuestionsCatalogRequest,
  type ExamQuestionsCatalogResponse,
  ExamQuestionsPatientRequest,
  type ExamQuestionsPatientResponse,
  type ExamServiceOperation,
  InviteCancelRequest,
  InviteResendRequest,
  type InviteResendResponse,
  type PartnerPharmacyListResponse,
  SubmitAnswersRequest,
  type SubmitAnswersResponse,
  TEST_MODE_STATE,
  TreatmentPackagesRequest,
  type TreatmentPackagesResponse,
  UploadAttachmentRequest,
  type UploadAttachmentResponse,
} from '../../exam-service/schemas';
import type { SandboxContext } from '../context';
import { errorShareFor } from '../faults';
import { statusMessage } from '../lifecycle';
import {
  SEED_EXAMS,
  SEED_PARTNER_PHARMACIES,
  SEED_QUESTIONS,
  SEED_RETAIL_PHARMACIES,
  SEED_TREATMENT_PACKAGES,
  type SeedClinic,
  type SeedQuestion,
  type SeedRetailPharmacy,
  titleKind,
} from '../seed';
import type { CustomPharmacyChoice, Fulfilment, Meeting, PatientExamRecord, TestOutcome } from '../store';
import { normaliseRealClientBody } from '../real-clients';
import { badRequest, parseRequest, ServiceError, UNAUTHORIZED } from '../service-error';

const MESSAGES = {
  agreementsUnsigned: 'You need to signed docusign and signed rx',
  prescriptiveContractUnsigned: 'Need to sign Prescriptive Services Contract via the service Portal!',
  noProviderForState: 'Need to add Patient Care Provider via the service Portal!',
} as const;

interface OperationInput {
  body: Record<string, unknown>;
  clinic: SeedClinic;
  request: FastifyRequest;
  reply: FastifyReply;
}

type OperationHandler = (input: OperationInput) => unknown;

export function serviceRoutes(ctx: SandboxContext) {
  return function register(app: FastifyInstance, _options: unknown, done: (err?: Error) => void): void {
    // In the live layout (docs/live-service.md) an operation on an invite answers as that invite's setting says.
    const live = (record?: PatientExamRecord): boolean =>
      ((record ? ctx.store.meetingOf(record).service_layout : undefined) ?? ctx.faults.get().serviceLayout) === 'live';

    const operation = (name: ExamServiceOperation, handler: OperationHandler): void => {
      // Real clients call the paths with a trailing slash too (docs/exam-service.md).
      const handle = async (request: FastifyRequest, reply: FastifyReply) => {
        const faults = ctx.faults.get();
        if (faults.latencyMs > 0) {
          ctx.faults.count('delayed');
          await sleep(faults.latencyMs);
        }
        if (ctx.random.chance(errorShareFor(faults, name))) {
          ctx.faults.count('error', name);
          return reply.code(500).send({ http_code: 500, error_message: 'Internal server error.' });
        }
        const body = normaliseRealClientBody(name, isRecord(request.body) ? request.body : {});
        const clinic = ctx.store.clinicByKey(body.api_key);
        if (!clinic) return reply.code(401).send(new ServiceError(401, UNAUTHORIZED).body());
        try {
          const result = await handler({ body, clinic, request, reply });
          if (reply.sent) return reply;
          return reply.code(200).send(result);
        } catch (err) {
          if (err instanceof ServiceError) return reply.code(err.httpStatus).send(err.body());
          throw err;
        }
      };
      app.post(`/api/${name}`, handle);
      app.post(`/api/${name}/`, handle);
    };

    operation('exam_list', ({ clinic }) => {
      const exams: ExamListResponse = { exams: SEED_EXAMS.map((e) => ({ ...e })), clinic_id: clinic.clinic_id };
      if (!live()) return exams;
      return { http_code: 200, exams: exams.exams.map((e) => ({ ...e, id: String(e.id) })) };
    });

    operation('exam_invite', ({ body, clinic, request, reply }) => invite(ctx, body, clinic, request, reply));

    operation('exam_upload_attachment', ({ body, clinic }): UploadAttachmentResponse => {
      const req = parseRequest(UploadAttachmentRequest, body);
      const record = patientExamOf(ctx, clinic, req.patient_exam_id);
      if (record.status !== 'pending') throw new ServiceError(400, statusMessage(record.status));
      const exam = SEED_EXAMS.find((e) => e.id === record.exam_id);
      const allowed = ['ID', ...(exam?.attachments ?? [])];
      const kind = allowed.find((k) => k.toLowerCase() === req.kind.trim().toLowerCase());
      if (!kind) throw badRequest('kind', `kind: this exam takes ${allowed.map((k) => `"${k}"`).join(', ')}.`);
      const size = decodedSize(req.content_base64);
      if (size === null) throw badRequest('content_base64', 'content_base64: is not valid base64.');
      if (size === 0) throw badRequest('content_base64', 'content_base64: the file is empty.');
      const max = ctx.config.attachmentMaxBytes;
      if (size > max) {
        throw badRequest(
          'content_base64',
          `content_base64: the file is ${size} bytes after decoding; the limit is ${max} bytes (${formatBytes(max)}).`,
        );
      }
      const attachmentId = ctx.store.allocateAttachmentId();
      record.attachments.push({
        attachment_id: attachmentId,
        kind,
        file_name: req.file_name,
        content_type: req.content_type,
        size_bytes: size,
        uploaded_at: ctx.clock.now().toISOString(),
      });
      if (live(record)) return { http_code: 200 };
      return { http_code: 200, patient_exam_id: record.patient_exam_id, attachment_id: attachmentId, kind };
    });

    operation('exam_questions', ({ body, clinic }) => {
      // Patient-bound when the request carries meeting_uuid or patient_exam_id; the catalog form otherwise.
      if (body.meeting_uuid !== undefined || body.patient_exam_id !== undefined) {
        const req = parseRequest(ExamQuestionsPatientRequest, body);
        const record = patientExamOf(ctx, clinic, req.patient_exam_id);
        if (record.meeting_uuid !== req.meeting_uuid) {
          throw badRequest('meeting_uuid', 'meeting_uuid: is not the meeting of this patient exam.');
        }
        if (live(record)) {
          // Questions by id, in order, without their position number; pre-filled answers as the chosen response.
          return {
            http_code: 200,
            exam_id: record.exam_id,
            meeting_uuid: record.meeting_uuid,
            patient_exam_id: String(record.patient_exam_id),
            questions: questionsOf(record.exam_id).map((q) => ({
              id: q.id,
              question: q.question,
              response_type: q.response_type,
              responses: q.responses.map((r) => ({ ...r })),
            })),
            answers: [...record.answers.values()]
              .sort((a, b) => a.no - b.no)
              .map((a) => ({ question_id: a.question_id, response: [a.answer].flat().join(', ') })),
          };
        }
        const response: ExamQuestionsPatientResponse = {
          http_code: 200,
          exam_id: record.exam_id,
          meeting_uuid: record.meeting_uuid,
          patient_exam_id: record.patient_exam_id,
          questions: questionsOf(record.exam_id).map((q) => ({
            id: q.id,
            question_id: q.id,
            no: q.no,
            question: q.question,
            response_type: q.response_type,
            input_field: q.input_field,
            responses: q.responses.map((r) => ({ ...r })),
          })),
          answers: [...record.answers.values()]
            .sort((a, b) => a.no - b.no)
            .map((a) => ({ question_id: a.question_id, no: a.no, question: a.question, answer: a.answer })),
        };
        return response;
      }
      const req = parseRequest(ExamQuestionsCatalogRequest, body);
      if (!SEED_EXAMS.some((e) => e.id === req.exam_id)) {
        throw badRequest('exam_id', "exam_id: not in the clinic's exam list.");
      }
      const response: ExamQuestionsCatalogResponse = {
        exam_id: req.exam_id,
        questions: questionsOf(req.exam_id).map((q) => ({ no: q.no, question: q.question })),
      };
      return response;
    });

    operation('exam_submit_answers', ({ body, clinic }): SubmitAnswersResponse => {
      const req = parseRequest(SubmitAnswersRequest, body);
      const record = patientExamOf(ctx, clinic, req.patient_exam_id);
      if (record.status !== 'pending') throw new ServiceError(400, statusMessage(record.status));
      const questions = questionsOf(record.exam_id);
      // Validate everything first so a rejected submission stores nothing.
      const accepted = req.answers.map((a, i) => {
        const q = questions.find((x) => x.no === a.no);
        if (!q)
          throw badRequest(`answers.${i}.no`, `answers.${i}.no: question no ${a.no} does not exist for this exam.`);
        return { q, answer: checkAnswer(q, a.answer, `answers.${i}.answer`) };
      });
      for (const { q, answer } of accepted) {
        record.answers.set(q.no, { question_id: q.id, no: q.no, question: q.question, answer });
      }
      record.questionnaire_skipped = questions.every((q) => record.answers.has(q.no));
      if (live(record)) return { http_code: 200 };
      return {
        http_code: 200,
        patient_exam_id: record.patient_exam_id,
        answered: record.answers.size,
        questionnaire_skipped: record.questionnaire_skipped,
      };
    });

    operation('exam_invite_resend', ({ body, clinic }): InviteResendResponse => {
      const req = parseRequest(InviteResendRequest, body);
      const record = patientExamOf(ctx, clinic, req.patient_exam_id);
      // The live service's instructions have the resend name the meeting too.
      if (live(record) && req.meeting_uuid === undefined)
        throw badRequest('meeting_uuid', 'meeting_uuid: is required.');
      if (req.meeting_uuid !== undefined && req.meeting_uuid !== record.meeting_uuid) {
        throw badRequest('meeting_uuid', 'meeting_uuid: is not the meeting of this patient exam.');
      }
      if (record.status !== 'pending') throw new ServiceError(400, statusMessage(record.status));
      record.invite_deliveries += 1;
      if (live(record)) return { http_code: 200 };
      return { http_code: 200, patient_exam_id: record.patient_exam_id, deliveries: record.invite_deliveries };
    });

    operation('exam_invite_cancel', ({ body, clinic }) => {
      const req = parseRequest(InviteCancelRequest, body);
      const record = patientExamOf(ctx, clinic, req.patient_exam_id);
      if (record.status !== 'pending') throw new ServiceError(400, statusMessage(record.status));
      ctx.lifecycle.cancel(record);
      if (live(record)) return { http_code: 200 };
      return {
        http_code: 200,
        patient_exam_id: record.patient_exam_id,
        status: 'cancelled',
        cancelled_at: record.cancelled_at ?? ctx.clock.now().toISOString(),
      };
    });

    operation('partner_pharmacy_list', () => {
      const list: PartnerPharmacyListResponse = { pharmacies: SEED_PARTNER_PHARMACIES.map((p) => ({ ...p })) };
      if (!live()) return list;
      return { http_code: 200, data: list.pharmacies.map((p) => ({ ...p, pharmacy_id: String(p.pharmacy_id) })) };
    });

    operation('partner_pharmacy_treatment_packages', ({ body }) => {
      // The live form (lists of ids) was read into pharmacy_id and exam_id by normaliseRealClientBody.
      const req = parseRequest(TreatmentPackagesRequest, body);
      if (!SEED_PARTNER_PHARMACIES.some((p) => p.pharmacy_id === req.pharmacy_id)) {
        throw badRequest('pharmacy_id', 'pharmacy_id: not a partner pharmacy.');
      }
      if (!SEED_EXAMS.some((e) => e.id === req.exam_id)) {
        throw badRequest('exam_id', "exam_id: not in the clinic's exam list.");
      }
      const packages = SEED_TREATMENT_PACKAGES.filter(
        (p) => p.pharmacy_id === req.pharmacy_id && p.exam_id === req.exam_id,
      ).map((p) => ({
        order_set_id: p.order_set_id,
        exam_pos_id: p.exam_pos_id,
        drug_name: p.drug_name,
        strength: p.strength,
        size: p.size,
        duration_days: p.duration_days,
        price: p.price,
      }));
      if (live()) {
        const pharmacy = SEED_PARTNER_PHARMACIES.find((p) => p.pharmacy_id === req.pharmacy_id);
        // A bare list; each package a title and a total price in dollars, the order set a number.
        return packages.map((p) => ({
          exam_pos_id: p.exam_pos_id,
          order_set_id: Number(p.order_set_id),
          title: `${p.drug_name} ${p.strength} - ${p.size} - ${p.duration_days} days`,
          pharmacy_id: req.pharmacy_id,
          pharmacy_name: pharmacy?.name ?? '',
          qualiphy_total_price: (p.price / 100).toFixed(2),
        }));
      }
      const answer: TreatmentPackagesResponse = { treatment_packages: packages };
      return answer;
    });

    operation('custom_pharmacy_search', ({ body }) => {
      // Form B when any of its own fields (city, state, pharmacy_name) is present; form A otherwise.
      const formB = ['city', 'state', 'pharmacy_name'].some((k) => body[k] !== undefined);
      if (formB) {
        const req = parseRequest(CustomPharmacySearchRequestB, body);
        const hits = SEED_RETAIL_PHARMACIES.filter(
          (p) =>
            (!req.city?.trim() || p.city.toLowerCase() === req.city.trim().toLowerCase()) &&
            (!req.state || p.state === req.state) &&
            (!req.zip_code?.trim() || p.zip === req.zip_code.trim()) &&
            (!req.pharmacy_name?.trim() || p.name.toLowerCase().includes(req.pharmacy_name.trim().toLowerCase())),
        );
        return { http_code: 200, data: hits.map(layoutB) };
      }
      const req = parseRequest(CustomPharmacySearchRequestA, body);
      const hits = SEED_RETAIL_PHARMACIES.filter(
        (p) =>
          (!req.search?.trim() || p.name.toLowerCase().includes(req.search.trim().toLowerCase())) &&
          (!req.zip_code || p.zip === req.zip_code) &&
          (!req.ncpdpid?.trim() || p.ncpdpid === req.ncpdpid.trim()),
      );
      if (live()) return { http_code: 200, data: hits.map(layoutB) };
      return { pharmacies: hits.map(layoutA) };
    });
    done();
  };
}

// -------------------------------------------------------------------------------------------------------------
// exam_invite

function invite(
  ctx: SandboxContext,
  body: Record<string, unknown>,
  clinic: SeedClinic,
  request: FastifyRequest,
  reply: FastifyReply,
): unknown {
  const req = parseRequest(ExamInviteRequestSchema, body);
  const testMode = req.tele_state === TEST_MODE_STATE;
  if (testMode && req.state !== TEST_MODE_STATE) {
    throw badRequest('state', 'state: must be TE together with tele_state TE (test mode).');
  }
  if (!testMode && req.state === TEST_MODE_STATE) {
    throw badRequest('state', 'state: TE is only valid in test mode, together with tele_state TE.');
  }
  const [violation] = checkPrescriptionLimit(req.exams, SEED_EXAMS);
  if (violation) throw badRequest(violation.field, `${violation.message}.`);
  const duplicate = req.exams.find((id, i) => req.exams.indexOf(id) !== i);
  if (duplicate !== undefined) throw badRequest('exams', `exams: exam ${duplicate} is listed more than once.`);

  const exams = req.exams.map((id) => SEED_EXAMS.find((e) => e.id === id)).filter((e) => e !== undefined);
  const rxExam = exams.find((e) => e.rx_type === 2);
  if (!clinic.agreementsSigned) throw new ServiceError(401, MESSAGES.agreementsUnsigned);
  if (rxExam && !clinic.prescriptiveContractSigned) throw new ServiceError(401, MESSAGES.prescriptiveContractUnsigned);
  if (!testMode && !clinic.providerStates.includes(req.tele_state)) {
    throw new ServiceError(401, MESSAGES.noProviderForState);
  }
  const plan = rxExam ? fulfilmentPlan(req, rxExam.id, rxExam.title) : undefined;

  const now = ctx.clock.now().toISOString();
  const meetingUuid = ctx.random.uuid();
  const meeting: Meeting = {
    meeting_uuid: meetingUuid,
    meeting_url: `${ctx.publicUrl()}/meeting/${meetingUuid}`,
    clinic_id: clinic.clinic_id,
    created_at: now,
    patient_exam_ids: [],
    test_mode: testMode,
    test_outcome: testMode ? readTestOutcome(req.first_name, req.last_name) : null,
    patient: {
      first_name: req.first_name,
      last_name: req.last_name,
      email: req.email,
      phone_number: req.phone_number,
      dob: req.dob,
      tele_state: req.tele_state,
      state: req.state ?? null,
    },
    webhook_url: req.webhook_url ?? null,
    additional_data: req.additional_data ?? null,
    redirects: {
      approve: req.redirect_approve ?? null,
      reject: req.redirect_reject ?? null,
      na: req.redirect_na ?? null,
      missed: req.redirect_missed ?? null,
    },
    waiting_since: null,
  };
  ctx.store.meetings.set(meetingUuid, meeting);
  for (const exam of exams) {
    const rx = exam.rx_type === 2 && plan !== undefined;
    const record: PatientExamRecord = {
      patient_exam_id: ctx.store.allocatePatientExamId(),
      exam_id: exam.id,
      exam_title: exam.title,
      rx_type: exam.rx_type,
      meeting_uuid: meetingUuid,
      clinic_id: clinic.clinic_id,
      created_at: now,
      status: 'pending',
      rx_status: null,
      fulfilment: rx ? plan.fulfilment : 'none',
      partner_pharmacy_id: rx ? plan.partnerPharmacyId : null,
      order_set_id: rx ? plan.orderSetId : null,
      provider_pos_selection: rx ? (req.provider_pos_selection ?? null) : null,
      custom_pharmacy: rx ? plan.customPharmacy : null,
      provider_name: null,
      reason: null,
      exam_url: null,
      decided_at: null,
      cancelled_at: null,
      redirected_to: null,
      invite_deliveries: 1,
      answers: new Map(),
      questionnaire_skipped: false,
      attachments: [],
      prescribed_os_id: null,
      prescriptions: [],
      events_emitted: [],
      handles: [],
    };
    ctx.store.patientExams.set(record.patient_exam_id, record);
    meeting.patient_exam_ids.push(record.patient_exam_id);
  }
  ctx.lifecycle.scheduleTestProvider(meeting);

  if (ctx.random.chance(ctx.faults.get().dropAfterInviteRate)) {
    // The ambiguous failure: the invite exists, the caller sees its connection reset and no answer.
    ctx.faults.count('droppedInvite');
    reply.hijack();
    request.raw.socket.destroy();
    return reply;
  }
  const answer: ExamInviteResponse = {
    http_code: 200,
    meeting_url: meeting.meeting_url,
    meeting_uuid: meetingUuid,
    patient_exams: meeting.patient_exam_ids.map((id) => {
      const record = ctx.store.patientExams.get(id);
      return { patient_exam_id: id, exam_title: record?.exam_title ?? '', exam_id: record?.exam_id ?? 0 };
    }),
  };
  if (ctx.faults.get().serviceLayout !== 'live') return answer;
  // Live: the meeting inside `data`, patient exam ids as digit strings, no titles.
  const { http_code, ...meetingFields } = answer;
  return {
    http_code,
    data: {
      ...meetingFields,
      patient_exams: answer.patient_exams.map((pe) => ({
        patient_exam_id: String(pe.patient_exam_id),
        exam_id: pe.exam_id,
      })),
    },
  };
}

interface FulfilmentPlan {
  fulfilment: Fulfilment;
  partnerPharmacyId: number | null;
  orderSetId: string | null;
  customPharmacy: CustomPharmacyChoice | null;
}

/**
 * How the prescription exam of an invite is fulfilled: partner when pharmacy_id is given or custom_pharmacy is 2;
 * custom (urgent care or choose-your-own by the exam's title) when custom_pharmacy is 1; the title decides when
 * no pharmacy field is given (the provider or the patient then picks the pharmacy).
 */
function fulfilmentPlan(req: ExamInviteRequest, examId: number, title: string): FulfilmentPlan {
  const kind = titleKind(title);
  const custom =
    req.custom_pharmacy === 1 ||
    (req.custom_pharmacy === undefined &&
      req.pharmacy_id === undefined &&
      (kind === 'urgent_care' || kind === 'own_pharmacy'));
  if (custom) {
    if (req.pharmacy_id !== undefined) {
      throw badRequest('pharmacy_id', 'pharmacy_id: names a partner pharmacy; custom_pharmacy 1 uses ncpdpid.');
    }
    return {
      fulfilment: kind === 'urgent_care' ? 'urgent_care' : 'own_pharmacy',
      partnerPharmacyId: null,
      orderSetId: null,
      customPharmacy: customPharmacyChoice(req),
    };
  }
  const packagesOf = (pharmacyId: number) =>
    SEED_TREATMENT_PACKAGES.filter((p) => p.pharmacy_id === pharmacyId && p.exam_id === examId);
  let pharmacyId = req.pharmacy_id;
  if (pharmacyId !== undefined && !SEED_PARTNER_PHARMACIES.some((p) => p.pharmacy_id === pharmacyId)) {
    throw badRequest('pharmacy_id', 'pharmacy_id: not a partner pharmacy.');
  }
  // Without pharmacy_id the provider chooses: the first partner pharmacy with a package for this exam.
  pharmacyId ??= (
    SEED_PARTNER_PHARMACIES.find((p) => packagesOf(p.pharmacy_id).length > 0) ?? SEED_PARTNER_PHARMACIES[0]
  )?.pharmacy_id;
  const packages = pharmacyId === undefined ? [] : packagesOf(pharmacyId);
  let orderSetId: string | null = null;
  if (req.order_set_id !== undefined) {
    const found = packages.find((p) => p.order_set_id === req.order_set_id);
    if (!found) throw badRequest('order_set_id', 'order_set_id: not a treatment package of this pharmacy and exam.');
    orderSetId = found.order_set_id;
  } else if (req.exam_pos_id !== undefined) {
    const found = packages.find((p) => p.exam_pos_id === req.exam_pos_id);
    if (!found) throw badRequest('exam_pos_id', 'exam_pos_id: not a treatment package of this pharmacy and exam.');
    orderSetId = found.order_set_id;
  }
  return { fulfilment: 'partner', partnerPharmacyId: pharmacyId ?? null, orderSetId, customPharmacy: null };
}

function customPharmacyChoice(req: ExamInviteRequest): CustomPharmacyChoice {
  const ncpdpid = req.ncpdpid?.trim();
  // custom_pharmacy_patient_choice 2 (or no ncpdpid): the patient picks in the meeting; the sandbox's patient
  // always picks the first seeded retail pharmacy.
  const seeded: SeedRetailPharmacy | undefined = ncpdpid
    ? SEED_RETAIL_PHARMACIES.find((p) => p.ncpdpid === ncpdpid)
    : SEED_RETAIL_PHARMACIES[0];
  return {
    ncpdpid: ncpdpid || seeded?.ncpdpid || '',
    name: req.pharmacy_name ?? seeded?.name ?? null,
    address_line_1: req.pharmacy_address_line_1 ?? seeded?.address1 ?? null,
    address_line_2: req.pharmacy_address_line_2 ?? seeded?.address2 ?? null,
    city: req.pharmacy_city ?? seeded?.city ?? null,
    state: req.pharmacy_state ?? seeded?.state ?? null,
    zip_code: req.pharmacy_zip_code ?? seeded?.zip ?? null,
    phone: req.pharmacy_phone ?? seeded?.phone ?? null,
    type: req.pharmacy_type ?? seeded?.type ?? null,
  };
}

/** First name `Test`; the keyword in the last name, or after `Test` in the first name. Case-insensitive. */
export function readTestOutcome(firstName: string, lastName: string): TestOutcome | null {
  const norm = (s: string) => s.trim().replace(/\s+/g, ' ').toLowerCase();
  const first = norm(firstName);
  if (first !== 'test' && !first.startsWith('test ')) return null;
  const keywords: [string, TestOutcome][] = [
    ['approve', 'Approve'],
    ['reject', 'Reject'],
    ['n/a', 'N/A'],
    ['prescription approve', 'Prescription Approve'],
    ['prescription reject', 'Prescription Reject'],
  ];
  const match = (s: string) => keywords.find(([k]) => k === s)?.[1];
  return match(norm(lastName)) ?? match(first.slice('test'.length).trim()) ?? null;
}

// -------------------------------------------------------------------------------------------------------------
// helpers

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function patientExamOf(ctx: SandboxContext, clinic: SeedClinic, patientExamId: number): PatientExamRecord {
  const record = ctx.store.patientExam(patientExamId);
  if (!record || record.clinic_id !== clinic.clinic_id) {
    throw badRequest('patient_exam_id', 'patient_exam_id: no patient exam with this id for this clinic.');
  }
  return record;
}

function questionsOf(examId: number): readonly SeedQuestion[] {
  return SEED_QUESTIONS[examId] ?? [];
}

/**
 * Checks one answer against its question. Radio: one response; checkbox: a subset (array, or a comma-separated
 * string). A response with input_field 2 needs extra text written as "<response>: <text>".
 */
function checkAnswer(q: SeedQuestion, answer: string | string[], field: string): string | string[] {
  if (q.response_type === 1) {
    if (typeof answer !== 'string' || answer.trim() === '')
      throw badRequest(field, `${field}: question no ${q.no} takes a non-empty text answer.`);
    return answer.trim();
  }
  if (q.response_type === 2) {
    if (typeof answer !== 'string') throw badRequest(field, `${field}: question no ${q.no} takes one response.`);
    return matchResponse(q, answer, field);
  }
  const entries = (typeof answer === 'string' ? answer.split(',') : answer)
    .map((s) => s.trim())
    .filter((s) => s !== '');
  if (entries.length === 0) throw badRequest(field, `${field}: question no ${q.no} needs at least one response.`);
  const matched = entries.map((e) => matchResponse(q, e, field));
  const names = matched.map((m) => m.split(':')[0]);
  if (new Set(names).size !== names.length) throw badRequest(field, `${field}: a response is selected twice.`);
  return matched;
}

function matchResponse(q: SeedQuestion, entry: string, field: string): string {
  const text = entry.trim();
  for (const r of q.responses) {
    const name = r.response.toLowerCase();
    if (text.toLowerCase() === name) {
      if (r.input_field === 2) {
        throw badRequest(field, `${field}: "${r.response}" needs extra text, written as "${r.response}: <text>".`);
      }
      return r.response;
    }
    if (r.input_field === 2 && text.toLowerCase().startsWith(`${name}:`)) {
      const extra = text.slice(name.length + 1).trim();
      if (extra === '') throw badRequest(field, `${field}: "${r.response}" needs extra text after the colon.`);
      return `${r.response}: ${extra}`;
    }
  }
  const options = q.responses.map((r) => `"${r.response}"`).join(', ');
  throw badRequest(field, `${field}: not a response of question no ${q.no} (${options}).`);
}

/** Decoded length of a base64 string, or null when it does not decode cleanly. */
function decodedSize(base64: string): number | null {
  const compact = base64.replace(/\s+/g, '');
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(compact) || compact.length % 4 === 1) return null;
  return Buffer.from(compact, 'base64').length;
}

function formatBytes(bytes: number): string {
  if (bytes % (1024 * 1024) === 0) return `${bytes / (1024 * 1024)} MiB`;
  if (bytes % 1024 === 0) return `${bytes / 1024} KiB`;
  return `${bytes} bytes`;
}

function layoutA(p: SeedRetailPharmacy): CustomPharmacyA {
  return {
    ncpdpid: p.ncpdpid,
    name: p.name,
    address_line_1: p.address1,
    city: p.city,
    state: p.state,
    zip_code: p.zip,
    phone: p.phone,
  };
}

function layoutB(p: SeedRetailPharmacy): CustomPharmacyB {
  return {
    NCPDPID: p.ncpdpid,
    Name: p.name,
    Address: p.address1,
    Address2: p.address2,
    City: p.city,
    State: p.state,
    Zip: p.zip,
    Phone: p.phone,
    Type: p.type,
  };
}
