// Keycloak, the production-shaped stack's OpenID Connect provider: installed once into .tools/keycloak (built for
// PostgreSQL by scripts/install-keycloak.sh), run per stack from a home of its own (the install's libraries linked,
// its data folder the stack's), its realm imported from deploy/keycloak/journeys-realm.json on first start and kept
// in the stack's PostgreSQL. The realm file's ${...} placeholders (the demo users' passwords, the clients' secrets,
// the Web UI's URL) come from the stack's secrets through the environment.
import { cpSync, existsSync, mkdirSync, rmSync, symlinkSync } from 'node:fs';
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

/** The demo users, one per role. */
export const DEMO_USERS = [
  { username: 'viewer', role: 'journey-viewer' },
  { username: 'operator', role: 'journey-operator' },
  { username: 'admin', role: 'journey-admin' },
] as const;

export interface IdentitySecrets {
  /** Keycloak's own administrator (the master realm's bootstrap user). */
  keycloakAdminPassword: string;
  uiClientSecret: string;
  workerClientSecret: string;
  apiClientSecret: string;
  automationClientSecret: string;
  /** By demo user name. */
  passwords: Record<(typeof DEMO_USERS)[number]['username'], string>;
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

/**
 * The stack's Keycloak home: bin copied (kc.sh finds its home from where it lies), the built libraries, conf,
 * providers and themes linked to the install, data/ the stack's own with the realm file in data/import.
 */
export function prepareKeycloakHome(home: string): string {
  mkdirSync(path.join(home, 'data', 'import'), { recursive: true });
  rmSync(path.join(home, 'bin'), { recursive: true, force: true });
  cpSync(path.join(KEYCLOAK_INSTALL, 'bin'), path.join(home, 'bin'), { recursive: true });
  for (const part of ['lib', 'conf', 'providers', 'themes']) {
    const link = path.join(home, part);
    rmSync(link, { recursive: true, force: true });
    symlinkSync(path.join(KEYCLOAK_INSTALL, part), link);
  }
  cpSync(REALM_FILE, path.join(home, 'data', 'import', path.basename(REALM_FILE)));
  return home;
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
  port: number;
  managementPort: number;
  pg: { host: string; port: number; user: string; password: string };
  secrets: IdentitySecrets;
  uiUrl: string;
}): KeycloakCommand {
  const { secrets } = o;
  return {
    command: path.join(o.home, 'bin', 'kc.sh'),
    args: [
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
    env: {
      JAVA_OPTS_KC_HEAP: '-Xms64m -Xmx512m',
      KC_DB_URL: `jdbc:postgresql://${o.pg.host}:${o.pg.port}/${DATABASE}`,
      KC_DB_USERNAME: o.pg.user,
      KC_DB_PASSWORD: o.pg.password,
      KC_BOOTSTRAP_ADMIN_USERNAME: 'keycloak-admin',
      KC_BOOTSTRAP_ADMIN_PASSWORD: secrets.keycloakAdminPassword,
      // The realm file's placeholders.
      JOURNEYS_UI_URL: o.uiUrl,
      JOURNEYS_UI_CLIENT_SECRET: secrets.uiClientSecret,
      JOURNEYS_WORKER_CLIENT_SECRET: secrets.workerClientSecret,
      JOURNEYS_API_CLIENT_SECRET: secrets.apiClientSecret,
      JOURNEYS_AUTOMATION_CLIENT_SECRET: secrets.automationClientSecret,
      JOURNEYS_VIEWER_PASSWORD: secrets.passwords.viewer,
      JOURNEYS_OPERATOR_PASSWORD: secrets.passwords.operator,
      JOURNEYS_ADMIN_PASSWORD: secrets.passwords.admin,
    },
  };
}
