// `npm run add-person -- --username <name> --role <viewer|operator|admin>`: a person of their own in the identity
// provider's realm (Keycloak's admin API), which holds no shared accounts: a temporary password they must change
// at their first sign-in, and for operators and admins (who read patient data or act on journeys) a second factor
// (TOTP) they must set up then and give at every sign-in after. The temporary password is printed once, to hand over
// by a channel of its own; never a patient's data in a username or e-mail.
//
//   KEYCLOAK_ADMIN_PASSWORD_FILE=deploy/secrets/keycloak_admin_password \
//     npm run add-person -- --keycloak http://127.0.0.1:8180 --username alice.ops --email alice@clinic.example --role operator
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { exitWith, parseCommandLine, UsageError } from './lib/cli';
import { KEYCLOAK_ADMIN } from './lib/keycloak';

export const PERSON_ROLES = { viewer: 'journey-viewer', operator: 'journey-operator', admin: 'journey-admin' } as const;
export type PersonRole = keyof typeof PERSON_ROLES;

export interface AddPersonOptions {
  /** Keycloak's base URL (where /realms and /admin are). */
  keycloak: string;
  realm: string;
  username: string;
  email?: string;
  role: PersonRole;
  /** The master realm's administrator. */
  admin: { username: string; password: string };
}

const USAGE = `Usage:
  npm run add-person -- --username <name> --role <viewer|operator|admin> [--email <address>]
      [--keycloak <url>] [--realm <realm>]
  The administrator: KEYCLOAK_ADMIN (default keycloak-admin) and KEYCLOAK_ADMIN_PASSWORD or KEYCLOAK_ADMIN_PASSWORD_FILE.`;

/** The person's first sign-in: a new password, and for operators and admins a second factor. */
export function requiredActions(role: PersonRole): string[] {
  return role === 'viewer' ? ['UPDATE_PASSWORD'] : ['UPDATE_PASSWORD', 'CONFIGURE_TOTP'];
}

async function adminToken(o: AddPersonOptions): Promise<string> {
  const res = await fetch(`${o.keycloak}/realms/master/protocol/openid-connect/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      grant_type: 'password',
      client_id: 'admin-cli',
      username: o.admin.username,
      password: o.admin.password,
    }),
  });
  if (!res.ok) throw new Error(`the administrator could not sign in to ${o.keycloak} (HTTP ${res.status})`);
  return ((await res.json()) as { access_token: string }).access_token;
}

/** Creates the person with a temporary password and their role; the password, to hand over. */
export async function addPerson(o: AddPersonOptions): Promise<{ id: string; temporaryPassword: string }> {
  const token = await adminToken(o);
  const api = `${o.keycloak}/admin/realms/${encodeURIComponent(o.realm)}`;
  const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
  const temporaryPassword = randomBytes(15).toString('base64url');
  const created = await fetch(`${api}/users`, {
    method: 'POST',
    headers,
    body: JSON.stringify({
      username: o.username,
      ...(o.email ? { email: o.email, emailVerified: false } : {}),
      enabled: true,
      requiredActions: requiredActions(o.role),
      credentials: [{ type: 'password', value: temporaryPassword, temporary: true }],
    }),
  });
  if (created.status === 409) throw new Error(`${o.username} is already a person of realm ${o.realm}`);
  if (!created.ok) throw new Error(`the person could not be created (HTTP ${created.status})`);
  const id = created.headers.get('location')?.split('/').pop();
  if (!id) throw new Error('the identity provider did not say where the person was created');
  const role = await fetch(`${api}/roles/${PERSON_ROLES[o.role]}`, { headers });
  if (!role.ok) throw new Error(`realm ${o.realm} has no role ${PERSON_ROLES[o.role]} (HTTP ${role.status})`);
  const mapped = await fetch(`${api}/users/${id}/role-mappings/realm`, {
    method: 'POST',
    headers,
    body: JSON.stringify([await role.json()]),
  });
  if (!mapped.ok) throw new Error(`the role could not be given (HTTP ${mapped.status}); the person exists without it`);
  return { id, temporaryPassword };
}

/** The command line and environment as options; UsageError naming what is wrong. */
export function parseAddPerson(argv: string[], env: NodeJS.ProcessEnv): AddPersonOptions | undefined {
  const { values: v } = parseCommandLine(argv, {
    keycloak: { type: 'string' },
    realm: { type: 'string' },
    username: { type: 'string' },
    email: { type: 'string' },
    role: { type: 'string' },
    help: { type: 'boolean', short: 'h' },
  });
  if (v.help) return undefined;
  if (!v.username || !/^[a-z0-9][a-z0-9._-]{1,63}$/.test(v.username)) {
    throw new UsageError('--username: 2 to 64 of a-z, 0-9, . _ - (a name of the person, never a patient)');
  }
  if (!v.role || !(v.role in PERSON_ROLES)) throw new UsageError('--role: viewer, operator or admin');
  if (v.email !== undefined && !/^[^\s@]+@[^\s@]+$/.test(v.email)) throw new UsageError('--email: an address');
  const passwordFile = env.KEYCLOAK_ADMIN_PASSWORD_FILE;
  const password = passwordFile ? readFileSync(passwordFile, 'utf8').trim() : env.KEYCLOAK_ADMIN_PASSWORD;
  if (!password) {
    throw new UsageError(
      'the administrator: KEYCLOAK_ADMIN_PASSWORD or KEYCLOAK_ADMIN_PASSWORD_FILE (never an argument)',
    );
  }
  return {
    keycloak: (v.keycloak ?? env.KEYCLOAK_URL ?? 'http://127.0.0.1:8180').replace(/\/+$/, ''),
    realm: v.realm ?? 'journeys',
    username: v.username,
    ...(v.email ? { email: v.email } : {}),
    role: v.role as PersonRole,
    admin: { username: env.KEYCLOAK_ADMIN ?? KEYCLOAK_ADMIN, password },
  };
}

async function main(argv: string[]): Promise<number> {
  let o: AddPersonOptions | undefined;
  try {
    o = parseAddPerson(argv, process.env);
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    console.error(`${err.message}\n${USAGE}`);
    return 2;
  }
  if (!o) {
    console.log(USAGE);
    return 0;
  }
  const { temporaryPassword } = await addPerson(o);
  console.log(
    `${o.username} (${PERSON_ROLES[o.role]}) added to realm ${o.realm}. Temporary password, to hand over once:\n` +
      `  ${temporaryPassword}\n` +
      `At the first sign-in: a new password${o.role === 'viewer' ? '' : ', and a second factor (TOTP) to set up, asked at every sign-in after'}.`,
  );
  return 0;
}

if (require.main === module) exitWith(() => main(process.argv.slice(2)));
