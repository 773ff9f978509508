// The callback path (inbox/callback-path.ts) in the app: opened with it, its forwarder and dead-letter retention
// started once the app is ready, stopped when the app closes (after the listener: no new callback comes in while the
// forwarder finishes its claim).
import fp from 'fastify-plugin';
import { CallbackPath } from '../../inbox/callback-path';
import type { ApiDeps } from '../deps';

export default fp<ApiDeps>(
  async (app, deps) => {
    const callbacks = new CallbackPath({
      config: deps.config,
      temporal: deps.temporal,
      sealer: app.sealer,
      metrics: app.metrics,
      log: app.log,
      now: app.now,
      ...(deps.inbox ? { inbox: deps.inbox } : {}),
      ...(deps.signal ? { signal: deps.signal } : {}),
      ...(deps.forwarderMinBackoffMs !== undefined ? { forwarderMinBackoffMs: deps.forwarderMinBackoffMs } : {}),
      ...(app.audit ? { audit: app.audit } : {}),
      ...(app.patientKeys ? { patientKeys: app.patientKeys } : {}),
      ...(deps.measureWithout ? { measureWithout: deps.measureWithout } : {}),
    });
    await callbacks.init();
    app.decorate('callbacks', callbacks);
    if (deps.startForwarder !== false) {
      app.addHook('onReady', (done) => {
        callbacks.start();
        done();
      });
    }
    app.addHook('onClose', () => callbacks.stop());
  },
  { name: 'callback-path', dependencies: ['core', 'audit-trail', 'patient-keys'] },
);
