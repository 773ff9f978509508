// The secrets and the demo clinic of a stack started on this machine, made once and kept (mode 0600) in its data
// folder, so a stack started again on the same folder reads its journeys, its inbox and its attachments back.
import { createHash, randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { DEMO_API_KEY } from '../../src/sandbox/seed';
import type { IdentitySecrets } from './keycloak';

export const DEMO_CLINIC_ID = 'demo-clinic';
export const DEMO_CLINIC_TOKEN = 'demo-clinic-token';
/**
 * The local stack only (`npm start`): the admin routes (dead letters, replays) answer this bearer token, which is
 * public. The production-shaped stack makes its own (stackAdminToken), or has none beside its identity provider.
 */
export const LOCAL_ADMIN_TOKEN = 'local-admin-token';

export interface StackSecrets {
  webhookSecret: string;
  notificationSecret: string;
  payloadEncryptionKeys: string;
  /** The object store's root credentials (the production-shaped stack only). */
  objectStoreAccessKey?: string;
  objectStoreSecretKey?: string;
  /** The PostgreSQL cluster's backup store's root credentials: none of the engine's processes holds them. */
  backupStoreAccessKey?: string;
  backupStoreSecretKey?: string;
  /** The codec server's token (the production-shaped stack: automation's static token, header only). */
  codecServerToken?: string;
  /** The audit trail's writer role's password (the production-shaped stack). */
  auditWriterPassword?: string;
  /** The callback inbox's role's password (the production-shaped stack). */
  inboxPassword?: string;
  /** The patient keys' role's password (the production-shaped stack). */
  patientKeysPassword?: string;
  /** The Temporal server's role's password (the production-shaped stack): it owns Temporal's two databases. */
  temporalDatabasePassword?: string;
  /** Keycloak's role's password (the production-shaped stack): it owns Keycloak's database. */
  keycloakDatabasePassword?: string;
  /** The identity provider's secrets (the production-shaped stack's Keycloak): its administrator's, the clients'. */
  identity?: IdentitySecrets;
}

/** Reads the folder's secrets, making whatever is missing (older folders get the newer secrets on first use). */
export function stackSecrets(dataDir: string): StackSecrets {
  mkdirSync(dataDir, { recursive: true });
  const file = path.join(dataDir, 'local-secrets.json');
  const kept = existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as Partial<StackSecrets>) : {};
  const secrets: StackSecrets = {
    webhookSecret: kept.webhookSecret ?? randomBytes(32).toString('base64url'),
    notificationSecret: kept.notificationSecret ?? `whsec_${randomBytes(24).toString('base64')}`,
    payloadEncryptionKeys: kept.payloadEncryptionKeys ?? `local-1:${randomBytes(32).toString('base64')}`,
    objectStoreAccessKey: kept.objectStoreAccessKey ?? `journeys-${randomBytes(4).toString('hex')}`,
    objectStoreSecretKey: kept.objectStoreSecretKey ?? randomBytes(24).toString('base64url'),
    backupStoreAccessKey: kept.backupStoreAccessKey ?? `backups-${randomBytes(4).toString('hex')}`,
    backupStoreSecretKey: kept.backupStoreSecretKey ?? randomBytes(24).toString('base64url'),
    codecServerToken: kept.codecServerToken ?? randomBytes(24).toString('base64url'),
    auditWriterPassword: kept.auditWriterPassword ?? randomBytes(24).toString('base64url'),
    inboxPassword: kept.inboxPassword ?? randomBytes(24).toString('base64url'),
    patientKeysPassword: kept.patientKeysPassword ?? randomBytes(24).toString('base64url'),
    temporalDatabasePassword: kept.temporalDatabasePassword ?? randomBytes(24).toString('base64url'),
    keycloakDatabasePassword: kept.keycloakDatabasePassword ?? randomBytes(24).toString('base64url'),
    identity: identitySecrets(kept.identity),
  };
  if (JSON.stringify(secrets) !== JSON.stringify(kept)) {
    writeFileSync(file, JSON.stringify(secrets, null, 2), { mode: 0o600 });
  }
  return secrets;
}

/** The stack's secrets folder: one file per secret, each mode 0600, in a folder only its owner may enter. */
export function stackSecretsDir(dataDir: string): string {
  const dir = path.join(dataDir, 'secrets');
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  chmodSync(dir, 0o700);
  return dir;
}

/**
 * Writes each secret to a file of its own in the secrets folder (mode 0600), for a process to read through its
 * `NAME_FILE` setting instead of its environment; returns each file's path by name.
 */
export function writeSecretFiles<K extends string>(dataDir: string, secrets: Record<K, string>): Record<K, string> {
  const dir = stackSecretsDir(dataDir);
  const files = {} as Record<K, string>;
  for (const [name, value] of Object.entries(secrets) as [K, string][]) {
    const file = path.join(dir, name);
    writeFileSync(file, `${value}\n`, { mode: 0o600 });
    chmodSync(file, 0o600);
    files[name] = file;
  }
  return files;
}

/** Where the production-shaped stack keeps the admin routes' token it made. */
export function adminTokenFile(dataDir: string): string {
  return path.join(dataDir, 'secrets', 'admin_token');
}

/**
 * The production-shaped stack's admin token: random, made once and kept in the secrets folder (mode 0600). Beside an
 * identity provider there is none (admins sign in): `undefined`, and a token kept from an earlier start is removed.
 */
export function stackAdminToken(dataDir: string, make: boolean): string | undefined {
  const file = adminTokenFile(dataDir);
  if (!make) {
    rmSync(file, { force: true });
    return undefined;
  }
  if (existsSync(file)) {
    const kept = readFileSync(file, 'utf8').trim();
    if (kept.length >= 32) return kept;
  }
  const token = randomBytes(32).toString('base64url');
  writeSecretFiles(dataDir, { admin_token: token });
  return token;
}

/** Keycloak's secrets: the ones kept, the missing ones made (a realm imported once keeps the first ones). */
function identitySecrets(kept: Partial<IdentitySecrets> | undefined): IdentitySecrets {
  const make = () => randomBytes(18).toString('base64url');
  return {
    keycloakAdminPassword: kept?.keycloakAdminPassword ?? make(),
    uiClientSecret: kept?.uiClientSecret ?? make(),
    workerClientSecret: kept?.workerClientSecret ?? make(),
    apiClientSecret: kept?.apiClientSecret ?? make(),
    automationClientSecret: kept?.automationClientSecret ?? make(),
  };
}

/** The clinics file with the demo clinic (the sandbox's demo api_key unless another service's key is given). */
export function writeDemoClinics(
  dataDir: string,
  secrets: StackSecrets,
  o: { name?: string; examServiceApiKey?: string } = {},
): string {
  const file = path.join(dataDir, 'clinics.json');
  const clinics = [
    {
      clinicId: DEMO_CLINIC_ID,
      name: o.name ?? 'Demo Clinic (sandbox)',
      examServiceApiKey: o.examServiceApiKey ?? DEMO_API_KEY,
      apiTokenSha256: [sha256(DEMO_CLINIC_TOKEN)],
      notificationSecret: secrets.notificationSecret,
    },
  ];
  writeFileSync(file, JSON.stringify(clinics, null, 2), { mode: 0o600 });
  return file;
}

export function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

/** The Temporal CLI's spelling of a search attribute type (`KEYWORD` -> `Keyword`). */
export function searchAttributeTypeName(type: string): string {
  const names: Record<string, string> = {
    KEYWORD: 'Keyword',
    KEYWORD_LIST: 'KeywordList',
    BOOL: 'Bool',
    TEXT: 'Text',
    INT: 'Int',
    DOUBLE: 'Double',
    DATETIME: 'Datetime',
  };
  return names[type] ?? type;
}

/**
 * The stack's own Temporal client profile (an empty temporal.toml in its data folder), so the engine it starts does
 * not take the CLI's default profile of the person running it (a cloud API key or TLS settings meant for another
 * server). The address comes from TEMPORAL_ADDRESS as before.
 */
export function stackTemporalProfile(dataDir: string): string {
  mkdirSync(dataDir, { recursive: true });
  const file = path.join(dataDir, 'temporal.toml');
  if (!existsSync(file)) {
    writeFileSync(
      file,
      "# The stack's Temporal client profile: empty, so the engine does not read your CLI's default profile.\n" +
        '[profile.default]\n',
    );
  }
  return file;
}
