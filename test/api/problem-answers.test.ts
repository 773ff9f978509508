// Every answer names each fault once and is logged with its outcome: a problem lists a field error once however many
// checks found it, and what the router refuses before any route runs (a path part over its length limit, malformed
// percent-encoding) is logged as completed with its status, like every other answer.
import { Writable } from 'node:stream';
import { buildApp, type ApiApp } from '../../src/api/app';
import { problemBody } from '../../src/api/problem';
import { fakeExamService, tempDataDir, testConfig, unreachableTemporal } from './support';

describe('problem answers', () => {
  it('list each field error once, in the order first named', () => {
    const dob = { field: 'patient.dob', message: 'not a date' };
    const extra = { field: 'additionalData', message: 'not JSON' };
    expect(problemBody(400, 'validation', 'x', [dob, extra, dob, extra, dob]).errors).toEqual([dob, extra]);
    expect(problemBody(400, 'validation', 'x', [dob, { ...dob, message: 'in the future' }]).errors).toHaveLength(2);
  });

  describe('refused by the router', () => {
    const dirs = tempDataDir();
    const lines: { msg?: string; res?: { statusCode?: number }; reqId?: string }[] = [];
    let app: ApiApp;
    beforeAll(async () => {
      const stream = new Writable({
        write(chunk: Buffer, _enc, done) {
          for (const line of chunk.toString('utf8').split('\n').filter(Boolean)) lines.push(JSON.parse(line));
          done();
        },
      });
      app = await buildApp({
        config: testConfig(dirs.dataDir),
        temporal: await unreachableTemporal(),
        examServiceFor: () => fakeExamService(),
        startForwarder: false,
        logger: { level: 'info', stream },
      });
    });
    afterAll(async () => {
      await app.close();
      dirs.cleanup();
    });

    it.each([
      ['a path part over its length limit', `/v1/journeys/${'j'.repeat(2_000)}`, 414],
      ['malformed percent-encoding', '/v1/journeys/%E0%A4%A', 400],
    ])('%s: answered as a problem and logged as completed, once', async (_what, url, status) => {
      lines.length = 0;
      const res = await app.inject({ method: 'GET', url });
      expect(res.statusCode).toBe(status);
      expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
      const completed = lines.filter((l) => l.msg === 'request completed');
      expect(completed.map((l) => l.res?.statusCode)).toEqual([status]);
    });
  });
});
