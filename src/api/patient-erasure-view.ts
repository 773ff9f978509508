// What the erasure routes answer of a request (clinic and admin alike), and the 409 of a deployment without
// per-patient keys.
import type { FastifyReply } from 'fastify';
import type { Actor } from '../patient-keys/patient-keys';
import type { ErasureRequest } from '../patient-keys/types';
import type { ApiContext } from './context';
import type { PatientErasures } from './patient-erasure';
import { ApiProblem } from './problem';

export function erasureView(r: ErasureRequest, prefix: '/v1' | '/admin') {
  return {
    erasureId: r.erasureId,
    status: r.status,
    requestedAt: r.requestedAt,
    completedAt: r.completedAt ?? null,
    // An erasure is done only once no process can use the key (each checks the keys it holds against the tombstones).
    unreadableEverywhereAt: r.completedAt ?? null,
    journeys: r.journeys,
    links: { self: `${prefix}/patients/erasure/${r.erasureId}` },
  };
}

/** The erasures of this API; a 409 naming the setting when the deployment keeps no per-patient keys. */
export function requireErasures(ctx: Pick<ApiContext, 'patientErasures'>): PatientErasures {
  if (!ctx.patientErasures) {
    throw new ApiProblem(
      409,
      'erasure-unavailable',
      'this deployment keeps no per-patient keys (PATIENT_KEY_STORE=off): its journeys cannot be erased by key',
    );
  }
  return ctx.patientErasures;
}

/** Asks for an erasure and answers it: 202 for a new one, 200 for the one the same key asked for before. */
export async function requestErasure(
  ctx: Pick<ApiContext, 'patientErasures'>,
  reply: FastifyReply,
  o: { clinicId: string; email: string; idempotencyKey: string; actor: Actor; prefix: '/v1' | '/admin' },
) {
  const { request, created } = await requireErasures(ctx).request(o);
  const view = erasureView(request, o.prefix);
  return reply
    .code(created ? 202 : 200)
    .header('location', view.links.self)
    .send(view);
}
