// PHI at rest: with the payload key ring configured, what the API keeps outside Temporal (inbox entries, dead letters,
// attachments) is sealed. Through the real routes, with patient data in each, every file under DATA_DIR and every
// row of the PostgreSQL inbox is read raw (base64 fields decoded too) and none of the patient's fields is found; the
// same check on a store without keys finds them, so it would catch a leak.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { Pool } from 'pg';
import { buildApp } from '../../src/api/app';
import { startTestPostgres, type TestPostgres } from '../support/postgres';
import {
  auth,
  event1,
  fakeExamService,
  tempDataDir,
  testConfig,
  TOKENS,
  unreachableTemporal,
  webhookPath,
} from './support';

const PATIENT = {
  firstName: 'Ottoline',
  lastName: 'Vandersloot-Quince',
  email: 'ottoline.vq@example.org',
  phone: '5550148821',
  dob: '1958-09-30',
};
const FILE_NAME = 'Vandersloot-Quince lab results.pdf';
const FILE_CONTENT = '%PDF-1.4 haemoglobin 13.1 g/dL Vandersloot-Quince';
const NEEDLES = [...Object.values(PATIENT), FILE_NAME, FILE_CONTENT];

/** Every file under a folder, raw, plus any base64 "data" field decoded. */
function filesUnder(dir: string): string {
  let out = '';
  for (const name of readdirSync(dir)) {
    const file = path.join(dir, name);
    if (statSync(file).isDirectory()) {
      out += filesUnder(file);
      continue;
    }
    const text = readFileSync(file).toString('latin1');
    out += text;
    for (const m of text.matchAll(/"data":"([A-Za-z0-9+/=]+)"/g))
      out += Buffer.from(m[1]!, 'base64').toString('latin1');
  }
  return out;
}

describe.each(['files', 'postgres'] as const)('PHI at rest (%s inbox)', (store) => {
  let pg: TestPostgres | undefined;
  beforeAll(async () => {
    if (store === 'postgres') pg = await startTestPostgres({ database: 'inbox' });
  }, 60_000);
  afterAll(async () => pg?.cleanup());

  async function storeEverything(keys: string | undefined): Promise<string> {
    const dirs = tempDataDir();
    if (pg) {
      const admin = new Pool({ connectionString: pg.url, max: 1 });
      await admin.query(`DROP TABLE IF EXISTS callback_inbox, dead_letters, journey_engine_migrations`);
      await admin.end();
    }
    const config = testConfig(dirs.dataDir, {
      ...(keys ? { PAYLOAD_ENCRYPTION_KEYS: keys, PAYLOAD_ENCRYPTION_DISABLED: 'false' } : {}),
      ...(pg ? { INBOX_STORE: 'postgres', INBOX_DATABASE_URL: pg.url } : {}),
    });
    const app = await buildApp({
      config,
      temporal: await unreachableTemporal(),
      examServiceFor: () => fakeExamService(),
      startForwarder: false,
    });
    try {
      const form = new FormData();
      form.append('kind', 'Lab');
      form.append('file', new Blob([FILE_CONTENT], { type: 'application/pdf' }), FILE_NAME);
      await app.listen({ port: 0, host: '127.0.0.1' });
      const base = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`;
      const upload = await fetch(`${base}/v1/attachments`, { method: 'POST', headers: auth(TOKENS.a), body: form });
      expect(upload.status).toBe(201);

      // A callback kept in the inbox (Temporal is away), one that is not a callback, one too large: all hold PHI.
      const withPatient = { ...event1(70_001), patient: PATIENT };
      expect((await app.inject({ method: 'POST', url: webhookPath('jphi'), payload: withPatient })).statusCode).toBe(
        200,
      );
      const unreadable = JSON.stringify({ event: 'one', patient: PATIENT });
      expect((await app.inject({ method: 'POST', url: webhookPath('jphi'), payload: unreadable })).statusCode).toBe(
        400,
      );
      const huge = JSON.stringify({ ...withPatient, filler: 'x'.repeat(1024 * 1024) });
      expect((await app.inject({ method: 'POST', url: webhookPath('jphi'), payload: huge })).statusCode).toBe(413);

      let raw = filesUnder(dirs.dataDir);
      if (pg) {
        const admin = new Pool({ connectionString: pg.url, max: 1 });
        const rows = await admin.query<{ t: string; body: Buffer }>(
          `SELECT concat_ws(' ', journey_id, delivery_id, key_id) AS t, body FROM callback_inbox
           UNION ALL SELECT concat_ws(' ', id, journey_id, reason, key_id), body FROM dead_letters`,
        );
        await admin.end();
        expect(rows.rows).toHaveLength(3);
        raw += rows.rows.map((r) => `${r.t} ${r.body.toString('latin1')}`).join('\n');
      }
      return raw;
    } finally {
      await app.close();
      dirs.cleanup();
    }
  }

  it('finds no patient field in the clear with the key ring, and finds them without it', async () => {
    const sealed = await storeEverything(`at-rest-1:${randomBytes(32).toString('base64')}`);
    expect(sealed).toContain('at-rest-1');
    for (const needle of NEEDLES) expect([needle, sealed.includes(needle)]).toEqual([needle, false]);

    const plain = await storeEverything(undefined);
    for (const needle of NEEDLES) expect([needle, plain.includes(needle)]).toEqual([needle, true]);
  }, 60_000);
});
