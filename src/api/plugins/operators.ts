// Who an operator is: access tokens checked against the identity provider (OIDC_ISSUER) when one is configured, each
// sign-in on the audit trail; refused sign-ins counted per source address (429 past API_SIGN_IN_FAILURES_PER_MINUTE).
import fp from 'fastify-plugin';
import { tokenVerifier } from '../../auth/tokens';
import { auditSignIns } from '../auth';
import type { ApiDeps } from '../deps';
import { SourceGuard } from '../source-guard';

/** Refused sign-ins of one address audited one by one in a minute; past them, in one record per address and minute. */
const SIGN_IN_REFUSALS_AUDITED_ALONE = 10;

export default fp<ApiDeps>(
  (app, deps, done) => {
    const { config, audit } = app;
    const oidc = config.codec.oidc;
    const tokens =
      deps.verifyOperator ??
      (oidc
        ? tokenVerifier({
            issuer: oidc.issuer,
            audience: oidc.audience,
            roleClaim: oidc.roleClaim,
            clockSkewSeconds: oidc.clockSkewSeconds,
            ...(oidc.jwksUrl ? { jwksUrl: oidc.jwksUrl } : {}),
          })
        : undefined);
    // Every sign-in with an access token (its first request to this process) is on the trail.
    app.decorate('verifyOperator', tokens && audit ? auditSignIns(tokens, audit) : tokens);
    const guard = new SourceGuard({
      maxFailures: config.api.signInFailuresPerMinute,
      windowMs: 60_000,
      auditEach: SIGN_IN_REFUSALS_AUDITED_ALONE,
      ...(audit ? { audit } : {}),
      now: () => app.now().getTime(),
    });
    app.decorate('signInGuard', guard);
    app.addHook('onClose', () => guard.close());
    done();
  },
  { name: 'operators', dependencies: ['core', 'audit-trail'] },
);
