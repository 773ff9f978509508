// The audit trail (AUDIT_STORE): the file of AUDIT_FILE, or the table every process shares. Opened and checked before
// anything else starts (a table missing, or a role that could change it, stops the start); closed last.
import fp from 'fastify-plugin';
import { auditLogFrom, type AuditEvent } from '../../audit';
import type { ApiDeps } from '../deps';

export default fp<ApiDeps>(
  async (app, { config }) => {
    const trail = auditLogFrom(config.audit, { applicationName: 'journey-api audit' });
    try {
      await trail?.init();
    } catch (err) {
      await trail?.close().catch(() => undefined);
      throw err;
    }
    app.decorate('auditTrail', trail);
    app.decorate('audit', trail ? (event: AuditEvent) => trail.append(event) : undefined);
    app.addHook('onClose', async () => {
      await trail?.close();
    });
  },
  { name: 'audit-trail', dependencies: ['core'] },
);
