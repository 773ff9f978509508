// Keycloak, the production-shaped stack's OpenID Connect provider: installed once into .tools/keycloak (built for
// PostgreSQL by scripts/install-keycloak.sh), run per stack from a home of its own (the install's libraries linked,
// its data folder the stack's), its realm imported from deploy/keycloak/journeys-realm.json on first start and kept
// in the stack's PostgreSQL. The realm holds no people: each is added with `npm run add-person`. Keycloak gets no
// secret in its environment or on its command line: the database's and its administrator's passwords are in a
// configuration file of the home's (`kc.sh -cf`), the clients' secrets written into the copy of the realm it imports
// (the file's ${...} placeholders filled); both files mode 0600.
import { chmodSync, cpSync, existsSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Client } from 'pg';

const ROOT = path.resolve(__dirname, '../..');
const TOOLS = process.env.TEMPORAL_TOOLS_DIR ?? path.join(ROOT, '.tools');
export const KEYCLOAK_INSTALL = path.join(TOOLS, 'keycloak');
export const REALM_FILE = path.join(ROOT, 'deploy', 'keycloak', 'journeys-realm.json');
export const REALM = 'journeys';
/** Every token the realm issues names this audience (the codec server, the admin API and Temporal check it). */
export const AUDIENCE = 'journey-engine';
export const DATABASE = 'keycloak';

/** The realm's clients and their roles, as deploy/keycloak/journeys-realm.json defines them. */
export const CLIENTS = {
  ui: 'temporal-ui',
  ops: 'journey-ops',
  worker: 'journey-worker',
  api: 'journey-api',
  automation: 'journey-automation',
} as const;

/** The master realm's administrator, who adds people (`npm run add-person`); its password is a secret of the stack. */
export const KEYCLOAK_ADMIN = 'keycloak-admin';

export interface IdentitySecrets {
  /** Keycloak's own administrator (the master realm's bootstrap user). */
  keycloakAdminPassword: string;
  uiClientSecret: string;
  workerClientSecret: string;
  apiClientSecret: string;
  automationClientSecret: string;
}

export function keycloakInstalled(): boolean {
  return existsSync(path.join(KEYCLOAK_INSTALL, 'bin', 'kc.sh'));
}

export function issuerOf(port: number): string {
  return `http://127.0.0.1:${port}/realms/${REALM}`;
}

export function tokenUrlOf(port: number): string {
  return `${issuerOf(port)}/protocol/openid-connect/token`;
}

export function jwksUrlOf(port: number): string {
  return `${issuerOf(port)}/protocol/openid-connect/certs`;
}

/** Writes a file only its owner reads. */
function writePrivate(file: string, text: string) {
  writeFileSync(file, text, { mode: 0o600 });
  chmodSync(file, 0o600);
}

/** The realm file with its placeholders filled; an unknown placeholder is an error, not left for Keycloak. */
export function renderRealm(text: string, values: Record<string, string>): string {
  return text.replace(/\$\{([A-Z0-9_]+)\}/g, (_, name: string) => {
    const value = values[name];
    if (value === undefined) throw new Error(`the realm file names \${${name}}, which the stack does not set`);
    return JSON.stringify(value).slice(1, -1);
  });
}

/** A value of a Java properties file (keycloak.conf), escaped. */
function propertyValue(value: string): string {
  return value.replace(/\\/g, '\\\\').replace(/\n/g, '\\n');
}

export interface KeycloakHomeOptions {
  home: string;
  pg: { host: string; port: number; user: string; password: string };
  secrets: IdentitySecrets;
  uiUrl: string;
}

/**
 * The stack's Keycloak home: bin copied (kc.sh finds its home from where it lies), the built libraries, conf,
 * providers and themes linked to the install, data/ the stack's own with the realm in data/import (its secrets
 * filled in), and keycloak.conf with the database and the administrator. Returns the configuration file's path.
 */
export function prepareKeycloakHome(o: KeycloakHomeOptions): string {
  const { home, secrets } = o;
  mkdirSync(path.join(home, 'data', 'import'), { recursive: true, mode: 0o700 });
  chmodSync(home, 0o700);
  rmSync(path.join(home, 'bin'), { recursive: true, force: true });
  cpSync(path.join(KEYCLOAK_INSTALL, 'bin'), path.join(home, 'bin'), { recursive: true });
  for (const part of ['lib', 'conf', 'providers', 'themes']) {
    const link = path.join(home, part);
    rmSync(link, { recursive: true, force: true });
    symlinkSync(path.join(KEYCLOAK_INSTALL, part), link);
  }
  const realm = renderRealm(readFileSync(REALM_FILE, 'utf8'), {
    JOURNEYS_UI_URL: o.uiUrl,
    JOURNEYS_UI_CLIENT_SECRET: secrets.uiClientSecret,
    JOURNEYS_WORKER_CLIENT_SECRET: secrets.workerClientSecret,
    JOURNEYS_API_CLIENT_SECRET: secrets.apiClientSecret,
    JOURNEYS_AUTOMATION_CLIENT_SECRET: secrets.automationClientSecret,
  });
  writePrivate(path.join(home, 'data', 'import', path.basename(REALM_FILE)), realm);
  const conf = path.join(home, 'keycloak.conf');
  const settings = {
    'db-url': `jdbc:postgresql://${o.pg.host}:${o.pg.port}/${DATABASE}`,
    'db-username': o.pg.user,
    'db-password': o.pg.password,
    'bootstrap-admin-username': KEYCLOAK_ADMIN,
    'bootstrap-admin-password': secrets.keycloakAdminPassword,
  };
  writePrivate(
    conf,
    Object.entries(settings)
      .map(([k, v]) => `${k}=${propertyValue(v)}\n`)
      .join(''),
  );
  return conf;
}
/** Creates a database (Keycloak's, by default) in the stack's PostgreSQL when missing. */
export async function ensureDatabase(
  pg: { host: string; port: number; user: string; password: string },
  name: string = DATABASE,
) {
  if (!/^[a-z_][a-z0-9_]*$/.test(name)) throw new Error(`not a plain database name: ${name}`);
  const client = new Client({ ...pg, database: 'postgres' });
  await client.connect();
  try {
    const found = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
    if (found.rowCount === 0) await client.query(`CREATE DATABASE "${name}"`);
  } finally {
    await client.end();
  }
}

export interface KeycloakCommand {
  command: string;
  args: string[];
  env: Record<string, string>;
}

/** `kc.sh start --optimized` on loopback, the realm imported (once: a realm already there is kept). */
export function keycloakCommand(o: {
  home: string;
  /** prepareKeycloakHome's configuration file. */
  configFile: string;
  port: number;
  managementPort: number;
}): KeycloakCommand {
  return {
    command: path.join(o.home, 'bin', 'kc.sh'),
    args: [
      '--config-file',
      o.configFile,
      'start',
      '--optimized',
      '--import-realm',
      // Loopback only, plain HTTP: a deployment puts TLS in front (docs/deploy.md).
      '--http-enabled=true',
      '--http-host=127.0.0.1',
      `--http-port=${o.port}`,
      `--http-management-port=${o.managementPort}`,
      `--hostname=http://127.0.0.1:${o.port}`,
      '--log-level=warn',
      '--log-console-output=json',
    ],
    env: { JAVA_OPTS_KC_HEAP: '-Xms64m -Xmx512m' },
  };
}
