// `npm run ops` signed in with the identity provider (scripts/ops.ts, scripts/lib/ops-sign-in.ts), end to end: a
// stand-in OpenID provider over real HTTP (test/support/oidc-device-provider), the admin API listening and checking
// its tokens (the provider's JWKS, audience journey-engine), a real Temporal dev server and a worker running the real
// journey workflow (every invite is in doubt, so journeys park). A person signs in on the terminal (device grant) and
// acts: the journeys record the token's subject; the kept sign-in serves the next run without a request; --actor with
// a sign-in is refused; without a sign-in and a terminal, ops says to sign in; automation signs in by client
// credentials and acts as its service account; sign-out forgets it. Every port is of 23120-23199.
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { Worker } from '@temporalio/worker';
import { buildApp, type ApiApp } from '../../src/api/app';
import { tokenVerifier } from '../../src/auth/tokens';
import { SignInRequired } from '../../src/auth/token-cache';
import { SEARCH_ATTRIBUTE_KEYS } from '../../src/contract/definitions';
import { parseCommand, parseOptions, runOps, signInProblem, UsageError, type Io } from '../../scripts/ops';
import {
  freePortInRange,
  PROVIDER_AUDIENCE,
  startDeviceProvider,
  type DeviceProvider,
} from '../support/oidc-device-provider';
import { installedTool } from '../support/temporal-env';
import {
  auth,
  eventually,
  fakeActivities,
  fakeExamService,
  gfeBody,
  startJourney,
  tempDataDir,
  testConfig,
  TOKENS,
  withInviteInDoubt,
} from './support';

const root = path.resolve(__dirname, '../..');
const TASK_QUEUE = 'api-ops-sign-in';
const PERSON = '5d1c0f7e-olivia';
const SERVICE_ACCOUNT = '9a8b7c6d-automation';
const AUTOMATION_SECRET = 'automation-secret-0123456789';

/** `npm run ops -- ...` as a child process (not spawnSync: the API and the provider answer from this process). */
function ops(args: string[], env: Record<string, string>): Promise<{ status: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      path.join(root, 'node_modules/.bin/tsx'),
      ['scripts/ops.ts', ...args],
      { cwd: root, env: { PATH: process.env.PATH, HOME: os.tmpdir(), ...env }, timeout: 60_000 },
      (err, stdout, stderr) => resolve({ status: err ? Number(err.code ?? 1) : 0, stdout, stderr }),
    );
  });
}

describe('npm run ops signed in with the identity provider', () => {
  let provider: DeviceProvider;
  let env: TestWorkflowEnvironment;
  let app: ApiApp;
  let worker: Worker;
  let workerRun: Promise<void>;
  let api: string;
  const dirs = tempDataDir();
  const caches: string[] = [];

  // Every invite is in doubt: the journey parks for an operator.
  const activities = withInviteInDoubt(fakeActivities(81_000).activities);

  beforeAll(async () => {
    provider = await startDeviceProvider({ ports: [23120, 23129] });
    const grpc = await freePortInRange(23130, 23159);
    const http = await freePortInRange(23130, 23159, [grpc]);
    const metrics = await freePortInRange(23130, 23159, [grpc, http]);
    const temporal = installedTool('temporal');
    env = await TestWorkflowEnvironment.createLocal({
      server: {
        executable: temporal ? { type: 'existing-path', path: temporal } : { type: 'cached-download' },
        port: grpc,
        searchAttributes: SEARCH_ATTRIBUTE_KEYS,
        log: { format: 'pretty', level: 'error' },
        extraArgs: [
          '--dynamic-config-value',
          'frontend.enableUpdateWorkflowExecution=true',
          '--http-port',
          String(http),
          '--metrics-port',
          String(metrics),
        ],
      },
    });
    const config = testConfig(dirs.dataDir, { TEMPORAL_TASK_QUEUE: TASK_QUEUE });
    app = await buildApp({
      config,
      temporal: env.client,
      examServiceFor: () => fakeExamService(),
      startForwarder: false,
      verifyOperator: tokenVerifier({ issuer: provider.issuer, audience: PROVIDER_AUDIENCE }),
    });
    const port = await freePortInRange(23160, 23179);
    await app.listen({ host: '127.0.0.1', port });
    api = `http://127.0.0.1:${port}`;
    worker = await Worker.create({
      connection: env.nativeConnection,
      taskQueue: TASK_QUEUE,
      workflowsPath: require.resolve('../../src/workflows'),
      activities,
    });
    workerRun = worker.run();
  }, 120_000);

  afterAll(async () => {
    await app?.close();
    if (worker?.getState() === 'RUNNING') worker.shutdown();
    await workerRun;
    await env?.teardown();
    await provider?.close();
    dirs.cleanup();
    for (const dir of caches) rmSync(dir, { recursive: true, force: true });
  });

  /** A cache folder of its own ($XDG_CACHE_HOME), removed after the suite. */
  function cacheHome(): string {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'ops-oidc-cache-'));
    caches.push(dir);
    return dir;
  }

  const journeyOf = (id: string) =>
    app.inject({ method: 'GET', url: `/v1/journeys/${id}`, headers: auth(TOKENS.a) }).then((r) => r.json());

  async function park(prefix: string, n: number): Promise<string[]> {
    const ids: string[] = [];
    for (let i = 0; i < n; i++) {
      const res = await startJourney(app, `${prefix}-${i}`, gfeBody());
      expect(res.statusCode).toBe(201);
      ids.push(res.json().journeyId);
    }
    for (const id of ids) {
      await eventually(
        () => journeyOf(id),
        (j) => j.journey?.stage === 'needs_attention',
        { timeoutMs: 30_000, intervalMs: 250 },
      );
    }
    // Visibility lists them too (the search ops runs).
    const query = `NeedsAttention = true AND ${idsClause(ids)}`;
    await eventually(
      () =>
        app.inject({
          method: 'GET',
          url: `/admin/journeys?${new URLSearchParams({ query, running: 'true' }).toString()}`,
          headers: auth(TOKENS.admin),
        }),
      (r) => r.json().count === n,
      { timeoutMs: 30_000, intervalMs: 250 },
    );
    return ids;
  }
  const idsClause = (ids: string[]) => `WorkflowId IN (${ids.map((id) => `'journey-${id}'`).join(', ')})`;

  function io(o: Partial<Io> = {}): Io & { text: () => string; errText: () => string } {
    let out = '';
    let err = '';
    return {
      out: (t) => (out += t),
      err: (t) => (err += t),
      isTTY: false,
      sleep: () => Promise.resolve(),
      text: () => out,
      errText: () => err,
      ...o,
    };
  }
  const noTokens = (text: string) => {
    expect(text).not.toMatch(/eyJ[\w-]+\.[\w-]+/);
    expect(text).not.toMatch(/\brt-[0-9a-f]{8}/);
    expect(text).not.toContain(AUTOMATION_SECRET);
  };

  it("signs a person in on the terminal; the journeys record the token's subject; the next run reuses the sign-in", async () => {
    const ids = await park('oidc-person', 2);
    const home = cacheHome();
    const vars = { OPS_OIDC_ISSUER: provider.issuer, XDG_CACHE_HOME: home };
    const query = `NeedsAttention = true AND ${idsClause(ids)}`;
    const argv = ['abandon', '--query', query, '--note', 'INC-77 portal outage', '--api', api, '--rate', '200'];

    const opts = parseOptions(argv, vars)!;
    expect(opts).toMatchObject({ oidc: { issuer: provider.issuer, clientId: 'journey-ops' } });
    expect(opts.token).toBeUndefined();
    expect(opts.actor).toBeUndefined();

    // First a dry run on the terminal: nobody is signed in, so the device sign-in comes first.
    const dry = io({ interactive: true });
    expect(await runOps(parseOptions([...argv, '--dry-run'], vars)!, dry)).toBeUndefined();
    expect(dry.errText()).toContain(`${provider.issuer}/device?user_code=WDJB-MJHT`);
    expect(dry.errText()).toContain(`ops: as ${PERSON} (olivia.operator), journey-operator\n`);
    expect(dry.text()).toMatch(/Dry run: no journey was changed \(abandon would run on each, as 5d1c0f7e-olivia\)/);
    const file = path.join(home, 'journey-ops', readdirSync(path.join(home, 'journey-ops'))[0]!);
    expect(statSync(file).mode & 0o777).toBe(0o600);

    // Then the real run, not on a terminal: the kept sign-in, not a single request to the provider.
    const requests = provider.requests.length;
    const run = io({ interactive: false });
    const summary = (await runOps(opts, run))!;
    expect(summary).toMatchObject({ matched: 2, done: 2, refused: 0, failed: 0 });
    expect(provider.requests).toHaveLength(requests);
    for (const id of ids) {
      const view = await journeyOf(id);
      expect(view.journey.stage).toBe('abandoned');
      expect(view.journey.actions).toEqual([
        expect.objectContaining({ action: 'abandon', actor: PERSON, note: 'INC-77 portal outage' }),
      ]);
    }
    noTokens(dry.text() + dry.errText() + run.text() + run.errText());
  });

  it('refuses --actor with a sign-in, and says to sign in when nobody is and there is no terminal', async () => {
    const vars = { OPS_OIDC_ISSUER: provider.issuer, XDG_CACHE_HOME: cacheHome() };
    const argv = ['abandon', '--query', 'NeedsAttention=true', '--note', 'INC-78', '--api', api];
    expect(() => parseOptions([...argv, '--actor', 'oncall-alice'], vars)).toThrow(UsageError);
    expect(() => parseOptions([...argv, '--actor', 'oncall-alice'], vars)).toThrow(
      /^--actor is not taken when signed in with the identity provider: the actor is the person \(or service account\) signed in/,
    );
    const cli = await ops([...argv, '--actor', 'oncall-alice'], vars);
    expect(cli.status).toBe(2);
    expect(cli.stderr).toMatch(/^ops: --actor is not taken when signed in/);

    const requests = provider.requests.length;
    const err = await runOps(parseOptions(argv, vars)!, io({ interactive: false })).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SignInRequired);
    expect(signInProblem(err as SignInRequired, parseOptions(argv, vars)!.oidc)).toBe(
      `not signed in to ${provider.issuer} as client journey-ops: run npm run ops -- sign-in (on a terminal)`,
    );
    expect(provider.requests).toHaveLength(requests);
    // The command itself: stdin is not a terminal here.
    const none = await ops(argv, vars);
    expect(none.status).toBe(2);
    expect(none.stderr).toContain('ops: not signed in to');
    expect(none.stderr).toContain('run npm run ops -- sign-in');
    const signIn = await ops(['sign-in'], vars);
    expect(signIn.status).toBe(2);
    expect(signIn.stderr).toMatch(/^ops: sign-in: sign-in without --client-credentials is for a person at a terminal/);
  });

  it('signs automation in by client credentials, acts as its service account, and forgets it at sign-out', async () => {
    const [parked] = await park('oidc-automation', 1);
    const home = cacheHome();
    const vars = {
      OPS_OIDC_ISSUER: provider.issuer,
      OPS_OIDC_CLIENT_ID: 'journey-automation',
      XDG_CACHE_HOME: home,
    };
    const signIn = await ops(['sign-in', '--client-credentials'], {
      ...vars,
      OPS_OIDC_CLIENT_SECRET: AUTOMATION_SECRET,
    });
    expect(signIn).toMatchObject({ status: 0, stderr: '' });
    expect(signIn.stdout).toMatch(/^Signed in\.\nsigned in as\s+9a8b7c6d-automation\n/);
    expect(signIn.stdout).toMatch(/roles\s+journey-admin\n/);
    noTokens(signIn.stdout);

    // Another run, without the secret: the kept token.
    const query = `NeedsAttention = true AND ${idsClause([parked!])}`;
    const act = await ops(['retry', '--query', query, '--note', 'INC-79 automation', '--api', api], vars);
    expect(act.stderr).toContain(`ops: as ${SERVICE_ACCOUNT} (service-account-journey-automation), journey-admin`);
    expect(act.status).toBe(0);
    expect(act.stdout).toMatch(/done\s+1\n/);
    const view = await journeyOf(parked!);
    expect(view.journey.actions).toEqual([
      expect.objectContaining({ action: 'retry', actor: SERVICE_ACCOUNT, note: 'INC-79 automation' }),
    ]);
    noTokens(act.stdout + act.stderr);

    const who = await ops(['whoami'], vars);
    expect(who.status).toBe(0);
    expect(who.stdout).toMatch(/client\s+journey-automation \(client credentials\)/);
    const out = await ops(['sign-out'], vars);
    expect(out.status).toBe(0);
    expect(out.stdout).toMatch(/^Signed out: removed /);
    expect(readdirSync(path.join(home, 'journey-ops'))).toEqual([]);
    expect((await ops(['whoami'], vars)).status).toBe(1);

    // With the secret at hand, a journey action signs in by itself (no terminal needed).
    const [again] = await park('oidc-automation-again', 1);
    const opts = parseOptions(
      ['abandon', '--query', `NeedsAttention = true AND ${idsClause([again!])}`, '--note', 'INC-80', '--api', api],
      { ...vars, OPS_OIDC_CLIENT_SECRET: AUTOMATION_SECRET },
    )!;
    expect((await runOps(opts, io({ interactive: false })))!).toMatchObject({ done: 1, failed: 0 });
    expect((await journeyOf(again!)).journey.actions).toEqual([
      expect.objectContaining({ action: 'abandon', actor: SERVICE_ACCOUNT }),
    ]);
    expect(existsSync(path.join(home, 'journey-ops'))).toBe(true);
  });

  it('still acts with the static admin token (automation without an identity provider), naming its actor', async () => {
    const [parked] = await park('static-token', 1);
    const query = `NeedsAttention = true AND ${idsClause([parked!])}`;
    const opts = parseOptions(
      ['abandon', '--query', query, '--actor', 'runbook-bot', '--note', 'INC-81', '--api', api],
      {
        ADMIN_TOKEN: TOKENS.admin,
      },
    )!;
    expect(opts).toMatchObject({ tokenSource: 'ADMIN_TOKEN', actor: 'runbook-bot' });
    expect(opts.oidc).toBeUndefined();
    const requests = provider.requests.length;
    expect((await runOps(opts, io()))!).toMatchObject({ done: 1, failed: 0 });
    expect(provider.requests).toHaveLength(requests);
    expect((await journeyOf(parked!)).journey.actions).toEqual([
      expect.objectContaining({ action: 'abandon', actor: 'runbook-bot', note: 'INC-81' }),
    ]);
  });

  describe('the command line', () => {
    const vars = { OPS_OIDC_ISSUER: 'https://id.example/realms/journeys', XDG_CACHE_HOME: '/tmp/x' };
    it('takes the issuer, the client and its secret from flags or the environment', () => {
      expect(parseCommand(['sign-in', '--issuer', 'https://id.example/realms/journeys/'], {})).toEqual({
        kind: 'session',
        options: {
          command: 'sign-in',
          clientCredentials: false,
          oidc: {
            issuer: 'https://id.example/realms/journeys',
            clientId: 'journey-ops',
            clientIdGiven: false,
            cacheDir: expect.stringMatching(/\/\.cache\/journey-ops$/),
          },
        },
      });
      const cc = parseCommand(['sign-in', '--client-credentials', '--client-id', 'journey-automation'], {
        ...vars,
        OPS_OIDC_CLIENT_SECRET: 's3cret',
      });
      expect(cc).toMatchObject({
        kind: 'session',
        options: {
          clientCredentials: true,
          oidc: {
            clientId: 'journey-automation',
            secretSource: 'OPS_OIDC_CLIENT_SECRET',
            cacheDir: '/tmp/x/journey-ops',
          },
        },
      });
      // The static admin token still works as before, without an issuer.
      expect(parseOptions(['abandon', '--query', 'a=1', '--actor', 'a', '--note', 'n'], {})).toMatchObject({
        token: 'local-admin-token',
        actor: 'a',
      });
    });

    it.each([
      [['whoami'], {}, /^whoami needs the identity provider: --issuer URL or OPS_OIDC_ISSUER/],
      [['sign-in', '--issuer', 'http://id.example/realms/journeys'], {}, /https URL \(http only on loopback\)/],
      [['sign-in', '--client-credentials'], vars, /--client-credentials needs the confidential client/],
      [['sign-in', '--client-credentials', '--client-id', 'journey-automation'], vars, /needs the client's secret/],
      [
        ['sign-in', '--client-credentials', '--client-id', 'c', '--client-secret-file', '/nonexistent/s'],
        vars,
        /cannot read it \(ENOENT\)/,
      ],
      [['sign-out', '--query', 'a=1'], vars, /^--query is not for sign-out$/],
      [['whoami', '--client-credentials'], vars, /^--client-credentials is for sign-in, not whoami$/],
      [
        ['abandon', '--query', 'a=1', '--note', 'n', '--client-credentials'],
        vars,
        /^--client-credentials is for sign-in/,
      ],
      [['abandon', '--query', 'a=1', '--note', 'n', '--admin-token', 't'], vars, /two ways to act: give one/],
      [['abandon', '--query', 'a=1', '--note', 'n', '--client-id', 'x'], {}, /--client-id is for signing in/],
      [['abandon', '--query', 'a=1', '--note', 'n'], {}, /^--actor is required with the admin token/],
      [['abandon', '--query', 'a=1'], vars, /^--note is required/],
    ])('refuses %j', (argv, environment, message) => {
      expect(() => parseCommand(argv, environment)).toThrow(UsageError);
      expect(() => parseCommand(argv, environment)).toThrow(message);
    });
  });
});
