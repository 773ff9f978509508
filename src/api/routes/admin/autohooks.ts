// What every /admin route shares: the operator signs in (an access token from the identity provider, or the admin
// token), refusals audited and counted per source. Each route file asks for the roles it needs.
import type { FastifyInstance } from 'fastify';
import { adminAuth } from '../../auth';

export default function operatorSignIn(app: FastifyInstance, _options: unknown, done: () => void): void {
  app.addHook(
    'onRequest',
    adminAuth(app.config, { verify: app.verifyOperator, audit: app.audit, guard: app.signInGuard }),
  );
  done();
}
