// Per-patient data keys (PATIENT_KEY_STORE): opened once the audit trail is (each key made or destroyed goes on it
// first), the erasure log re-applied before anything is served; the API writes the file store (the worker and the
// codec server read it). Handed to the Temporal client, which was made before (PatientKeysWhenReady).
import fp from 'fastify-plugin';
import { patientKeysFrom } from '../../patient-keys/from-settings';
import type { ApiDeps } from '../deps';

export default fp<ApiDeps>(
  async (app, { config, patientKeys: given, patientKeysReady }) => {
    let keys = given;
    try {
      keys ??= patientKeysFrom(config.patientKeys, {
        ring: config.codec.keys,
        ...(app.audit ? { audit: (e) => Promise.resolve(app.audit!(e)) } : {}),
        writer: true,
        applicationName: 'journey-api patient keys',
      });
      const reapplied = await keys?.init();
      if (reapplied?.reDestroyed.length) {
        app.log.warn(
          { keys: reapplied.reDestroyed.length },
          'patient keys erased before a restore were back in the store: destroyed again',
        );
      }
    } catch (err) {
      patientKeysReady?.fail(err);
      await keys?.close().catch(() => undefined);
      throw err;
    }
    patientKeysReady?.provide(keys);
    app.decorate('patientKeys', keys);
    app.addHook('onClose', async () => {
      await keys?.close();
    });
  },
  { name: 'patient-keys', dependencies: ['core', 'audit-trail'] },
);
