// Documents clinics upload (ATTACHMENTS_STORE: files or the S3 store), and the sweep of uploads no journey took: each
// deleted once older than ATTACHMENTS_ORPHAN_GRACE_MS, at start and every hour (any replica; on the audit trail).
import fp from 'fastify-plugin';
import { createAttachmentStore } from '../../attachments';
import type { ApiDeps } from '../deps';
import { sweepOrphanUploads } from '../orphan-uploads';

export default fp<ApiDeps>(
  (app, deps, done) => {
    // Documents whose patient is known are sealed under the patient's data key (the patient keys' plugin, before).
    app.decorate('attachments', deps.attachments ?? createAttachmentStore(app.config, app.sealer, app.patientKeys));
    if (app.config.attachmentOrphanGraceMs <= 0 || deps.startForwarder === false) return done();
    let timer: NodeJS.Timeout | undefined;
    const sweep = () =>
      sweepOrphanUploads(app).then(
        ({ deleted, stale }) => {
          if (deleted + stale > 0) app.log.info({ deleted, stale }, 'uploads no journey took deleted');
        },
        (err: unknown) => app.log.warn({ err }, 'orphan upload sweep failed; the next one tries again'),
      );
    app.addHook('onReady', (hookDone) => {
      void sweep();
      timer = setInterval(() => void sweep(), 3_600_000).unref();
      hookDone();
    });
    app.addHook('onClose', (_app, hookDone) => {
      clearInterval(timer);
      hookDone();
    });
    done();
  },
  { name: 'uploads', dependencies: ['core', 'audit-trail', 'journeys', 'patient-keys'] },
);
