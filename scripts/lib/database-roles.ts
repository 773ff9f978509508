// The production-shaped stack's PostgreSQL roles. No part of the stack logs in as the cluster's superuser: the
// Temporal server, Keycloak and the callback inbox each have a role of their own that logs in, owns its database(s)
// and nothing else, and is no superuser (as docker-compose.yml's jobs make them). The audit trail's table belongs to a
// role nobody logs in as (no LOGIN, no password): the stack prepares it as the superuser, over the cluster's unix
// socket, and the engine writes as its INSERT/SELECT-only role (src/audit/postgres.ts). So neither Temporal nor
// Keycloak nor an engine process can turn the table's append-only triggers off or rewrite it.
//
// A cluster set up before these roles existed had everything made by the superuser: each database is handed over
// to its role, its objects with it (rows and all), on the next start. Everything here runs at every start.
import { Client } from 'pg';
import { AUDIT_TABLE, prepareAuditStore, scramVerifier } from '../../src/audit/postgres';

/** How the stack reaches the cluster as its superuser: the unix socket directory (no password) or TCP. */
export interface SuperuserAccess {
  /** 127.0.0.1, or the socket directory (a path). */
  host: string;
  port: number;
  user: string;
  /** None over the socket (trust, the directory private to the server's OS user). */
  password?: string;
}

export interface DatabaseRole {
  role: string;
  /** Its password, sent to the server as a SCRAM verifier only. */
  password: string;
  /** The databases it owns (created when missing). */
  databases: string[];
}

const PLAIN = /^[a-z_][a-z0-9_]{0,62}$/;

function checkNames(...names: string[]) {
  for (const n of names) if (!PLAIN.test(n)) throw new Error(`not a plain role or database name: ${n}`);
}

async function connected<T>(su: SuperuserAccess, database: string, fn: (c: Client) => Promise<T>): Promise<T> {
  const client = new Client({ ...su, password: su.password ?? '', database, application_name: 'stack preparation' });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** The attributes no role of the stack has: it may not make databases or roles, bypass row security or replicate. */
const PLAIN_ROLE = 'NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS';

/** Creates the database owned by `owner`, or gives it to `owner`; only its owner (and those granted) may connect. */
async function ownDatabase(admin: Client, database: string, owner: string) {
  const db = await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [database]);
  if (db.rowCount === 0) await admin.query(`CREATE DATABASE "${database}" OWNER "${owner}"`);
  else await admin.query(`ALTER DATABASE "${database}" OWNER TO "${owner}"`);
  await admin.query(`REVOKE ALL ON DATABASE "${database}" FROM PUBLIC`);
}

/**
 * Makes (or updates) a role that logs in with its password, gives it its databases and everything someone else made
 * in their `public` schema: tables (their indexes and owned sequences follow), views, free-standing sequences and
 * functions, an extension's own objects left as they are.
 */
export async function prepareDatabaseRole(su: SuperuserAccess, o: DatabaseRole): Promise<void> {
  checkNames(o.role, ...o.databases);
  await connected(su, 'postgres', async (admin) => {
    const exists = await admin.query('SELECT 1 FROM pg_roles WHERE rolname = $1', [o.role]);
    if (exists.rowCount === 0) await admin.query(`CREATE ROLE "${o.role}" LOGIN`);
    // The password as a SCRAM verifier, as the audit trail's writer gets it: a statement log never shows it.
    await admin.query(
      `ALTER ROLE "${o.role}" WITH LOGIN ${PLAIN_ROLE} PASSWORD ${admin.escapeLiteral(scramVerifier(o.password))}`,
    );
    for (const database of o.databases) await ownDatabase(admin, database, o.role);
  });
  for (const database of o.databases) {
    await connected(su, database, async (db) => {
      const relations = await db.query<{ name: string; kind: string }>(
        `SELECT c.relname AS name, c.relkind AS kind FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
          WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p', 'S', 'v', 'm')
            AND pg_get_userbyid(c.relowner) <> $1
            AND NOT (c.relkind = 'S' AND EXISTS (SELECT 1 FROM pg_depend d
                      WHERE d.classid = 'pg_class'::regclass AND d.objid = c.oid AND d.deptype IN ('a', 'i')))
            AND NOT EXISTS (SELECT 1 FROM pg_depend d
                      WHERE d.classid = 'pg_class'::regclass AND d.objid = c.oid AND d.deptype = 'e')`,
        [o.role],
      );
      for (const r of relations.rows) {
        const what = { S: 'SEQUENCE', v: 'VIEW', m: 'MATERIALIZED VIEW' }[r.kind] ?? 'TABLE';
        await db.query(`ALTER ${what} public."${r.name}" OWNER TO "${o.role}"`);
      }
      const routines = await db.query<{ signature: string }>(
        `SELECT p.oid::regprocedure::text AS signature FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
          WHERE n.nspname = 'public' AND p.prokind IN ('f', 'p') AND pg_get_userbyid(p.proowner) <> $1
            AND NOT EXISTS (SELECT 1 FROM pg_depend d
                      WHERE d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e')`,
        [o.role],
      );
      for (const r of routines.rows) await db.query(`ALTER ROUTINE ${r.signature} OWNER TO "${o.role}"`);
      await db.query(`ALTER SCHEMA public OWNER TO "${o.role}"`);
    });
  }
}

export interface AuditOwner {
  database: string;
  /** Owns the database, the table and its trigger function; cannot log in, has no password. */
  owner: string;
  /** The engine's role: SELECT and INSERT on the table, CONNECT to the database, nothing else. */
  writerRole: string;
  writerPassword: string;
}

/**
 * The audit trail's database and table, owned by a role nobody logs in as, and its writer (prepareAuditStore run as
 * the superuser, then the table and its function handed to the owner). Refuses a writer that could change the trail.
 */
export async function prepareAuditOwner(su: SuperuserAccess, o: AuditOwner): Promise<void> {
  checkNames(o.database, o.owner, o.writerRole);
  if (o.owner === o.writerRole) throw new Error('the audit trail: its owner and its writer must be two roles');
  await connected(su, 'postgres', async (admin) => {
    const exists = await admin.query('SELECT 1 FROM pg_roles WHERE rolname = $1', [o.owner]);
    if (exists.rowCount === 0) await admin.query(`CREATE ROLE "${o.owner}" NOLOGIN`);
    await admin.query(`ALTER ROLE "${o.owner}" WITH NOLOGIN NOINHERIT ${PLAIN_ROLE} PASSWORD NULL`);
    await ownDatabase(admin, o.database, o.owner);
  });
  await prepareAuditStore({
    ownerUrl: superuserUrl(su, o.database),
    writerRole: o.writerRole,
    writerPassword: o.writerPassword,
  });
  await connected(su, o.database, async (db) => {
    await db.query('BEGIN');
    await db.query(`ALTER TABLE ${AUDIT_TABLE} OWNER TO "${o.owner}"`);
    await db.query(`ALTER FUNCTION public.audit_trail_append_only() OWNER TO "${o.owner}"`);
    await db.query(`ALTER SCHEMA public OWNER TO "${o.owner}"`);
    await db.query(`GRANT CONNECT ON DATABASE "${o.database}" TO "${o.writerRole}"`);
    const writer = await db.query<{ member: boolean; rolsuper: boolean }>(
      `SELECT pg_has_role($1, $2, 'MEMBER') AS member, rolsuper FROM pg_roles WHERE rolname = $1`,
      [o.writerRole, o.owner],
    );
    if (writer.rows[0]?.member || writer.rows[0]?.rolsuper) {
      throw new Error(
        `the role ${o.writerRole} is the audit table's owner's, or a superuser: it could change the trail`,
      );
    }
    await db.query('COMMIT');
  });
}

/** The superuser's URL to a database (over the socket when `host` is a directory; no password then). */
function superuserUrl(su: SuperuserAccess, database: string): string {
  const password = su.password ? `:${encodeURIComponent(su.password)}` : '';
  if (!su.host.startsWith('/')) return `postgres://${su.user}${password}@${su.host}:${su.port}/${database}`;
  return `postgres://${su.user}${password}@localhost:${su.port}/${database}?host=${encodeURIComponent(su.host)}`;
}

/** A role's URL to a database over TCP (carries the password: never log it). */
export function roleUrl(host: string, port: number, role: string, password: string, database: string): string {
  return `postgres://${role}:${encodeURIComponent(password)}@${host}:${port}/${database}`;
}
