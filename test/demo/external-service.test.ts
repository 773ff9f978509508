// `npm start` against an exam service it did not start: EXAM_SERVICE_BASE_URL and EXAM_SERVICE_API_KEY point the local
// clinic at a sandbox run on its own (answering in the live service's layouts), and a journey completes through it.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { buildSandbox, DEMO_API_KEY, type Sandbox } from '../../src/sandbox';
import { freePort } from '../support/dev-server-process';
import { localStackPorts } from '../support/local-stack-ports';
import { until } from '../support/until';

jest.setTimeout(300_000);

const root = path.resolve(__dirname, '../..');
const TOKEN = 'demo-clinic-token';

/** The stack with its output in a pipe, or (`terminal`) on a pseudo-terminal of util-linux `script`. */
function runStack(
  env: Record<string, string>,
  o: { terminal?: boolean } = {},
): { proc: ChildProcess; output: () => string; exited: Promise<number> } {
  let output = '';
  const command = [process.execPath, '--import', 'tsx', 'scripts/local-stack.ts'];
  const [file, ...args] = o.terminal ? ['script', '-qec', command.join(' '), '/dev/null'] : command;
  const proc = spawn(file!, args, {
    cwd: root,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  proc.stdout?.on('data', (c: Buffer) => (output += c.toString()));
  proc.stderr?.on('data', (c: Buffer) => (output += c.toString()));
  const exited = new Promise<number>((resolve) => proc.once('exit', (code) => resolve(code ?? -1)));
  return { proc, output: () => output, exited };
}

it('refuses a base URL without the key, before starting anything: a JSON record into a pipe, a line on a terminal', async () => {
  const env = { EXAM_SERVICE_BASE_URL: 'http://127.0.0.1:1', EXAM_SERVICE_API_KEY: '' };
  const piped = runStack(env);
  expect(await piped.exited).toBe(2);
  expect(JSON.parse(piped.output())).toMatchObject({
    level: 50,
    service: 'stack',
    msg: expect.stringContaining('EXAM_SERVICE_API_KEY is required'),
  });
  const terminal = runStack(env, { terminal: true });
  expect(await terminal.exited).toBe(2);
  expect(terminal.output().trim()).toMatch(/^\d{2}:\d{2}:\d{2}\.\d{3} stack +ERROR EXAM_SERVICE_API_KEY is required/);
});

describe('the local stack against a sandbox started on its own', () => {
  let sandbox: Sandbox;
  let stack: ReturnType<typeof runStack>;
  let dataDir: string;
  let api: string;
  let sandboxPort: number;

  beforeAll(async () => {
    sandbox = await buildSandbox({
      port: await freePort(),
      providerDelayMs: 300,
      faults: { serviceLayout: 'live' },
    });
    dataDir = mkdtempSync(path.join(tmpdir(), 'stack-external-'));
    const { ports, env } = await localStackPorts(21_800);
    sandboxPort = ports.SANDBOX_PORT;
    api = `http://127.0.0.1:${ports.API_PORT}`;
    stack = runStack({
      ...env,
      DATA_DIR: dataDir,
      EXAM_SERVICE_BASE_URL: sandbox.baseUrl,
      EXAM_SERVICE_API_KEY: DEMO_API_KEY,
    });
    await until('the stack to be ready', async () => ((await fetch(`${api}/readyz`)).ok ? true : undefined), 240_000);
    // The API answers a moment before the stack prints where everything is.
    await until(
      'the stack to say it is up',
      () => Promise.resolve(stack.output().includes('Ctrl-C stops everything.') ? true : undefined),
      30_000,
    );
  });

  afterAll(async () => {
    if (stack && stack.proc.exitCode === null) {
      stack.proc.kill('SIGTERM');
      await stack.exited;
    }
    await sandbox?.close();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  it('starts no sandbox of its own and says which service it uses', async () => {
    // Its output into a pipe: JSON records, each naming the part it came from.
    const records = stack
      .output()
      .split('\n')
      .filter((line) => line.trim() !== '')
      .map((line) => JSON.parse(line) as { service?: string; msg?: string });
    expect(records.map((r) => r.msg)).toContain(
      `  exam service   ${sandbox.baseUrl}  (the demo clinic's key from EXAM_SERVICE_API_KEY; no sandbox)`,
    );
    const parts = new Set(records.map((r) => r.service));
    for (const part of ['stack', 'patient-journey-worker', 'patient-journey-api']) expect(parts).toContain(part);
    expect(parts).not.toContain('sandbox');
    await expect(fetch(`http://127.0.0.1:${sandboxPort}/api/exam_list`, { method: 'POST' })).rejects.toThrow();
    // The key reaches the worker through the clinics file, never through a log line.
    expect(stack.output()).not.toContain(DEMO_API_KEY);
  });

  it('completes a journey through that service', async () => {
    const headers = { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' };
    const start = await fetch(`${api}/v1/journeys`, {
      method: 'POST',
      headers: { ...headers, 'idempotency-key': 'external-service-gfe-1' },
      body: JSON.stringify({
        patient: {
          firstName: 'Test',
          lastName: 'Approve',
          email: 'external-gfe@example.test',
          dob: '1988-04-12',
          phoneNumber: '5125550199',
          teleState: 'TE',
        },
        exams: [101],
        scenario: { type: 'gfe' },
      }),
    });
    expect(start.status).toBe(201);
    const { journeyId } = (await start.json()) as { journeyId: string };
    const journey = await until(
      'the journey to complete',
      async () => {
        const view = (await (await fetch(`${api}/v1/journeys/${journeyId}`, { headers })).json()) as {
          journey?: { stage: string; exams: { patientExamId: number; status: string }[] };
        };
        return view.journey?.stage === 'completed' ? view.journey : undefined;
      },
      60_000,
    );
    expect(journey.exams.map((e) => e.status)).toEqual(['Approved']);
    // The invite was made at the sandbox the stack was pointed at.
    const record = await fetch(`${sandbox.baseUrl}/_sandbox/patient-exams/${journey.exams[0]!.patientExamId}`);
    expect(record.status).toBe(200);
  });
});
