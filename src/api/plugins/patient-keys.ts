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
    // After a master key rotation (a new first key in PAYLOAD_ENCRYPTION_KEYS), every patient's data key is wrapped
    // again by it, in the background (each on the record; replicas doing it at once change each key once). An older
    // master key may leave the ring once this says none is left under it (docs/operations.md).
    if (keys) {
      app.addHook('onReady', (ready) => {
        void keys.rewrap().then(
          ({ rewrapped, unreadable }) => {
            if (rewrapped + unreadable > 0) {
              app.log.info({ rewrapped, unreadable }, 'patient data keys wrapped again by the active master key');
            }
            if (unreadable > 0) {
              app.log.error(
                { unreadable },
                'patient data keys wrapped by a master key no longer in the ring: put it back (their payloads are unreadable)',
              );
            }
          },
          (err: unknown) =>
            app.log.warn({ err }, 'patient data keys could not be rewrapped; the next start tries again'),
        );
        ready();
      });
    }
    app.addHook('onClose', async () => {
      await keys?.close();
    });
  },
  { name: 'patient-keys', dependencies: ['core', 'audit-trail'] },
);
