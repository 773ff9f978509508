// The callback inbox's own PostgreSQL role on the production-shaped stack: it logs in, owns the inbox database (the
// engine creates its tables there at start) and is no superuser, as docker-compose.yml's `inbox-database` job makes
// it. A cluster set up before the role existed had its inbox tables made by the superuser: they are handed over, rows
// and all, so no callback waiting in it is stranded.
import { Client } from 'pg';
import { scramVerifier } from '../../src/audit/postgres';

export interface InboxRole {
  database: string;
  role: string;
  password: string;
}

const PLAIN = /^[a-z_][a-z0-9_]*$/;

/** Makes (or updates) the role, gives it the database and everything in its `public` schema. Runs on every start. */
export async function prepareInboxRole(
  superuser: { host: string; port: number; user: string; password: string },
  o: InboxRole,
): Promise<void> {
  if (!PLAIN.test(o.role) || !PLAIN.test(o.database))
    throw new Error(`not a plain role or database name: ${o.role}, ${o.database}`);
  const admin = new Client({ ...superuser, database: 'postgres' });
  await admin.connect();
  try {
    const exists = await admin.query('SELECT 1 FROM pg_roles WHERE rolname = $1', [o.role]);
    if (exists.rowCount === 0) await admin.query(`CREATE ROLE "${o.role}" LOGIN`);
    // The password as a SCRAM verifier, as the audit trail's writer gets it: a statement log never shows it.
    await admin.query(
      `ALTER ROLE "${o.role}" WITH LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE PASSWORD ${admin.escapeLiteral(scramVerifier(o.password))}`,
    );
    const db = await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [o.database]);
    if (db.rowCount === 0) await admin.query(`CREATE DATABASE "${o.database}" OWNER "${o.role}"`);
    else await admin.query(`ALTER DATABASE "${o.database}" OWNER TO "${o.role}"`);
  } finally {
    await admin.end();
  }
  const inDb = new Client({ ...superuser, database: o.database });
  await inDb.connect();
  try {
    // Tables (their indexes and owned sequences follow) and free-standing sequences someone else made here.
    const others = await inDb.query<{ name: string; kind: string }>(
      `SELECT c.relname AS name, c.relkind AS kind FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p', 'S', 'v')
          AND pg_get_userbyid(c.relowner) <> $1
          AND NOT (c.relkind = 'S' AND EXISTS (SELECT 1 FROM pg_depend d WHERE d.objid = c.oid AND d.deptype IN ('a', 'i')))`,
      [o.role],
    );
    for (const r of others.rows) {
      const what = r.kind === 'S' ? 'SEQUENCE' : r.kind === 'v' ? 'VIEW' : 'TABLE';
      await inDb.query(`ALTER ${what} public."${r.name}" OWNER TO "${o.role}"`);
    }
    await inDb.query(`ALTER SCHEMA public OWNER TO "${o.role}"`);
  } finally {
    await inDb.end();
  }
}

/** The role's URL to the inbox database (carries the password: never log it). */
export function inboxRoleUrl(host: string, port: number, o: InboxRole): string {
  return `postgres://${o.role}:${encodeURIComponent(o.password)}@${host}:${port}/${o.database}`;
}
