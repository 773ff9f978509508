/** The exam service's interface beside the control surface: the OpenAPI document and a page a person can read. */
import type { FastifyInstance } from 'fastify';
import { examServiceOpenApi } from '../../exam-service/openapi';

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

interface FormSchema {
  properties?: Record<string, unknown>;
  required?: string[];
  anyOf?: FormSchema[];
}
interface Operation {
  summary: string;
  requestBody: { content: { 'application/json': { schema: FormSchema } } };
}
interface Doc {
  openapi: string;
  info: { title: string; version: string; description: string };
  paths: Record<string, { post: Operation }>;
  webhooks: Record<string, { post: { summary: string } }>;
}

/** The request fields of an operation: its properties, or those of each form when it has several. */
function fieldList(schema: FormSchema): string {
  const forms = schema.anyOf ?? [schema];
  return forms
    .map((form) => {
      const required = new Set<string>(form.required ?? []);
      const names = Object.keys(form.properties ?? {}).map((n) =>
        required.has(n) ? `<b>${escapeHtml(n)}</b>` : escapeHtml(n),
      );
      return `<code>${names.join(', ')}</code>`;
    })
    .join('<br>or ');
}

function page(doc: Doc): string {
  const operations = Object.entries(doc.paths).map(([path, item]) => {
    const op = item.post;
    const schema = op.requestBody.content['application/json'].schema;
    return `<tr><td><code>POST ${escapeHtml(path)}</code></td><td>${escapeHtml(op.summary)}</td><td>${fieldList(schema)}</td></tr>`;
  });
  const hooks = Object.values(doc.webhooks).map((item) => `<li>${escapeHtml(item.post.summary)}</li>`);
  return `<!doctype html><meta charset="utf-8"><title>Exam service sandbox: interface</title>
<style>body{font-family:sans-serif;max-width:70rem;margin:2rem auto}td{vertical-align:top;padding:.3rem .6rem;border-top:1px solid #ddd}</style>
<h1>${escapeHtml(doc.info.title)} ${escapeHtml(doc.info.version)}</h1>
<p>${escapeHtml(doc.info.description)}</p>
<p>The whole document: <a href="/docs/openapi.json">/docs/openapi.json</a> (OpenAPI ${escapeHtml(doc.openapi)}).
The sandbox's own controls are under <code>/_sandbox</code>.</p>
<h2>Operations</h2><p>Request fields; required ones in bold.</p>
<table><tr><th>Path</th><th>What it does</th><th>Request fields</th></tr>${operations.join('')}</table>
<h2>Callbacks</h2><p>POSTed as JSON to the invite's <code>webhook_url</code>:</p><ul>${hooks.join('')}</ul>`;
}

export function docsRoutes() {
  const doc = examServiceOpenApi();
  const html = page(doc as unknown as Doc);
  return function register(app: FastifyInstance, _options: unknown, done: (err?: Error) => void): void {
    app.get('/docs/openapi.json', (_request, reply) => reply.send(doc));
    app.get('/docs', (_request, reply) => reply.type('text/html; charset=utf-8').send(html));
    done();
  };
}
