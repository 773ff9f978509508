// The production-shaped stack's inbox role (scripts/lib/inbox-role.ts) on a real PostgreSQL: a cluster whose inbox
// the superuser made, with a callback waiting in it, is handed to the role, which is no superuser; the callback is
// still there for the role's forwarder, and a second start (a new password) changes nothing else.
import { Client } from 'pg';
import { RecordSealer } from '../../src/codec/at-rest';
import { PostgresInbox } from '../../src/inbox/postgres';
import { inboxRoleUrl, prepareInboxRole } from '../../scripts/lib/inbox-role';
import { startTestPostgres, type TestPostgres } from '../support/postgres';
import { signalFor } from './support';

let server: TestPostgres;

beforeAll(async () => {
  server = await startTestPostgres({ database: 'journeys' });
}, 60_000);
afterAll(async () => server?.cleanup());

function openInbox(url: string) {
  return new PostgresInbox({ connectionString: url, sealer: new RecordSealer([]), statementTimeoutMs: 2_000 });
}

async function asRole<T>(url: string, fn: (c: Client) => Promise<T>): Promise<T> {
  const c = new Client({ connectionString: url });
  await c.connect();
  try {
    return await fn(c);
  } finally {
    await c.end();
  }
}

it('hands an inbox the superuser made to its own role, the waiting callback with it', async () => {
  // As a stack from before the role: the inbox's tables made by the superuser, one callback waiting.
  const old = openInbox(server.url);
  await old.init();
  const waiting = signalFor();
  await old.append('j-old', waiting);
  await old.close();

  const superuser = {
    host: '127.0.0.1',
    port: server.port,
    user: server.user,
    password: decodeURIComponent(new URL(server.url).password),
  };
  const role = { database: 'journeys', role: 'journey_inbox', password: 'first-password-0123' };
  await prepareInboxRole(superuser, role);
  const url = inboxRoleUrl('127.0.0.1', server.port, role);

  const facts = await asRole(url, (c) =>
    c.query<{ rolsuper: boolean; owners: string[] }>(
      `SELECT (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) AS rolsuper,
              array_agg(DISTINCT pg_get_userbyid(relowner)::text) AS owners
         FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'public'`,
    ),
  );
  expect(facts.rows[0]).toEqual({ rolsuper: false, owners: ['journey_inbox'] });

  const inbox = openInbox(url);
  await inbox.init();
  try {
    await inbox.append('j-new', signalFor());
    const claim = await inbox.claim(10, 10);
    expect(claim?.entries.map((e) => e.signal.deliveryId)).toContain(waiting.deliveryId);
    await claim?.settle(
      claim.entries.map((e) => e.id),
      [],
    );
    expect((await inbox.stats()).depth).toBe(0);
  } finally {
    await inbox.close();
  }

  // Another start with another password: the role takes it; the old one no longer logs in.
  const again = { ...role, password: 'second-password-4567' };
  await prepareInboxRole(superuser, again);
  await expect(
    asRole(inboxRoleUrl('127.0.0.1', server.port, again), (c) => c.query('SELECT 1')),
  ).resolves.toBeDefined();
  await expect(asRole(url, (c) => c.query('SELECT 1'))).rejects.toThrow(/password authentication failed/);
}, 60_000);

it('refuses a role or database name that is not plain', async () => {
  const superuser = { host: '127.0.0.1', port: server.port, user: server.user, password: 'unused' };
  await expect(prepareInboxRole(superuser, { database: 'journeys', role: 'x"; DROP', password: 'p' })).rejects.toThrow(
    'not a plain role or database name',
  );
});
