// The audit trail (AUDIT_STORE): the file of AUDIT_FILE, or the table every process shares. Opened and checked before
// anything else starts (a table missing, or a role that could change it, stops the start); its head checkpointed;
// closed last.
import fp from 'fastify-plugin';
import { auditLogFrom, checkpointerFor, type AuditEvent } from '../../audit';
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
    // Its head checkpointed every minute and at stop (AUDIT_CHECKPOINTS), where its writers cannot rewrite it.
    const checkpointer = trail
      ? checkpointerFor(trail, config.audit, { warn: (msg, meta) => app.log.warn(meta, msg) })
      : undefined;
    try {
      await checkpointer?.start();
    } catch (err) {
      await trail?.close().catch(() => undefined);
      throw err;
    }
    app.decorate('auditTrail', trail);
    app.decorate('audit', trail ? (event: AuditEvent) => trail.append(event) : undefined);
    app.addHook('onClose', async () => {
      await checkpointer?.stop();
      await trail?.close();
    });
  },
  { name: 'audit-trail', dependencies: ['core'] },
);
