/**
 * The exam service's interface as an OpenAPI 3.1 document, generated from the contract schemas (schemas.ts): the
 * operations our client calls, their request and response bodies, the error body, and the three callbacks as
 * webhooks. What an OpenAPI cannot say (event order, test mode, the quirks) is in docs/exam-service.md.
 * The sandbox serves it at /docs/openapi.json; `npm run docs:exam-service` writes docs/exam-service.openapi.json.
 */
import { z } from 'zod';
import { ErrorBody, Event1, Event2, Event3, type ExamServiceOperation, OPERATIONS } from './schemas';

type JsonSchema = Record<string, unknown>;

/** What each operation does, in a line. */
const SUMMARIES: Record<ExamServiceOperation, string> = {
  exam_list: "The clinic's exams: ids to invite to, whether each is a prescription exam, attachments it needs",
  exam_invite:
    'Invite a patient to one or more exams (one meeting); the scenario follows from the pharmacy fields sent',
  exam_upload_attachment: 'Attach a file (ID, lab result) to a patient exam before the consultation',
  exam_questions: "An exam's screening questions: by exam_id, or bound to a patient exam with its meeting",
  exam_submit_answers: "Pre-fill a patient exam's screening answers; all of them skip the questionnaire",
  exam_invite_resend: 'Send the invite e-mail and text again',
  exam_invite_cancel: 'Cancel a patient exam the provider has not acted on yet',
  partner_pharmacy_list: "The service's partner (compounding) pharmacies",
  partner_pharmacy_treatment_packages: "A partner pharmacy's treatment packages for an exam",
  custom_pharmacy_search: 'Search any U.S. pharmacy, for urgent care and patient-chosen pharmacy invites',
};

/** A response schema read through an envelope (z.preprocess) is documented by the schema behind it. */
function behindPreprocess(schema: z.ZodType): z.ZodType {
  const def = (schema as unknown as { def: { type: string; in?: z.ZodType; out?: z.ZodType } }).def;
  if (def.type === 'pipe' && def.in && def.out && (def.in as { def: { type: string } }).def.type === 'transform') {
    return behindPreprocess(def.out);
  }
  return schema;
}

/** JSON Schema 2020-12 (the dialect of OpenAPI 3.1) of what a sender may put on the wire. */
function jsonSchema(schema: z.ZodType): JsonSchema {
  const out = z.toJSONSchema(behindPreprocess(schema), {
    io: 'input',
    target: 'draft-2020-12',
    unrepresentable: 'any',
  }) as JsonSchema;
  delete out.$schema;
  return out;
}

const errorResponse = (description: string) => ({
  description,
  content: { 'application/json': { schema: { $ref: '#/components/schemas/ErrorBody' } } },
});

/** The document, built anew on each call (cheap; the sandbox builds it once). */
export function examServiceOpenApi(): Record<string, unknown> {
  const paths: Record<string, unknown> = {};
  for (const [name, { request, response }] of Object.entries(OPERATIONS) as [
    ExamServiceOperation,
    (typeof OPERATIONS)[ExamServiceOperation],
  ][]) {
    paths[`/api/${name}`] = {
      post: {
        operationId: name,
        summary: SUMMARIES[name],
        requestBody: {
          required: true,
          description: 'JSON; api_key is the clinic key (there is no header or query authentication)',
          content: { 'application/json': { schema: jsonSchema(request) } },
        },
        responses: {
          200: {
            description: 'Done. Ids may come as digit strings, lists bare or inside `data`; see docs/live-service.md',
            content: { 'application/json': { schema: jsonSchema(response) } },
          },
          400: errorResponse('The request is invalid or not allowed in the exam state; the message names the field'),
          401: errorResponse('api_key missing or unknown, or the account is not set up for this invite'),
          500: errorResponse('The service failed'),
        },
      },
    };
  }
  const callback = (ref: string, summary: string) => ({
    post: {
      summary,
      requestBody: {
        required: true,
        content: { 'application/json': { schema: { $ref: `#/components/schemas/${ref}` } } },
      },
      responses: { 200: { description: 'Taken; answer at once (within 100 ms), process afterwards' } },
    },
  });
  return {
    openapi: '3.1.0',
    info: {
      title: 'Exam service',
      version: '1.0.0',
      description:
        'The telemedicine exam service the engine integrates, as its contract schemas read it. Every operation is a ' +
        'POST with a JSON body carrying api_key. Behaviour an OpenAPI cannot express (callback order, test mode, ' +
        'scenarios, quirks of the live service) is described in docs/exam-service.md.',
    },
    paths,
    webhooks: {
      consultationComplete: callback('Event1', 'Event 1: the provider finished the consultation (every exam)'),
      prescriptionConfirmed: callback('Event2', 'Event 2: the prescription is confirmed at the pharmacy'),
      prescriptionShipped: callback('Event3', 'Event 3: a partner pharmacy shipped a prescription'),
    },
    components: {
      schemas: {
        ErrorBody: jsonSchema(ErrorBody),
        Event1: jsonSchema(Event1),
        Event2: jsonSchema(Event2),
        Event3: jsonSchema(Event3),
      },
    },
  };
}
