// The API's OpenAPI document (GET /docs/json, the UI at /docs), generated from the routes' zod schemas.
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import fp from 'fastify-plugin';
import { jsonSchemaTransform, jsonSchemaTransformObject } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { PharmacySearchForms } from '../schemas';

type Operation = { parameters?: Record<string, unknown>[]; responses?: Record<string, unknown> };
type Document = { paths?: Record<string, Record<string, Operation>> };

/** Error answers are application/problem+json (what the API sends), not the generator's application/json. */
function problemMediaType<T>(document: T): T {
  const paths = (document as { paths?: Record<string, Record<string, { responses?: Record<string, unknown> }>> }).paths;
  for (const operations of Object.values(paths ?? {})) {
    for (const operation of Object.values(operations)) {
      for (const [status, response] of Object.entries(operation.responses ?? {})) {
        const content = (response as { content?: Record<string, unknown> }).content;
        if (Number(status) < 400 || !content?.['application/json']) continue;
        content['application/problem+json'] = content['application/json'];
        delete content['application/json'];
      }
    }
  }
  return document;
}

/**
 * The pharmacy search's query as one object in form style (`?city=Austin&state=TX`, as OpenAPI serializes a query
 * object by default), so that its two forms can be said as JSON Schema says them: `oneOf` form A, form B.
 */
function pharmacySearchForms<T>(document: T): T {
  const search = (document as Document).paths?.['/v1/catalog/pharmacies/search']?.get;
  if (!search) return document;
  const {
    $schema: _dialect,
    anyOf,
    ...rest
  } = z.toJSONSchema(PharmacySearchForms, { io: 'input' }) as Record<string, unknown>;
  search.parameters = [
    {
      name: 'form',
      in: 'query',
      required: true,
      style: 'form',
      explode: true,
      description: 'The search: its fields are the query parameters (`?ncpdpid=4512345`, `?city=Austin&state=TX`)',
      schema: { ...rest, oneOf: anyOf, examples: [{ ncpdpid: '4512345' }, { city: 'Austin', state: 'TX' }] },
    },
  ];
  return document;
}

/** The largest integer JSON numbers carry exactly: the event numbers the webhook reads. */
const SAFE_INTEGER = Number.MAX_SAFE_INTEGER;

/**
 * The webhook's body as the document says it: the route reads any body as text (a body it cannot read is still kept),
 * so its schema is the document's only. What it acknowledges: a JSON object with an event number, in any layout the
 * service is known to send (docs/exam-service.md), nested at most 32 levels.
 */
function webhookBody<T>(document: T): T {
  const webhook = (document as Document).paths?.['/webhooks/exam-service/{journeyId}/{token}']?.post;
  if (!webhook) return document;
  (webhook as Record<string, unknown>).requestBody = {
    required: true,
    content: {
      'application/json': {
        schema: {
          type: 'object',
          description:
            "The exam service's callback (events 1, 2, 3; the rest of the body in the service's layout, kept as " +
            'sent); nested at most 32 levels',
          required: ['event'],
          properties: {
            event: {
              description: 'The event number: 1 consultation complete, 2 prescription confirmed, 3 package shipped',
              oneOf: [
                { type: 'integer', minimum: -SAFE_INTEGER, maximum: SAFE_INTEGER },
                { type: 'string', pattern: '^\\s*-?\\d{1,9}\\s*$' },
              ],
            },
          },
          examples: [{ event: 1, patient_exam_id: 90001, exam_status: 'Approved' }],
        },
      },
    },
  };
  return document;
}

export default fp(
  async (app) => {
    await app.register(swagger, {
      openapi: {
        openapi: '3.1.0',
        info: {
          title: 'Patient journey engine',
          version: '1.0.0',
          description:
            'Clinic API (/v1), the exam-service webhook receiver, operator routes (/admin) and operations. Errors are ' +
            'application/problem+json (RFC 9457). A request the schema of its operation calls valid is refused only ' +
            'for one of the rules the operation lists under `x-rules` (JSON Schema cannot say them: they depend on ' +
            "the clinic's exam list, another field or today's date): a 400 names the rule in `errors[].rule`, and a " +
            'rule the exam service judges is its 422. A method an address does not serve is answered 405 with ' +
            '`Allow` naming those it does.',
        },
        components: {
          securitySchemes: {
            bearerAuth: { type: 'http', scheme: 'bearer', description: "a clinic's API token" },
            adminAuth: {
              type: 'http',
              scheme: 'bearer',
              description:
                "the operator's access token from the identity provider (OIDC_ISSUER), or the admin token " +
                '(ADMIN_TOKEN_SHA256), which names nobody: its requests say who reads or acts in an `X-Actor` ' +
                'header (an operator name or a ticket, never patient data), required for reads of dead letters and ' +
                'of the audit trail',
            },
          },
        },
      },
      transform: jsonSchemaTransform,
      transformObject: (input) => webhookBody(pharmacySearchForms(problemMediaType(jsonSchemaTransformObject(input)))),
    });
    await app.register(swaggerUi, { routePrefix: '/docs' });
  },
  { name: 'openapi' },
);
