// The clinic's journeys: start (idempotent), read, list, and the actions a clinic may take on its own journeys.
import type { FastifyRequest } from 'fastify';
import type { FastifyRouteSchemaDef } from 'fastify/types/schema';
import { validatorCompiler, type FastifyPluginCallbackZod } from 'fastify-type-provider-zod';
import type { z } from 'zod';
import {
  AttachmentOfAnotherPatientError,
  AttachmentQuotaExceededError,
  type StoredAttachmentMeta,
} from '../../../attachments/types';
import type { PatientRef } from '../../../patient-keys/envelope';
import type { JourneyKey } from '../../../patient-keys/patient-keys';
import { PatientErasedError, PatientErasureInProgressError } from '../../../patient-keys/types';
import { requireClinic } from '../../auth';
import type { ApiContext } from '../../context';
import { catalogEntry } from '../../exam-service';
import { idempotencyConflict, journeyEnded } from '../../journeys';
import { deriveJourneyId, requestSha256 } from '../../journey-ids';
import { ApiProblem, fieldErrorsOf, problemResponses, validationProblem, type FieldError } from '../../problem';
import {
  additionalDataText,
  AnswersBody,
  AttachmentMultipartFields,
  AttachmentMultipartFile,
  AttachmentResponse,
  AttachmentUploadJson,
  CancelBody,
  IdempotencyHeaders,
  JourneyAttachmentJson,
  journeyLinks,
  JourneyParams,
  JourneyView,
  ListJourneysQuery,
  ListJourneysResponse,
  ResendBody,
  StartJourneyBody,
  StartJourneyResponse,
  UpdateResponse,
} from '../../schemas';
import { checkAgainstCatalog } from '../../../contract/catalog-rules';
import {
  addAttachmentUpdate,
  cancelUpdate,
  journeyWorkflowId,
  resendUpdate,
  submitAnswersUpdate,
} from '../../../contract/definitions';
import {
  JOURNEY_RULES,
  resolveTimings,
  type AttachmentRef,
  type JourneyInput,
} from '../../../contract/journey-request';
import { rulesOf } from '../../../contract/request-rules';

/** What an action on a journey (an update) may answer beside 200. */
const actionProblems = problemResponses([400, 401, 404, 409, 413, 414, 415, 422, 429, 502, 503, 504], {
  409:
    'The journey refused it (its message in `detail`): it has ended, the patient exam is not one of its own or no ' +
    'longer pending, a cancel of it is in progress, or the provider has already acted (`already-final`)',
});
const security = [{ bearerAuth: [] }];

/** Validates a JSON body, or lets a multipart body through to the handler (which reads its parts itself). */
const jsonOrMultipart = <S>(route: FastifyRouteSchemaDef<S>) => {
  const validate = validatorCompiler(route as unknown as FastifyRouteSchemaDef<z.ZodType>);
  if (route.httpPart !== 'body') return validate;
  return (data: unknown) => (data === undefined || data === null ? { value: undefined } : validate(data));
};

interface Upload {
  bytes: Buffer;
  kind: string;
  fileName: string;
  contentType: string;
  patientExamId?: number;
}

/** An attachment from multipart/form-data (fields kind, patientExamId and one file) or from the JSON body. */
async function readUpload(request: FastifyRequest, json: unknown, withExam: boolean): Promise<Upload> {
  if (!request.isMultipart()) {
    if (json === undefined || json === null) {
      throw validationProblem([{ field: '(body)', message: 'send JSON or multipart/form-data' }]);
    }
    const body = json as z.infer<typeof JourneyAttachmentJson>;
    const bytes = Buffer.from(body.contentBase64, 'base64');
    return {
      bytes,
      kind: body.kind,
      fileName: body.fileName,
      contentType: body.contentType,
      ...(withExam ? { patientExamId: body.patientExamId } : {}),
    };
  }
  const fields: Record<string, string> = {};
  let file: { bytes: Buffer; fileName: string; contentType: string } | undefined;
  try {
    for await (const part of request.parts()) {
      if (part.type === 'file') {
        if (file) throw validationProblem([{ field: 'file', message: 'send one file per request' }]);
        file = { bytes: await part.toBuffer(), fileName: part.filename, contentType: part.mimetype };
      } else if (typeof part.value === 'string') {
        fields[part.fieldname] = part.value;
      }
    }
  } catch (err) {
    throw malformedMultipart(err);
  }
  const errors: FieldError[] = [];
  const fieldSchema = withExam ? AttachmentMultipartFields : AttachmentMultipartFields.omit({ patientExamId: true });
  const parsedFields = fieldSchema.safeParse(fields);
  if (!parsedFields.success) errors.push(...fieldErrorsOf(parsedFields.error));
  if (!file) errors.push({ field: 'file', message: 'a file part is required' });
  else if (file.bytes.length === 0) errors.push({ field: 'file', message: 'the file is empty' });
  const parsedFile = file ? AttachmentMultipartFile.safeParse(file) : undefined;
  if (parsedFile && !parsedFile.success) errors.push(...fieldErrorsOf(parsedFile.error, 'file'));
  if (errors.length > 0 || !parsedFields.success || !file) throw validationProblem(errors);
  const f = parsedFields.data as { kind: string; patientExamId?: number };
  return {
    bytes: file.bytes,
    kind: f.kind,
    fileName: file.fileName,
    contentType: file.contentType,
    ...(f.patientExamId !== undefined ? { patientExamId: f.patientExamId } : {}),
  };
}

/**
 * The multipart parser's own errors (no boundary, a truncated body, a malformed part header) are plain Errors: the
 * client sent them, so they are a 400, not a 500. Limits and field-name errors keep their FST_ status (413, 400).
 */
function malformedMultipart(err: unknown): unknown {
  if (!(err instanceof Error) || Object.getPrototypeOf(err) !== Error.prototype || 'code' in err) return err;
  return validationProblem(
    [{ field: '(body)', message: `malformed multipart/form-data (${err.message})` }],
    `the multipart/form-data body could not be read: ${err.message}`,
  );
}

/** Stores the upload, held to the clinic's quota; sealed for the patient when it is known (a running journey's). */
async function storeUpload(
  ctx: ApiContext,
  clinicId: string,
  upload: Upload,
  journey?: JourneyKey,
): Promise<AttachmentRef> {
  try {
    return await ctx.attachments.put(
      upload.bytes,
      { kind: upload.kind, fileName: upload.fileName, contentType: upload.contentType, clinicId },
      {
        quota: ctx.config.attachmentQuota,
        ...(journey ? { patient: journey.patientRef, ...(journey.dekId ? { dekId: journey.dekId } : {}) } : {}),
      },
    );
  } catch (err) {
    if (err instanceof AttachmentQuotaExceededError) throw quotaProblem(ctx, err);
    if (err instanceof PatientErasedError) throw patientErased();
    throw err;
  }
}

/** 429: the clinic keeps as much as its quota allows. Numbers only (no PHI); no Retry-After: room comes as journeys end. */
function quotaProblem(ctx: ApiContext, err: AttachmentQuotaExceededError): ApiProblem {
  const { quota, usage, size } = err;
  const of = (n: number, bound: number, unit: string) =>
    `${n} ${unit}${n === 1 ? '' : 's'}${bound > 0 ? ` of ${bound}` : ''}`;
  const graceHours = ctx.config.attachmentOrphanGraceMs / 3_600_000;
  return new ApiProblem(
    429,
    'attachment-quota-exceeded',
    `the clinic's attachment quota would be exceeded: it stores ${of(usage.count, quota.count, 'attachment')} and ` +
      `${of(usage.bytes, quota.bytes, 'byte')}; this upload is ${size} bytes. Room comes back as journeys' documents ` +
      `reach the end of their retention${graceHours > 0 ? ` and as uploads no journey took are deleted (after ${graceHours} h)` : ''}`,
  );
}

/** Seals a document the start takes for its patient; one another patient's start sealed first is a 400. */
async function sealForPatient(ctx: ApiContext, ref: string, journey: JourneyKey, index: number): Promise<void> {
  try {
    await ctx.attachments.sealForPatient(ref, journey.patientRef, journey.dekId);
  } catch (err) {
    if (err instanceof PatientErasedError) throw patientErased();
    if (!(err instanceof AttachmentOfAnotherPatientError)) throw err;
    throw validationProblem([ofAnotherPatient(index)]);
  }
}

/** How long after its deadline at Temporal a start's binding still holds an erasure back (the call's own slack). */
const START_LEASE_MARGIN_MS = 2_000;

/**
 * Binds the journey to its patient's key: a 409 while an erasure of the patient is under way (try again once it is
 * done: the start then gets a new key), or for a journey whose key an erasure destroyed (its request was for an
 * erased patient), or bound to another patient (its Idempotency-Key reused).
 */
async function bindJourney(ctx: ApiContext, workflowId: string, patientRef: PatientRef, startBy: Date) {
  let bound: JourneyKey;
  try {
    bound = await ctx.patientKeys!.bindJourney(workflowId, patientRef, { startingUntil: startBy });
  } catch (err) {
    if (err instanceof PatientErasureInProgressError) {
      throw new ApiProblem(
        409,
        'patient-erasure-in-progress',
        "an erasure of this patient's data is under way: nothing new starts for them until it is done; try again " +
          'after Retry-After (the same Idempotency-Key starts the journey under a new key once it is)',
        { headers: { 'retry-after': String(ERASURE_RETRY_AFTER_S) } },
      );
    }
    throw err;
  }
  if (bound.patientRef !== patientRef) throw idempotencyConflict();
  if (bound.dekId && (await ctx.patientKeys!.erasureOfKey(bound.patientRef, bound.dekId).catch(() => undefined))) {
    throw patientErased();
  }
  return bound;
}

/** Seconds a start refused during an erasure waits before it tries again (an erasure takes a few). */
const ERASURE_RETRY_AFTER_S = 5;

const patientErased = () =>
  new ApiProblem(
    409,
    'patient-erased',
    "this journey's patient data was erased: nothing more is kept for it; a new journey for the patient needs a new " +
      'Idempotency-Key',
  );

const ofAnotherPatient = (index: number): FieldError => ({
  field: `attachments.${index}.attachment.ref`,
  message: 'taken by a journey for another patient: upload the document again for this one',
  rule: 'attachment-of-patient',
});

/**
 * Whether a failed update is a refusal: the journey (or the exam service through it) answered no, so the upload will
 * never be used. Temporal away or slow (503, 504) may hide an update the journey took: that upload stays, the
 * journey's.
 */
const refused = (err: unknown) => err instanceof ApiProblem && err.status !== 503 && err.status !== 504;

/**
 * 400s for the request against the clinic's live exam list and its attachment references (the clinic's, and not
 * sealed for another patient than the journey's).
 */
async function checkStart(
  ctx: ApiContext,
  clinic: Parameters<ApiContext['examService']['exams']>[0],
  body: Pick<JourneyInput, 'exams' | 'attachments'> & { scenario: JourneyInput['scenario'] },
  patient: PatientRef | undefined,
) {
  const catalog = (await ctx.examService.exams(clinic)).map(catalogEntry);
  const errors: FieldError[] = checkAgainstCatalog(body, catalog).map((i) => ({
    field: i.field,
    message: i.message,
    rule: i.rule,
  }));
  const attachments: StoredAttachmentMeta[] = [];
  for (const [i, a] of (body.attachments ?? []).entries()) {
    const stored = await ctx.attachments.get(a.attachment.ref);
    if (!stored || (stored.meta.clinicId !== undefined && stored.meta.clinicId !== clinic.clinicId)) {
      errors.push({
        field: `attachments.${i}.attachment.ref`,
        message: 'not an attachment this clinic uploaded',
        rule: 'attachment-of-clinic',
      });
    } else if (stored.patient !== undefined && stored.patient !== patient) {
      errors.push(ofAnotherPatient(i));
    } else if (await pastGrace(ctx, clinic.clinicId, stored.meta)) {
      errors.push({
        field: `attachments.${i}.attachment.ref`,
        message:
          `uploaded more than ${ctx.config.attachmentOrphanGraceMs / 3_600_000} h ago and taken by no journey: it is ` +
          'deleted as an orphan; upload it again',
        rule: 'attachment-in-time',
      });
    } else attachments.push(stored.meta);
  }
  if (errors.length > 0) throw validationProblem(errors);
  return attachments;
}

/** An upload no journey took, past the orphan grace: the sweep may be deleting it (it is not taken now). */
async function pastGrace(ctx: ApiContext, clinicId: string, meta: StoredAttachmentMeta): Promise<boolean> {
  const grace = ctx.config.attachmentOrphanGraceMs;
  if (grace <= 0 || ctx.now().getTime() - Date.parse(meta.storedAt) < grace) return false;
  return (await ctx.attachments.takerOf(clinicId, meta.ref)) === undefined;
}

const journeys: FastifyPluginCallbackZod = (app, _options, done) => {
  const ctx: ApiContext = app;
  app.post(
    '/journeys',
    {
      schema: {
        summary: 'Start a patient journey (one exam invite, followed to the end)',
        description:
          'Idempotent: the same Idempotency-Key returns the same journey (200) and never starts a second one; the same key with another body is a 409.',
        tags: ['journeys'],
        security,
        headers: IdempotencyHeaders,
        body: StartJourneyBody,
        response: {
          200: StartJourneyResponse,
          201: StartJourneyResponse,
          ...problemResponses([400, 401, 409, 413, 415, 422, 429, 502, 503, 504], {
            409:
              'The Idempotency-Key has started a journey with another body (`idempotency-conflict`); an erasure of ' +
              "the patient's data is under way (`patient-erasure-in-progress`, `Retry-After`: the same request " +
              'starts the journey once it is done); or the journey this key started was erased with its patient ' +
              '(`patient-erased`: a new journey needs a new Idempotency-Key)',
          }),
        },
        'x-rules': rulesOf(
          'dob-not-in-future',
          'answers-exam-in-journey',
          'attachments-exam-in-journey',
          'additional-data-json',
          'additional-data-size',
          'exam-in-list',
          'one-prescription-exam',
          'scenario-fits-exams',
          'attachments-required',
          'attachment-of-clinic',
          'attachment-in-time',
          'attachment-of-patient',
        ),
      },
    },
    async (request, reply) => {
      const clinic = requireClinic(request);
      // An object's additionalData is the JSON text the service takes, and hashes as that text would.
      const { additionalData, ...rest } = request.body;
      const text = additionalDataText(additionalData);
      const body = { ...rest, ...(text !== undefined ? { additionalData: text } : {}) };
      const journeyId = deriveJourneyId(
        ctx.config.api.webhookSecret,
        clinic.clinicId,
        request.headers['idempotency-key'],
      );
      const hash = requestSha256(body);
      const links = journeyLinks(journeyId);
      const replayed = () => {
        ctx.metrics.journeyStartReplays.inc({ clinic: clinic.clinicId });
        return reply.code(200).header('location', links.self).send({ journeyId, created: false, links });
      };
      const patientRef = ctx.patientKeys?.patientRef(clinic.clinicId, body.patient.email);
      // The start reaches Temporal before this time or not at all: an erasure of the patient waits for it.
      const startBy = new Date(Date.now() + ctx.config.api.temporalTimeoutMs + START_LEASE_MARGIN_MS);
      const workflowId = journeyWorkflowId(journeyId);
      let attachments: StoredAttachmentMeta[];
      let journeyKey: JourneyKey | undefined;
      try {
        attachments = await checkStart(ctx, clinic, body, patientRef);
        // Bound to its patient and the patient's key before anything of it is sealed: from its start on, every
        // payload of the journey is sealed under that key. A workflow id is bound once: another patient under it is a
        // conflict. While an erasure of the patient is under way nothing joins it: a 409 to try again once it is done.
        journeyKey =
          ctx.patientKeys && patientRef ? await bindJourney(ctx, workflowId, patientRef, startBy) : undefined;
      } catch (err) {
        // Refused before the start: a replay of a journey already started still gets its answer (its documents since
        // claimed or deleted, its exam list since changed, an erasure of its patient under way, a store away). Asked
        // here rather than before every start: a new journey costs no lookup at Temporal.
        const existing = await ctx.journeys.describe(journeyId).catch(() => undefined);
        if (!existing) throw err;
        if (!ctx.journeys.isReplay(existing, clinic.clinicId, hash)) throw idempotencyConflict();
        return replayed();
      }
      try {
        // Taken before the start: a journey's document is never swept as an orphan (a start that fails leaves a claim
        // the sweep finds without its journey); and sealed for its patient, nothing of it left under the payload keys.
        for (const [i, meta] of attachments.entries()) {
          await ctx.attachments.claim({ ref: meta.ref, clinicId: clinic.clinicId, size: meta.size }, journeyId);
          if (journeyKey) await sealForPatient(ctx, meta.ref, journeyKey, i);
        }
        const input: JourneyInput = {
          ...body,
          clinicId: clinic.clinicId,
          journeyId,
          timings: resolveTimings(ctx.config.timings, body.timings),
          callbackFloodLimit: ctx.config.callbackFloodLimit,
          rules: JOURNEY_RULES,
        };
        const outcome = await ctx.journeys.start(
          input,
          hash,
          journeyKey ? { deadline: startBy.getTime() - START_LEASE_MARGIN_MS } : {},
        );
        if (!outcome.created) return replayed();
        ctx.metrics.journeysStarted.inc({ clinic: clinic.clinicId, scenario: body.scenario.type });
        return reply.code(201).header('location', links.self).send({ journeyId, created: true, links });
      } finally {
        // Answered (started or not): an erasure waiting for this start goes on.
        if (journeyKey) await ctx.patientKeys?.settleStart(workflowId).catch(() => undefined);
      }
    },
  );

  app.get(
    '/journeys',
    {
      schema: {
        summary: "List the clinic's journeys (Temporal visibility, most recent first)",
        tags: ['journeys'],
        security,
        querystring: ListJourneysQuery,
        response: { 200: ListJourneysResponse, ...problemResponses([400, 401, 429, 503, 504]) },
        'x-rules': rulesOf('page-token-of-list'),
      },
    },
    async (request) => {
      const clinic = requireClinic(request);
      const { pageSize, nextPageToken, ...filters } = request.query;
      return ctx.journeys.list(clinic.clinicId, filters, { pageSize, ...(nextPageToken ? { nextPageToken } : {}) });
    },
  );

  app.get(
    '/journeys/:journeyId',
    {
      schema: {
        summary: 'One journey: stage, exams, every received event',
        tags: ['journeys'],
        security,
        params: JourneyParams,
        response: { 200: JourneyView, ...problemResponses([400, 401, 404, 414, 429, 503, 504]) },
      },
    },
    async (request) => {
      const clinic = requireClinic(request);
      const { journeyId } = request.params;
      const desc = await ctx.journeys.findOwned(clinic.clinicId, journeyId);
      return ctx.journeys.view(desc, journeyId);
    },
  );

  const updateSchema = (summary: string, body: z.ZodType, rules: ReturnType<typeof rulesOf> = []) => ({
    summary,
    tags: ['journeys'],
    security,
    params: JourneyParams,
    body,
    response: { 200: UpdateResponse, ...actionProblems },
    ...(rules.length > 0 ? { 'x-rules': rules } : {}),
  });

  app.post(
    '/journeys/:journeyId/cancel',
    { schema: updateSchema('Cancel the invite (every pending patient exam, or one)', CancelBody) },
    async (request) => {
      const clinic = requireClinic(request);
      const { journeyId } = request.params;
      const desc = await ctx.journeys.findOwned(clinic.clinicId, journeyId);
      const body = request.body as z.infer<typeof CancelBody>;
      const result = await ctx.journeys.update(desc, cancelUpdate, body);
      return { journeyId, result: { ...result } };
    },
  );

  app.post(
    '/journeys/:journeyId/resend',
    { schema: updateSchema('Resend the invite e-mail and text', ResendBody) },
    async (request) => {
      const clinic = requireClinic(request);
      const { journeyId } = request.params;
      const desc = await ctx.journeys.findOwned(clinic.clinicId, journeyId);
      const result = await ctx.journeys.update(desc, resendUpdate, request.body as z.infer<typeof ResendBody>);
      return { journeyId, result: { ...result } };
    },
  );

  app.post(
    '/journeys/:journeyId/answers',
    {
      schema: updateSchema(
        'Submit screening answers for a patient exam',
        AnswersBody,
        rulesOf('answers-fit-questions'),
      ),
    },
    async (request) => {
      const clinic = requireClinic(request);
      const { journeyId } = request.params;
      const desc = await ctx.journeys.findOwned(clinic.clinicId, journeyId);
      const result = await ctx.journeys.update(desc, submitAnswersUpdate, request.body as z.infer<typeof AnswersBody>);
      return { journeyId, result: { ...result } };
    },
  );

  app.post(
    '/journeys/:journeyId/attachments',
    {
      validatorCompiler: jsonOrMultipart,
      schema: {
        summary: 'Upload an attachment to a patient exam (JSON with base64, or multipart/form-data)',
        description:
          'multipart/form-data: fields `patientExamId` and `kind`, one file part. The bytes go to the attachment store; the journey uploads them to the service. ' +
          "429 `attachment-quota-exceeded` when the clinic's stored attachments would pass its quota (checked before anything is stored). " +
          'A refused upload leaves nothing stored: 409 (the journey has ended or refused it: its message), 422 or 502 (the exam service refused or failed it).',
        tags: ['journeys'],
        security,
        params: JourneyParams,
        body: JourneyAttachmentJson,
        response: { 200: AttachmentResponse, ...actionProblems },
      },
    },
    async (request) => {
      const clinic = requireClinic(request);
      const { journeyId } = request.params;
      const desc = await ctx.journeys.findOwned(clinic.clinicId, journeyId);
      if (desc.status.name !== 'RUNNING') throw journeyEnded(desc.status.name);
      const upload = await readUpload(request, request.body, true);
      // The journey's patient is known: the document is sealed under the journey's key from the first byte stored.
      const journeyKey = await ctx.patientKeys?.journeyKey(desc.workflowId);
      const attachment = await storeUpload(ctx, clinic.clinicId, upload, journeyKey);
      const owned = { ref: attachment.ref, clinicId: clinic.clinicId, size: attachment.size };
      // Left unclaimed (the store failing now), an upload is the orphan sweep's after the grace.
      const storeFailed = (err: unknown) => request.log.warn({ err }, 'the attachment store failed after the update');
      const result = await ctx.journeys
        .update(desc, addAttachmentUpdate, { patientExamId: upload.patientExamId!, attachment })
        .catch(async (err: unknown) => {
          // Refused: nothing stays. Unanswered: the journey may have taken it, so it is the journey's.
          const settle = refused(err)
            ? ctx.attachments.delete(attachment.ref)
            : ctx.attachments.claim(owned, journeyId);
          await settle.catch(storeFailed);
          throw err;
        });
      await ctx.attachments.claim(owned, journeyId).catch(storeFailed);
      return { journeyId, attachment, result: { ...result } };
    },
  );

  app.post(
    '/attachments',
    {
      validatorCompiler: jsonOrMultipart,
      schema: {
        summary: 'Store an attachment before the journey starts; reference it in the start request',
        description:
          'multipart/form-data: field `kind` and one file part; or JSON with base64 content. ' +
          "429 `attachment-quota-exceeded` when the clinic's stored attachments would pass its quota (checked before anything is stored). " +
          'An upload no journey takes within `ATTACHMENTS_ORPHAN_GRACE_MS` (24 h) is deleted.',
        tags: ['attachments'],
        security,
        body: AttachmentUploadJson,
        response: {
          201: AttachmentResponse,
          ...problemResponses([400, 401, 413, 415, 429], {
            429:
              "The clinic's stored attachments would pass its quota (`attachment-quota-exceeded`), or the rate " +
              'limit (`rate-limited`, `Retry-After`) or too many refused sign-ins from this address',
          }),
        },
      },
    },
    async (request, reply) => {
      const clinic = requireClinic(request);
      const upload = await readUpload(request, request.body, false);
      const attachment = await storeUpload(ctx, clinic.clinicId, upload);
      return reply.code(201).send({ attachment });
    },
  );
  done();
};
export default journeys;
