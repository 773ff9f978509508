// Bearer tokens: clinics' from configuration, stored as SHA-256 hashes; one admin token for the operator routes.
import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { ClinicConfig, Config } from '../config';
import { ApiProblem } from './problem';

declare module 'fastify' {
  interface FastifyRequest {
    /** The clinic the bearer token acts as (set by the clinic routes' auth hook). */
    clinic: ClinicConfig | null;
  }
}

export const sha256Hex = (token: string) => createHash('sha256').update(token).digest('hex');

function bearer(request: FastifyRequest): string | undefined {
  const header = request.headers.authorization;
  const m = typeof header === 'string' ? /^Bearer\s+(\S+)\s*$/i.exec(header) : null;
  return m?.[1];
}

const unauthorized = (detail: string) =>
  new ApiProblem(401, 'unauthorized', detail, { headers: { 'www-authenticate': 'Bearer realm="patient-journeys"' } });

/** onRequest hook of the clinic routes: the token's hash picks the clinic. */
export function clinicAuth(config: Pick<Config, 'clinics'>) {
  const byHash = new Map<string, ClinicConfig>();
  for (const clinic of config.clinics) for (const h of clinic.apiTokenSha256) byHash.set(h, clinic);
  return async (request: FastifyRequest, _reply: FastifyReply) => {
    const token = bearer(request);
    if (!token) throw unauthorized('send the clinic API token as "Authorization: Bearer <token>"');
    const clinic = byHash.get(sha256Hex(token));
    if (!clinic) throw unauthorized('the bearer token is not valid');
    request.clinic = clinic;
  };
}

/** onRequest hook of the admin routes; they answer 404 when no admin token is configured. */
export function adminAuth(config: Pick<Config, 'api'>) {
  const expected = config.api.adminTokenSha256 ? Buffer.from(config.api.adminTokenSha256, 'hex') : undefined;
  return async (request: FastifyRequest, _reply: FastifyReply) => {
    if (!expected) throw new ApiProblem(404, 'not-found', 'there is nothing at this address');
    const token = bearer(request);
    if (!token) throw unauthorized('send the admin token as "Authorization: Bearer <token>"');
    const given = Buffer.from(sha256Hex(token), 'hex');
    if (!timingSafeEqual(given, expected)) throw unauthorized('the bearer token is not valid');
  };
}

export function requireClinic(request: FastifyRequest): ClinicConfig {
  if (!request.clinic) throw unauthorized('no clinic');
  return request.clinic;
}
