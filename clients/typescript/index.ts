// A typed client of the clinic API for TypeScript programs: openapi-fetch over the types openapi-typescript generated
// from the API's OpenAPI document (./clinic-api.ts, `npm run client:generate`). Paths, parameters, bodies and answers
// are the document's: a field the API does not have does not compile.
//
//   const api = createClinicClient({ baseUrl: 'http://127.0.0.1:3000', token: 'demo-clinic-token' });
//   const { data, error, response } = await api.GET('/v1/journeys/{journeyId}', { params: { path: { journeyId } } });
import createClient, { type Client, type ClientOptions } from 'openapi-fetch';
import type { components, paths } from './clinic-api';

export type { components, paths };
export type ClinicClient = Client<paths>;
export type Problem = components['schemas']['Problem'];

export interface ClinicClientOptions extends Omit<ClientOptions, 'baseUrl' | 'querySerializer'> {
  /** Where the API answers, e.g. http://127.0.0.1:3000 (without /v1). */
  baseUrl: string;
  /** The clinic's API token (sent as `Authorization: Bearer`). */
  token: string;
}

export function createClinicClient({ baseUrl, token, headers, ...rest }: ClinicClientOptions): ClinicClient {
  return createClient<paths>({
    baseUrl: baseUrl.replace(/\/+$/, ''),
    headers: { ...(headers as Record<string, string> | undefined), authorization: `Bearer ${token}` },
    // A query object's fields are the query parameters (OpenAPI's form style, which the document says): the pharmacy
    // search's `form` is `?city=Austin&state=TX`, not `form[city]=...`.
    querySerializer: { object: { style: 'form', explode: true } },
    ...rest,
  });
}
