// /admin/patients/erasure: an admin erases a patient of any clinic (as the clinic's own route does), every request on
// the audit trail first.
import type { FastifyPluginCallbackZod } from 'fastify-type-provider-zod';
import { readerOf, requireRole, ROLES } from '../../auth';
import type { ApiContext } from '../../context';
import { erasureView, requestErasure, requireErasures } from '../../patient-erasure-view';
import { notFound, operatorProblems, validationProblem } from '../../problem';
import { clinicById } from '../../../config';
import { ruleParams, rulesOf } from '../../../contract/request-rules';
import { AdminPatientErasureBody, ErasureParams, IdempotencyHeaders, PatientErasureView } from '../../schemas';

const meta = { tags: ['admin'], security: [{ adminAuth: [] }] };

const patients: FastifyPluginCallbackZod = (app, _options, done) => {
  const ctx: ApiContext = app;
  app.addHook('preHandler', requireRole(ctx.audit, ROLES.admin));

  app.post(
    '/patients/erasure',
    {
      schema: {
        ...meta,
        summary: "Erase a clinic's patient: end their journeys, delete their documents, destroy their data key",
        headers: IdempotencyHeaders,
        body: AdminPatientErasureBody,
        response: {
          200: PatientErasureView.describe('The erasure this Idempotency-Key asked for before'),
          202: PatientErasureView.describe('The erasure, accepted: `pending` until it is done'),
          ...operatorProblems([400, 401, 403, 404, 409, 413, 415, 429, 503], {
            409: 'This deployment keeps no per-patient keys (`PATIENT_KEY_STORE=off`; `erasure-unavailable`)',
          }),
        },
        'x-rules': rulesOf('clinic-configured'),
      },
    },
    async (request, reply) => {
      requireErasures(ctx);
      const { clinicId, email } = request.body;
      if (!clinicById(ctx.config, clinicId)) {
        throw validationProblem([
          { field: 'clinicId', message: `no clinic ${clinicId} is configured`, ...ruleParams('clinic-configured') },
        ]);
      }
      const operator = request.operator!;
      // The static admin token names nobody: who asks comes with it (X-Actor).
      const reader = readerOf(request);
      return requestErasure(ctx, reply, {
        clinicId,
        email,
        idempotencyKey: request.headers['idempotency-key'],
        actor: {
          subject: reader.actor ? `${operator.subject} (${reader.actor})` : operator.subject,
          roles: operator.roles,
        },
        prefix: '/admin',
      });
    },
  );

  app.get(
    '/patients/erasure/:erasureId',
    {
      schema: {
        ...meta,
        summary: "An erasure of any clinic's: pending or done, and the journeys it covered",
        params: ErasureParams,
        response: {
          200: PatientErasureView,
          ...operatorProblems([400, 401, 403, 404, 409, 429, 503], {
            404: 'The operator routes are off, or no erasure has this id (`not-found`)',
            409: 'This deployment keeps no per-patient keys (`PATIENT_KEY_STORE=off`; `erasure-unavailable`)',
          }),
        },
      },
    },
    async (request) => {
      const r = await requireErasures(ctx).get(request.params.erasureId);
      if (!r) throw notFound(`erasure ${request.params.erasureId}`);
      return erasureView(r, '/admin');
    },
  );
  done();
};

export default patients;
