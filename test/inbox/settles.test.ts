// Settles ride with appends (INBOX_SETTLES=deferred, the default): the record that an entry was signalled never makes
// the webhook's next append wait for a flush of its own. Files: the settle waits for the next append's write, or gets
// one of its own once appends pause, and a stop writes what is left; a crash before it brings the entries back to be
// signalled again, none lost. PostgreSQL: the claim commits without waiting for the synchronous standby, which the
// appends still wait for. `durable` keeps the earlier behaviour on both.
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Pool } from 'pg';
import { RecordSealer } from '../../src/codec/at-rest';
import { FileInbox, waitingInFolder } from '../../src/inbox/files';
import { PostgresInbox } from '../../src/inbox/postgres';
import { readFrames } from '../../src/inbox/segment-log';
import { startTestPostgres, type TestPostgres } from '../support/postgres';
import { KEY_A, signalFor } from './support';

/** Claims the oldest journey's entries and settles them all. */
const settle = async (inbox: FileInbox | PostgresInbox) => {
  const claim = await inbox.claim(1, 10);
  expect(claim).toBeDefined();
  return {
    ids: claim!.entries.map((e) => e.id),
    settled: claim!.settle(
      claim!.entries.map((e) => e.id),
      [],
    ),
  };
};

async function eventually(check: () => boolean, timeoutMs = 10_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > until) throw new Error('the condition did not hold in time');
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('settles, files', () => {
  let root: string;
  const opened: FileInbox[] = [];
  beforeEach(() => {
    root = mkdtempSync(path.join(tmpdir(), 'inbox-settles-'));
  });
  afterEach(async () => {
    for (const inbox of opened.splice(0)) await inbox.close();
    rmSync(root, { recursive: true, force: true });
  });
  const dir = () => path.join(root, 'inbox');
  /** An inbox over the folder; `crashes`: one the test never stops (afterEach leaves it as a dead process's). */
  const open = async (settleDelayMs?: number, { crashes = false } = {}) => {
    const inbox = new FileInbox({
      dir: dir(),
      deadLetterDir: path.join(root, 'dead-letters'),
      legacySpoolDir: path.join(root, 'spool'),
      sealer: new RecordSealer([KEY_A]),
      ...(settleDelayMs !== undefined ? { settleDelayMs } : {}),
    });
    if (!crashes) opened.push(inbox);
    await inbox.init();
    return inbox;
  };
  /** The log's records in the order they were written: `a3` three entries appended, `s2` two settled. */
  const records = () =>
    readdirSync(dir())
      .filter((n) => n.endsWith('.log'))
      .sort()
      .flatMap((n) => readFrames(readFileSync(path.join(dir(), n))).records)
      .map((r) => JSON.parse(r.payload.toString()) as { t: string; ids: string[] })
      .map((r) => `${r.t}${r.ids.length}`);

  it("writes a settle with the next append's record, not in a write of its own", async () => {
    const inbox = await open(60_000);
    for (let i = 0; i < 3; i++) await inbox.append('j1', signalFor());
    const { settled } = await settle(inbox);
    await settled;
    // Settled for the process at once; on the log, not yet.
    expect((await inbox.stats()).depth).toBe(0);
    expect(records()).toEqual(['a1', 'a1', 'a1']);
    expect(waitingInFolder(dir())).toBe(3);
    await inbox.append('j2', signalFor());
    // One write: the new entry and the settle of the three.
    expect(records()).toEqual(['a1', 'a1', 'a1', 'a1', 's3']);
    expect(waitingInFolder(dir())).toBe(1);
  });

  it('writes a settle on its own once appends pause, and what is left at a stop', async () => {
    const inbox = await open(50);
    await inbox.append('j1', signalFor());
    await (
      await settle(inbox)
    ).settled;
    await eventually(() => waitingInFolder(dir()) === 0);
    expect(records()).toEqual(['a1', 's1']);

    const stopping = await open(60_000);
    await stopping.append('j2', signalFor());
    await (
      await settle(stopping)
    ).settled;
    expect(waitingInFolder(dir())).toBe(1);
    await stopping.close();
    expect(waitingInFolder(dir())).toBe(0);
    const restarted = await open();
    expect(await restarted.claim(10, 10)).toBeUndefined();
  });

  it('brings entries whose settle a crash lost back to be signalled again, none lost', async () => {
    const crashed = await open(60_000, { crashes: true });
    const signalled = [signalFor(), signalFor()];
    for (const s of signalled) await crashed.append('j1', s);
    const waiting = signalFor();
    await crashed.append('j2', waiting);
    const claim = await crashed.claim(1, 10);
    await claim!.settle(
      claim!.entries.map((e) => e.id),
      [],
    );
    // The process ends here, its settle unwritten (never closed): a new one over the folder reads the log.
    const restarted = await open();
    const again = await restarted.claim(10, 10);
    expect(again!.entries.map((e) => e.signal.deliveryId).sort()).toEqual(
      [...signalled, waiting].map((s) => s.deliveryId).sort(),
    );
    await again!.settle([], []);
  });

  it('writes each settle at once when durable (settleDelayMs 0)', async () => {
    const inbox = await open(0);
    await inbox.append('j1', signalFor());
    await (
      await settle(inbox)
    ).settled;
    expect(records()).toEqual(['a1', 's1']);
    expect(waitingInFolder(dir())).toBe(0);
  });
});

describe('settles, PostgreSQL', () => {
  let server: TestPostgres;
  let admin: Pool;
  const opened: PostgresInbox[] = [];
  beforeAll(async () => {
    server = await startTestPostgres({ database: 'inbox_settles' });
    admin = new Pool({ connectionString: server.url, max: 2 });
    admin.on('error', () => undefined);
  }, 60_000);
  afterAll(async () => {
    for (const inbox of opened) await inbox.close().catch(() => undefined);
    await admin?.end();
    await server?.cleanup();
  });
  const open = async (synchronousSettles?: boolean) => {
    const inbox = new PostgresInbox({
      connectionString: server.url,
      sealer: new RecordSealer([KEY_A]),
      statementTimeoutMs: 20_000,
      ...(synchronousSettles !== undefined ? { synchronousSettles } : {}),
    });
    await inbox.init();
    opened.push(inbox);
    return inbox;
  };
  /** Every commit that waits for it hangs while the named synchronous standby is away. */
  const standbyAway = async (away: boolean) => {
    await admin.query(
      away
        ? `ALTER SYSTEM SET synchronous_standby_names = 'absent_standby'`
        : 'ALTER SYSTEM RESET synchronous_standby_names',
    );
    await admin.query('SELECT pg_reload_conf()');
    // The reload reaches every backend at its next command.
    await new Promise((r) => setTimeout(r, 300));
  };

  it("commits a claim's settle without waiting for the synchronous standby; durable settles wait for it", async () => {
    const deferred = await open();
    const durable = await open(true);
    await deferred.append('j-deferred', signalFor());
    await durable.append('j-durable', signalFor());
    const a = await deferred.claim(1, 10);
    const b = await durable.claim(1, 10);
    expect(a!.entries.map((e) => e.journeyId)).toEqual(['j-deferred']);
    expect(b!.entries.map((e) => e.journeyId)).toEqual(['j-durable']);
    await standbyAway(true);
    let durableDone = false;
    try {
      const durableSettle = b!.settle(
        b!.entries.map((e) => e.id),
        [],
      );
      void durableSettle.then(() => (durableDone = true));
      // The standby never answers: the deferred settle is committed anyway.
      await a!.settle(
        a!.entries.map((e) => e.id),
        [],
      );
      const left = await admin.query<{ journey_id: string }>('SELECT journey_id FROM callback_inbox');
      expect(left.rows.map((r) => r.journey_id)).toEqual(['j-durable']);
      // An append still waits for the standby: it is what the 200 promises.
      let appended = false;
      void deferred.append('j-later', signalFor()).then(() => (appended = true));
      await new Promise((r) => setTimeout(r, 1_000));
      expect(durableDone).toBe(false);
      expect(appended).toBe(false);
    } finally {
      await standbyAway(false);
    }
    await eventually(() => durableDone);
    expect((await admin.query('SELECT journey_id FROM callback_inbox')).rows).toEqual([{ journey_id: 'j-later' }]);
  }, 30_000);
});
