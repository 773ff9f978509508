// The API's OpenAPI document (GET /docs/json, the UI at /docs), generated from the routes' zod schemas.
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import fp from 'fastify-plugin';
import { jsonSchemaTransform, jsonSchemaTransformObject } from 'fastify-type-provider-zod';

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

export default fp(
  async (app) => {
    await app.register(swagger, {
      openapi: {
        openapi: '3.1.0',
        info: {
          title: 'Patient journey engine',
          version: '1.0.0',
          description:
            'Clinic API (/v1), the exam-service webhook receiver, operator routes (/admin) and operations. Errors are application/problem+json (RFC 9457).',
        },
        components: {
          securitySchemes: {
            bearerAuth: { type: 'http', scheme: 'bearer', description: "a clinic's API token" },
            adminAuth: { type: 'http', scheme: 'bearer', description: 'the operator token' },
          },
        },
      },
      transform: jsonSchemaTransform,
      transformObject: (input) => problemMediaType(jsonSchemaTransformObject(input)),
    });
    await app.register(swaggerUi, { routePrefix: '/docs' });
  },
  { name: 'openapi' },
);
