// Nothing is acknowledged that was not stored. When the inbox cannot take a callback (its folder unwritable, its
// PostgreSQL down) the webhook answers 503 — never 200 — and says so in its log and metrics; every callback it did
// answer 200 for is in the inbox afterwards. Both stores, through the real webhook route.
import { mkdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { Writable } from 'node:stream';
import { buildApp, type ApiApp } from '../../src/api/app';
import type { Config } from '../../src/config';
import { startTestPostgres, type TestPostgres } from '../support/postgres';
import {
  event1,
  expectProblem,
  fakeExamService,
  tempDataDir,
  testConfig,
  unreachableTemporal,
  webhookPath,
} from './support';

function logCollector() {
  const lines: Record<string, unknown>[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const line of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(line) as never);
      done();
    },
  });
  return { lines, logger: { level: 'error', stream } };
}

describe.each(['files', 'postgres'] as const)('an inbox that cannot write (%s)', (store) => {
  let pg: TestPostgres | undefined;
  const dirs = tempDataDir();
  let config: Config;

  beforeAll(async () => {
    if (store === 'postgres') pg = await startTestPostgres({ database: 'inbox' });
    config = testConfig(
      dirs.dataDir,
      pg
        ? {
            INBOX_STORE: 'postgres',
            INBOX_DATABASE_URL: pg.url,
            API_TEMPORAL_TIMEOUT_MS: '300',
            FORWARDER_SIGNAL_TIMEOUT_MS: '300',
          }
        : {},
    );
  }, 60_000);
  afterAll(async () => {
    await pg?.cleanup();
    dirs.cleanup();
  });

  async function app(logger?: object): Promise<ApiApp> {
    const a = await buildApp({
      config,
      temporal: await unreachableTemporal(),
      examServiceFor: () => fakeExamService(),
      startForwarder: false,
      ...(logger ? { logger } : {}),
    });
    await a.ready();
    return a;
  }

  // Files: the folder moved aside (its entries kept) and a plain file in its place, which refuses every write even
  // to root (permissions would not); moved back after. PostgreSQL: the server stopped and started.
  const breakIt = async () => {
    if (pg) return pg.stop();
    const dir = config.inbox.store === 'files' ? config.inbox.dir : '';
    renameSync(dir, `${dir}.aside`);
    writeFileSync(dir, 'not a folder');
  };
  const repair = async () => {
    if (pg) return pg.start();
    const dir = config.inbox.store === 'files' ? config.inbox.dir : '';
    rmSync(dir, { force: true });
    renameSync(`${dir}.aside`, dir);
  };

  it('answers 503 while it cannot store, 200 again after, and keeps every callback it answered 200 for', async () => {
    const { lines, logger } = logCollector();
    const api = await app(logger);
    const acknowledged: string[] = [];
    const post = async (n: number) => {
      const res = await api.inject({ method: 'POST', url: webhookPath(`jwrite${n % 3}`), payload: event1(80_000 + n) });
      if (res.statusCode === 200) acknowledged.push(res.json().deliveryId);
      return res;
    };
    for (let n = 0; n < 5; n++) expect((await post(n)).statusCode).toBe(200);

    await breakIt();
    try {
      for (let n = 5; n < 10; n++) {
        const res = await post(n);
        const problem = expectProblem(res, 503);
        expect(problem.detail).toMatch(/could not be stored; it was not accepted/);
        expect(res.headers['retry-after']).toBe('1');
      }
      // Not even an unparseable body is acknowledged when its dead letter cannot be kept (files: same disk).
      if (!pg) {
        const letters = config.inbox.store === 'files' ? config.inbox.deadLetterDir : '';
        rmSync(letters, { recursive: true, force: true });
        writeFileSync(letters, 'x');
        expectProblem(await api.inject({ method: 'POST', url: webhookPath('jwrite0'), payload: '{nope' }), 503);
        rmSync(letters, { force: true });
        mkdirSync(letters);
      }
    } finally {
      await repair();
    }
    for (let n = 10; n < 15; n++) expect((await post(n)).statusCode).toBe(200);

    const metrics = (await api.inject({ method: 'GET', url: '/metrics' })).body;
    expect(metrics).toMatch(/journey_api_inbox_failures_total\{store="inbox"\} 5/);
    expect(metrics).toMatch(/journey_api_callbacks_total\{event="unknown",outcome="refused"\} [56]/);
    const refusals = lines.filter((l) => l.msg === 'callback NOT stored: answered 503');
    expect(refusals.length).toBeGreaterThanOrEqual(5);
    // The log names the store and the journey, never the body or the URL's token.
    expect(refusals[0]).toMatchObject({ store: 'inbox', journeyId: expect.stringMatching(/^jwrite/) });
    expect(JSON.stringify(lines)).not.toContain('80005');
    await api.close();

    // A new process over the same store: exactly the acknowledged callbacks are there.
    const again = await app();
    const claim = await again.callbacks.inbox.claim(100, 100);
    expect(claim!.entries.map((e) => e.signal.deliveryId).sort()).toEqual([...acknowledged].sort());
    expect(acknowledged).toHaveLength(10);
    await claim!.settle([], []);
    await again.close();
  }, 60_000);
});
