// /v1/patients/erasure: a clinic erases one of its patients: every journey of theirs ended (an open invite cancelled
// at the exam service first), their documents and dead letters deleted, their data key destroyed, so that every copy
// of their journeys' data (histories, backups) reads as erased (docs/api.md#erasing-a-patient).
import type { FastifyPluginCallbackZod } from 'fastify-type-provider-zod';
import { requireClinic } from '../../auth';
import type { ApiContext } from '../../context';
import { erasureView, requestErasure, requireErasures } from '../../patient-erasure-view';
import { notFound, problemResponses } from '../../problem';
import { ErasureParams, IdempotencyHeaders, PatientErasureBody, PatientErasureView } from '../../schemas';

const security = [{ bearerAuth: [] }];

const patients: FastifyPluginCallbackZod = (app, _options, done) => {
  const ctx: ApiContext = app;

  app.post(
    '/patients/erasure',
    {
      schema: {
        summary: 'Erase a patient: end their journeys, delete their documents, destroy their data key',
        description:
          'Answers 202 at once with the erasure to follow (`GET` its `links.self`); the same Idempotency-Key answers ' +
          'the same erasure (200). Done within a minute: every journey of the patient ended (an open invite cancelled ' +
          "at the exam service first), their documents and dead letters deleted, the patient's data key destroyed. " +
          "From then on the journeys' histories, in Temporal and in every backup, read as erased; the clinic's list " +
          'and search keep their non-patient facts (ids, stages, statuses).',
        tags: ['patients'],
        security,
        headers: IdempotencyHeaders,
        body: PatientErasureBody,
        response: {
          200: PatientErasureView.describe('The erasure this Idempotency-Key asked for before'),
          202: PatientErasureView.describe('The erasure, accepted: `pending` until it is done'),
          ...problemResponses([400, 401, 409, 413, 415, 429, 503], {
            409: 'This deployment keeps no per-patient keys (`PATIENT_KEY_STORE=off`): its journeys cannot be erased (`erasure-unavailable`)',
            503:
              'The request could not be recorded: the patient key store or the audit trail could not be reached or ' +
              'may not write now (`store-unavailable`, `detail` names the store, `Retry-After`); send it again with ' +
              'the same Idempotency-Key, which names the same erasure',
          }),
        },
      },
    },
    async (request, reply) => {
      const clinic = requireClinic(request);
      return requestErasure(ctx, reply, {
        clinicId: clinic.clinicId,
        email: request.body.email,
        idempotencyKey: request.headers['idempotency-key'],
        actor: { subject: `clinic:${clinic.clinicId}`, roles: ['clinic'] },
        prefix: '/v1',
      });
    },
  );

  app.get(
    '/patients/erasure/:erasureId',
    {
      schema: {
        summary: 'An erasure: pending or done, and the journeys it covered',
        tags: ['patients'],
        security,
        params: ErasureParams,
        response: {
          200: PatientErasureView,
          ...problemResponses([400, 401, 404, 409, 429, 503], {
            404: "No erasure of this clinic's with this id (`not-found`)",
            409: 'This deployment keeps no per-patient keys (`PATIENT_KEY_STORE=off`; `erasure-unavailable`)',
            503: 'The patient key store is unavailable (`store-unavailable`, `Retry-After`)',
          }),
        },
      },
    },
    async (request) => {
      const clinic = requireClinic(request);
      const r = await requireErasures(ctx).get(request.params.erasureId);
      if (!r || r.clinicId !== clinic.clinicId) throw notFound(`erasure ${request.params.erasureId}`);
      return erasureView(r, '/v1');
    },
  );
  done();
};

export default patients;
