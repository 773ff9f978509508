// On a terminal each record is one short line (time, part, level, message, journey id); into a pipe, JSON records
// that name their part; LOG_FORMAT overrides; the bundler's webpack report is one line with the bundle's size.
import { PassThrough, Writable } from 'node:stream';
import type { LogEntry } from '@temporalio/worker';
import { oneLineReport } from '../../src/observability/json-log';
import { jsonRecordOf, logFormatOf, prettyLine, prettyStream } from '../../src/observability/log-format';
import { StackLog, unsupportedNode } from '../../scripts/lib/stack-log';

const JOURNEY = 'jabcdefghijklmnopqrstuvwxyz';
const TIME = /^\d{2}:\d{2}:\d{2}\.\d{3} /;

function sink(isTTY: boolean) {
  const lines: string[] = [];
  const stream = Object.assign(
    new Writable({
      write(chunk: Buffer, _enc, done) {
        lines.push(...chunk.toString('utf8').split('\n').filter(Boolean));
        done();
      },
    }),
    { isTTY },
  );
  return { stream, lines };
}

describe('the log format', () => {
  it('is pretty on a terminal and JSON anywhere else, unless LOG_FORMAT says which', () => {
    expect(logFormatOf(undefined, { isTTY: true })).toBe('pretty');
    expect(logFormatOf(undefined, { isTTY: false })).toBe('json');
    expect(logFormatOf(undefined, {})).toBe('json');
    expect(logFormatOf('json', { isTTY: true })).toBe('json');
    expect(logFormatOf(' Pretty ', { isTTY: false })).toBe('pretty');
    expect(() => logFormatOf('yaml', { isTTY: true })).toThrow('LOG_FORMAT must be json or pretty');
  });
});

describe('a pretty line', () => {
  it("has the record's time, the part, the level, the message and the journey id", () => {
    const time = new Date(2026, 10, 25, 9, 5, 7, 42).getTime();
    const api = JSON.stringify({
      level: 30,
      time,
      service: 'patient-journey-api',
      journeyId: JOURNEY,
      msg: 'request completed',
    });
    expect(prettyLine(api, 'api')).toBe(`09:05:07.042 api      INFO  request completed [${JOURNEY}]`);
    // The worker's records name the workflow; the journey id is read from it.
    const worker = JSON.stringify({
      level: 40,
      time,
      workflowId: `journey-${JOURNEY}`,
      msg: 'Activity failed',
      error: { message: 'HTTP 500' },
    });
    expect(prettyLine(worker, 'worker-1')).toBe(`09:05:07.042 worker-1 WARN  Activity failed (HTTP 500) [${JOURNEY}]`);
    // A request line says what was asked and answered.
    const request = JSON.stringify({
      level: 30,
      time,
      journeyId: JOURNEY,
      req: { method: 'POST', route: '/v1/journeys' },
      res: { statusCode: 201 },
      responseTime: 12.345,
      msg: 'request completed',
    });
    expect(prettyLine(request, 'api')).toBe(
      `09:05:07.042 api      INFO  request completed POST /v1/journeys 201 12.3 ms [${JOURNEY}]`,
    );
    // Without a part, the record's own service.
    expect(prettyLine(JSON.stringify({ level: 50, time, service: 'sandbox', msg: 'boom' }))).toBe(
      '09:05:07.042 sandbox  ERROR boom',
    );
  });

  it('reads a Go server record (level name, ts in seconds) and keeps a line that is not JSON', () => {
    const ts = new Date(2026, 10, 25, 9, 5, 7).getTime() / 1000;
    expect(prettyLine(JSON.stringify({ level: 'error', ts, msg: 'unable to bind' }), 'temporal')).toBe(
      '09:05:07.000 temporal ERROR unable to bind',
    );
    expect(prettyLine('plain text from a tool', 'tools')).toMatch(
      /^\d{2}:\d{2}:\d{2}\.\d{3} tools {4}plain text from a tool$/,
    );
    expect(prettyLine('[1, 2]', 'x')).toMatch(/ x +\[1, 2\]$/);
  });

  it('is written for each record pino gives the stream', () => {
    const { stream, lines } = sink(true);
    const pretty = prettyStream(stream);
    pretty.write(
      `${JSON.stringify({ level: 30, time: Date.now(), service: 'patient-journey-api', msg: 'listening' })}\n`,
    );
    expect(lines).toEqual([expect.stringMatching(/^\d{2}:\d{2}:\d{2}\.\d{3} patient-journey-api INFO {2}listening$/)]);
  });
});

describe('a JSON record of a part', () => {
  it('names the part when the record does not, and wraps a line that is not JSON', () => {
    const own = JSON.stringify({ level: 30, time: 1, service: 'patient-journey-worker', msg: 'polling' });
    expect(jsonRecordOf(own, 'worker-2')).toBe(own);
    expect(JSON.parse(jsonRecordOf(JSON.stringify({ level: 'warn', msg: 'slow' }), 'temporal'))).toEqual({
      service: 'temporal',
      level: 'warn',
      msg: 'slow',
    });
    expect(JSON.parse(jsonRecordOf('started on :7233', 'temporal', 40))).toEqual({
      level: 40,
      time: expect.any(Number),
      service: 'temporal',
      msg: 'started on :7233',
    });
  });
});

describe("a stack's log", () => {
  const childLines = [
    JSON.stringify({
      level: 30,
      time: Date.now(),
      service: 'patient-journey-api',
      journeyId: JOURNEY,
      msg: 'request completed',
    }),
    'a line of text',
  ];

  async function follow(isTTY: boolean, env: NodeJS.ProcessEnv = {}) {
    const out = sink(isTTY);
    const err = sink(isTTY);
    const log = new StackLog(env, out.stream, err.stream);
    const child = new PassThrough();
    log.follow('api', child, 'stdout');
    log.say('the engine is up:');
    // A record split across two chunks is still one line.
    const text = `${childLines.join('\n')}\n`;
    child.write(text.slice(0, 20));
    child.end(text.slice(20));
    await new Promise((resolve) => setImmediate(resolve));
    return { log, lines: out.lines };
  }

  it('prints readable lines on a terminal', async () => {
    const { log, lines } = await follow(true);
    expect(log.format).toBe('pretty');
    expect(lines).toHaveLength(3);
    for (const line of lines) expect(line).toMatch(TIME);
    expect(lines).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/ stack {4}INFO {2}the engine is up:$/),
        expect.stringMatching(new RegExp(` api      INFO  request completed \\[${JOURNEY}\\]$`)),
        expect.stringMatching(/ api {6}a line of text$/),
      ]),
    );
  });

  it('prints JSON records into a pipe, and as LOG_FORMAT says', async () => {
    for (const { lines } of [await follow(false), await follow(true, { LOG_FORMAT: 'json' })]) {
      const records = lines.map((l) => JSON.parse(l) as Record<string, unknown>);
      expect(records).toEqual(
        expect.arrayContaining([
          expect.objectContaining({ service: 'stack', level: 30, msg: 'the engine is up:' }),
          expect.objectContaining({ service: 'patient-journey-api', journeyId: JOURNEY }),
          expect.objectContaining({ service: 'api', level: 30, msg: 'a line of text' }),
        ]),
      );
    }
    const { lines } = await follow(false, { LOG_FORMAT: 'pretty' });
    for (const line of lines) expect(line).toMatch(TIME);
  });

  it('refuses a Node.js older than 24 LTS, saying how to get it', () => {
    expect(unsupportedNode('20.20.2')).toMatch(/^Node\.js v20\.20\.2 is not supported: .*scripts\/use-node\.sh/);
    expect(unsupportedNode('24.10.0')).toBeDefined();
    for (const supported of ['24.11.0', '24.21.0', '26.1.0']) expect(unsupportedNode(supported)).toBeUndefined();
  });

  it('refuses a LOG_FORMAT it does not know, naming the setting', () => {
    expect(() => new StackLog({ LOG_FORMAT: 'xml' }, sink(true).stream)).toThrow('LOG_FORMAT must be json or pretty');
  });
});

describe("the bundler's webpack report", () => {
  const entry = (level: LogEntry['level'], message: string): LogEntry => ({ level, message, timestampNanos: 0n });
  const report = [
    'asset workflow-bundle-8c2e4b1f9d.js 1.87 MiB [emitted] [immutable] (name: main)',
    'runtime modules 937 bytes 4 modules',
    'modules by path ./node_modules/ 431 KiB',
    '  ./node_modules/@temporalio/workflow/lib/index.js 3.1 KiB [built] [code generated]',
    'webpack 5.112.2 compiled successfully in 2226 ms',
  ].join('\n');

  it('is one line with the bundle size', () => {
    expect(oneLineReport(entry('INFO', report)).message).toBe(
      'workflow bundle 1.87 MiB: webpack 5.112.2 compiled successfully in 2226 ms',
    );
  });

  it('stays whole when the build failed, and other messages pass as they are', () => {
    const failed = report.replace('compiled successfully', 'compiled with 1 error');
    expect(oneLineReport(entry('ERROR', failed)).message).toBe(failed);
    expect(oneLineReport(entry('INFO', 'Workflow bundle created')).message).toBe('Workflow bundle created');
  });
});
