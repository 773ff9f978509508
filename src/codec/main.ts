// `npm run codec`: the codec server the Temporal UI calls to show decrypted payloads to operators.
import { readFileSync } from 'node:fs';
import { loadAuditConfig, loadCodecConfig, loadPatientKeyConfig } from '../config';
import { patientKeysFrom } from '../patient-keys/from-settings';
import { EncryptionCodec } from './encryption-codec';
import { PatientCodec } from './patient-codec';
import { asStackPart } from '../part-lifecycle';
import { auditLogFrom, checkpointerFor, type AuditEvent } from '../audit';
import { tokenVerifier } from '../auth/tokens';
import { codecAllowedHosts } from './host-check';
import { buildCodecServer } from './server';

async function main() {
  const config = loadCodecConfig();
  if (config.codec.keys.length === 0) throw new Error('PAYLOAD_ENCRYPTION_KEYS is required by the codec server');
  const { oidc, auditFile } = config.codec;
  // The shared trail (AUDIT_STORE=postgres) when there is one, else its own file (CODEC_AUDIT_FILE).
  const { audit: store } = loadAuditConfig();
  const settings =
    store.store === 'postgres' ? store : { store: 'file' as const, file: auditFile, checkpoints: store.checkpoints };
  const audit = auditLogFrom(settings, { applicationName: 'journey-codec audit' });
  await audit?.init();
  // Its head checkpointed every minute and at stop (AUDIT_CHECKPOINTS), where its writers cannot rewrite it.
  const checkpointer = audit
    ? checkpointerFor(audit, settings, {
        warn: (message, meta) => console.warn(JSON.stringify({ level: 'warn', msg: message, ...meta })),
      })
    : undefined;
  await checkpointer?.start();
  // Per-patient keys, read only: a journey's payloads open with its patient's key, and read `[erased]` once the key
  // is destroyed.
  const { patientKeys: keySettings } = loadPatientKeyConfig();
  const patientKeys = patientKeysFrom(keySettings, {
    ring: config.codec.keys,
    writer: false,
    applicationName: 'journey-codec patient keys',
  });
  await patientKeys?.init();
  const master = new EncryptionCodec(config.codec.keys);
  const { tls } = config.codec;
  const allowedHosts = codecAllowedHosts(config.codec);
  const app = buildCodecServer({
    ...(tls ? { https: { cert: readFileSync(tls.certFile), key: readFileSync(tls.keyFile) } } : {}),
    codec: patientKeys ? new PatientCodec(patientKeys, master, { erased: 'marker' }) : master,
    corsOrigins: config.codec.corsOrigins,
    ...(allowedHosts ? { allowedHosts } : {}),
    ...(config.codec.serverToken ? { token: config.codec.serverToken, tokenName: config.codec.serverTokenName } : {}),
    ...(oidc
      ? {
          oidc: {
            verify: tokenVerifier({
              issuer: oidc.issuer,
              audience: oidc.audience,
              roleClaim: oidc.roleClaim,
              clockSkewSeconds: oidc.clockSkewSeconds,
              ...(oidc.jwksUrl ? { jwksUrl: oidc.jwksUrl } : {}),
            }),
            decodeRoles: oidc.decodeRoles,
          },
        }
      : {}),
    ...(audit ? { audit: (event: AuditEvent) => audit.append(event) } : {}),
    warn: (message, meta) => console.warn(JSON.stringify({ level: 'warn', msg: message, ...meta })),
  });
  await app.listen({ host: config.codec.serverHost, port: config.codec.serverPort });
  const hosts = allowedHosts?.join(', ') ?? 'any';
  console.log(
    `codec server on ${tls ? 'https' : 'http'}://${config.codec.serverHost}:${config.codec.serverPort} (keys: ${config.codec.keys
      .map((k) => k.id)
      .join(', ')}; CORS: ${config.codec.corsOrigins.join(', ')}; Host: ${hosts}; callers: ${
      oidc
        ? `access tokens of ${oidc.issuer}, decode roles ${oidc.decodeRoles.join(', ')}`
        : config.codec.serverToken
          ? 'a static token'
          : 'anyone on this host'
    }${store.store === 'postgres' ? '; audit trail: the shared table' : auditFile ? `; audit trail ${auditFile}` : ''}; ` +
      `patient keys: ${keySettings.store === 'off' ? 'off' : keySettings.store})`,
  );
  const stop = () =>
    void app
      .close()
      .then(() => checkpointer?.stop())
      .then(() => patientKeys?.close())
      .then(() => audit?.close())
      .then(() => process.exit(0));
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
  asStackPart(5_000, (message) => console.log(message));
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
