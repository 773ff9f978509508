// The erasures of patients (api/patient-erasure.ts): requests kept in the patient key store, carried out in the
// background; those left pending (the API stopped, another replica's) taken up once the app is ready and every 30 s.
// Absent when the deployment keeps no per-patient keys.
import fp from 'fastify-plugin';
import type { ApiDeps } from '../deps';
import { PatientErasures } from '../patient-erasure';

export default fp<ApiDeps>(
  (app, deps, done) => {
    const keys = app.patientKeys;
    const erasures = keys
      ? new PatientErasures({
          keys,
          temporal: deps.temporal,
          attachments: app.attachments,
          deadLetters: app.callbacks.inbox.deadLetters,

          log: app.log,
        })
      : undefined;
    app.decorate('patientErasures', erasures);
    if (erasures && deps.startForwarder !== false) {
      app.addHook('onReady', (ready) => {
        erasures.start();
        ready();
      });
    }
    app.addHook('onClose', async () => {
      await erasures?.close();
    });
    done();
  },
  { name: 'patient-erasures', dependencies: ['core', 'audit-trail', 'patient-keys', 'uploads', 'callback-path'] },
);
