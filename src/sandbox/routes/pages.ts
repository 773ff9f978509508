/** What the links in the service's answers point at: the meeting page and the expiring exam record PDF. */
import type { FastifyInstance } from 'fastify';
import type { SandboxContext } from '../context';

const MINIMAL_PDF = Buffer.from(
  '%PDF-1.4\n1 0 obj<</Type/Catalog/Pages 2 0 R>>endobj\n2 0 obj<</Type/Pages/Kids[3 0 R]/Count 1>>endobj\n' +
    '3 0 obj<</Type/Page/Parent 2 0 R/MediaBox[0 0 612 792]>>endobj\ntrailer<</Root 1 0 R>>\n%%EOF\n',
);

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

export function pageRoutes(ctx: SandboxContext) {
  return function register(app: FastifyInstance, _options: unknown, done: (err?: Error) => void): void {
    app.get<{ Params: { uuid: string } }>('/meeting/:uuid', (request, reply) => {
      const meeting = ctx.store.meetings.get(request.params.uuid);
      if (!meeting) return reply.code(404).type('text/html').send('<h1>No such meeting</h1>');
      const rows = meeting.patient_exam_ids
        .map((id) => ctx.store.patientExam(id))
        .filter((r) => r !== undefined)
        .map(
          (r) => `<li>${escapeHtml(r.exam_title)} (patient exam ${r.patient_exam_id}): ${escapeHtml(r.status)}</li>`,
        );
      return reply
        .type('text/html')
        .send(`<!doctype html><title>Sandbox meeting</title><h1>Sandbox meeting</h1><ul>${rows.join('')}</ul>`);
    });

    app.get<{ Params: { file: string } }>('/records/:file', (request, reply) => {
      const token = request.params.file.replace(/\.pdf$/, '');
      const link = ctx.lifecycle.resolveRecordLink(token);
      if (link === 'unknown') return reply.code(404).send({ http_code: 404, error_message: 'No such exam record.' });
      if (link === 'expired') return reply.code(410).send({ http_code: 410, error_message: 'This link has expired.' });
      return reply.type('application/pdf').send(MINIMAL_PDF);
    });
    done();
  };
}
