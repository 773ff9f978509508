// Operators who are known, end to end on the production topology with its identity provider: Keycloak with the
// journeys realm, the Temporal server checking its tokens (JWT authorizer), the Web UI signing people in, the codec
// server over HTTPS. The realm starts with no people: an operator and a viewer are added as `npm run add-person` adds
// them (a temporary password; a second factor for the operator). A real headless Chromium (Debian's) opens the Web UI,
// is sent to Keycloak's sign-in page, signs in as the operator (a new password and an authenticator set up at this
// first sign-in) and sees a journey's input decoded, then as the viewer and sees `[redacted for this role]` in its
// place. The access tokens the UI passed to the codec server are then used as a clinic's tooling would (curl): none
// 401, the viewer's decode 200 with the marker (its encode 403), the operator's 200, all on the audit trail; the viewer's token reads from Temporal but cannot signal.
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { chromium, type Browser } from 'playwright-core';
import { Client as PgClient } from 'pg';
import { Agent, request } from 'undici';
import type { AuditRecord } from '../../src/audit/types';
import { verifyAuditTable } from '../../src/audit/postgres';
import { ProductionStack, type ProductionPorts } from '../../scripts/lib/production-stack';
import { pickProductionPorts } from '../faults/harness/production';
import { operatorSession, runSession, type OidcSettings } from '../../scripts/lib/ops-sign-in';
import { addPerson, type PersonRole } from '../../scripts/add-person';
import { KEYCLOAK_ADMIN, REALM } from '../../scripts/lib/keycloak';
import { completeSignIn, type Person, type SignInStep } from '../support/keycloak-sign-in';

/** The call is refused by the Temporal server's authorizer: gRPC PERMISSION_DENIED (7). */
async function deniedBy(call: Promise<unknown>) {
  const err = await call.then(
    () => undefined,
    (e: unknown) => e as { cause?: { code?: number }; code?: number },
  );
  expect(err).toBeDefined();
  expect(err!.cause?.code ?? err!.code).toBe(7);
}

/** The realm's usernames, as Keycloak's admin API lists them. */
async function realmUsernames(keycloak: string, admin: { username: string; password: string }): Promise<string[]> {
  const signIn = await fetch(`${keycloak}/realms/master/protocol/openid-connect/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'password', client_id: 'admin-cli', ...admin }),
  });
  expect(signIn.status).toBe(200);
  const { access_token } = (await signIn.json()) as { access_token: string };
  const res = await fetch(`${keycloak}/admin/realms/${REALM}/users?max=100`, {
    headers: { authorization: `Bearer ${access_token}` },
  });
  expect(res.status).toBe(200);
  return ((await res.json()) as { username: string }[]).map((u) => u.username);
}

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const PATIENT_EMAIL = `sign-in-${Date.now().toString(36)}@example.test`;

describe('operators sign in: the Web UI, the codec server and Temporal by the identity provider', () => {
  let root: string;
  let stack: ProductionStack;
  let browser: Browser;
  let workflowId: string;
  const fatal: string[] = [];
  /** The access token each person's browser passed to the codec server, by role. */
  const tokens: Record<string, string> = {};
  /** The people added, by role; what each sign-in went through. */
  const people = {} as Record<'operator' | 'viewer', Person>;
  const steps: Record<string, SignInStep[]> = {};
  let peopleBefore: string[] = [];

  beforeAll(async () => {
    if (!existsSync(CHROMIUM)) throw new Error(`no Chromium at ${CHROMIUM}: apt-get install chromium`);
    root = mkdtempSync(path.join(tmpdir(), 'sign-in-'));
    // Ports below the ephemeral range: Keycloak's and Temporal's own connections could take a port picked above it
    // before the part that is to listen on it starts.
    const ports: ProductionPorts = { ...(await pickProductionPorts(21_300, { identity: true })), workerMetrics: [] };
    ports.apiReplicas = ports.apiReplicas.slice(0, 1);
    stack = new ProductionStack({ dataDir: root, ports, workers: 1, identity: true, onFatal: (w) => fatal.push(w) });
    await stack.start();
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      headless: true,
      args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking'],
    });

    // One journey through the clinic API (whose replica reaches Temporal with its service account).
    const res = await fetch(`${stack.apiUrl}/v1/journeys`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${ProductionStack.tokens.clinic}`,
        'content-type': 'application/json',
        'idempotency-key': `sign-in-${Date.now()}`,
      },
      body: JSON.stringify({
        patient: {
          firstName: 'Test',
          lastName: 'Approve',
          email: PATIENT_EMAIL,
          dob: '1988-04-12',
          phoneNumber: '5125550199',
          teleState: 'TE',
        },
        scenario: { type: 'gfe' },
        exams: [101],
      }),
    });
    expect(res.status).toBe(201);
    workflowId = `journey-${((await res.json()) as { journeyId: string }).journeyId}`;

    // The realm as imported: no person yet. Then an operator and a viewer, as `npm run add-person` adds them.
    const keycloak = `http://127.0.0.1:${ports.keycloak}`;
    const admin = { username: KEYCLOAK_ADMIN, password: readFileSync(stack.keycloakAdminPasswordFile, 'utf8').trim() };
    peopleBefore = await realmUsernames(keycloak, admin);
    for (const [role, username] of [
      ['operator', 'oscar.ops'],
      ['viewer', 'vera.viewer'],
    ] as const) {
      const o = { keycloak, realm: REALM, username, role: role as PersonRole, admin };
      people[role] = { username, password: (await addPerson(o)).temporaryPassword };
    }
  }, 300_000);

  afterAll(async () => {
    await browser?.close();
    await stack?.stop();
    if (root) rmSync(root, { recursive: true, force: true });
  }, 120_000);

  /**
   * Opens the Web UI in a fresh browser (no session), follows it to Keycloak's sign-in page, signs in, opens the
   * journey and returns the text of its page and the codec server's answers to that browser.
   */
  async function signInAndOpen(user: 'operator' | 'viewer', shows: string) {
    // The codec server's certificate is the stack's own (self-signed for 127.0.0.1): trusted for this browser only.
    const context = await browser.newContext({ ignoreHTTPSErrors: true });
    const page = await context.newPage();
    const codecAnswers: number[] = [];
    page.on('request', (r) => {
      const auth = r.headers().authorization;
      if (r.url().startsWith(`${stack.codecUrl}/decode`) && auth) tokens[user] = auth.replace(/^Bearer /, '');
    });
    page.on('response', (r) => {
      if (r.url().startsWith(`${stack.codecUrl}/decode`)) codecAnswers.push(r.status());
    });
    try {
      await page.goto(`${stack.uiUrl}/namespaces/default/workflows`);
      // The UI's own sign-in page, then the identity provider's.
      await page.getByRole('button', { name: /continue to sso/i }).click();
      await page.waitForURL((u) => u.href.startsWith(`${stack.issuer}/protocol/openid-connect/auth`));
      // The UI's authorization request carries a PKCE challenge (S256 of a verifier it keeps in the browser's cookie).
      const authorize = new URL(page.url()).searchParams;
      expect(authorize.get('code_challenge_method')).toBe('S256');
      expect(authorize.get('code_challenge')).toMatch(/^[A-Za-z0-9_-]{43}$/);
      steps[user] = await completeSignIn(page, people[user], () => page.url().startsWith(stack.uiUrl));
      await page.waitForURL((u) => u.href.startsWith(stack.uiUrl));

      await page.goto(
        `${stack.uiUrl}/namespaces/default/workflows?query=${encodeURIComponent(`WorkflowId='${workflowId}'`)}`,
      );
      const link = page.locator(`a[href*="/workflows/${workflowId}"]`).first();
      await link.waitFor({ timeout: 60_000 });
      await link.click();
      await page.waitForURL((u) => u.pathname.includes(`/workflows/${workflowId}/`));
      // The input is shown once the codec server has answered (decoded, or as stored when refused). The UI asks for
      // it once per page load: if that answer never came (a machine so loaded that the UI gave up on it), the person
      // at the browser reloads the page, and so does this test, once, naming what the codec server had answered.
      const shown = () => page.getByText(shows).first().waitFor({ timeout: 45_000 });
      await shown().catch(async (err: unknown) => {
        const before = [...codecAnswers];
        await page.reload();
        await shown().catch(() => {
          throw new Error(
            `the journey's page never showed ${user === 'operator' ? 'its decoded input' : 'the redaction marker'} ` +
              `(the codec server's answers to this browser: ${JSON.stringify(before)} before a reload, ` +
              `${JSON.stringify(codecAnswers.slice(before.length))} after it)`,
            { cause: err },
          );
        });
      });
      await page.waitForLoadState('networkidle');
      return { text: await page.locator('body').innerText(), codecAnswers };
    } finally {
      await context.close();
    }
  }

  it("imports a realm with no people: only the services' accounts", () => {
    expect(peopleBefore.filter((u) => !u.startsWith('service-account-'))).toEqual([]);
  });

  it("refuses the UI's client an authorization request without a PKCE challenge", async () => {
    const ask = new URL(`${stack.issuer}/protocol/openid-connect/auth`);
    for (const [k, v] of Object.entries({
      client_id: 'temporal-ui',
      response_type: 'code',
      scope: 'openid',
      state: 'no-challenge',
      redirect_uri: `${stack.uiUrl}/auth/sso/callback`,
    })) {
      ask.searchParams.set(k, v);
    }
    const res = await fetch(ask, { redirect: 'manual' });
    // Keycloak sends the browser back to the client with the error, never to a sign-in page.
    const back = new URL(res.headers.get('location') ?? 'http://none/');
    expect([res.status, back.searchParams.get('error')]).toEqual([302, 'invalid_request']);
    expect(back.searchParams.get('error_description')).toMatch(/code_challenge/i);
  });

  it('sends the UI to the sign-in page; the operator sees the journey decoded, the viewer a redaction marker', async () => {
    const anonymous = await fetch(`${stack.uiUrl}/api/v1/namespaces/default/workflows`);
    expect(anonymous.status).toBe(401);

    const operator = await signInAndOpen('operator', PATIENT_EMAIL);
    expect(operator.codecAnswers.length).toBeGreaterThan(0);
    expect(new Set(operator.codecAnswers)).toEqual(new Set([200]));
    expect(operator.text).toContain(PATIENT_EMAIL);

    // What the viewer sees in place of the input: the clear marker of a role that may not read patient data.
    const viewer = await signInAndOpen('viewer', '[redacted for this role]');
    expect(viewer.codecAnswers.length).toBeGreaterThan(0);
    expect(new Set(viewer.codecAnswers)).toEqual(new Set([200]));
    expect(viewer.text).not.toContain(PATIENT_EMAIL);
    expect(fatal).toEqual([]);

    // The first sign-in replaced the temporary password; the operator also set up a second factor, the viewer not.
    expect(steps.operator).toEqual(expect.arrayContaining(['password', 'update-password', 'configure-totp']));
    expect(steps.viewer).toEqual(expect.arrayContaining(['password', 'update-password']));
    expect(steps.viewer).not.toContain('configure-totp');
  }, 240_000);

  it('answers curl at the codec server by the token: none 401, the viewer redacted (encode 403), the operator 200; all on the record', async () => {
    expect(Object.keys(tokens).sort()).toEqual(['operator', 'viewer']);
    // As curl --cacert <the stack's certificate> would call it.
    const dispatcher = new Agent({ connect: { ca: readFileSync(stack.codecCertificate) } });
    const decode = async (token?: string, op = 'decode') => {
      const res = await request(`${stack.codecUrl}/${op}`, {
        method: 'POST',
        dispatcher,
        headers: {
          'content-type': 'application/json',
          'x-namespace': 'default',
          ...(token ? { authorization: `Bearer ${token}` } : {}),
        },
        body: JSON.stringify({ payloads: [] }),
      });
      await res.body.dump();
      return { status: res.statusCode };
    };
    expect((await decode()).status).toBe(401);
    expect((await decode(tokens.viewer)).status).toBe(200);
    expect((await decode(tokens.viewer, 'encode')).status).toBe(403);
    expect((await decode(tokens.operator)).status).toBe(200);

    // The trail every process shares: the PostgreSQL table, read as its insert-only role reads it.
    const lines: string[] = [];
    const chain = await verifyAuditTable(stack.auditDatabaseUrl, { onRecord: (l) => void lines.push(l) });
    expect(chain).toMatchObject({ ok: true });
    const records = lines
      .map((l) => JSON.parse(l) as AuditRecord)
      .filter((r) => r.action === 'codec.decode' || r.action === 'codec.encode');
    const last = records.slice(-4);
    expect(last.map((r) => [r.action, r.outcome])).toEqual([
      ['codec.decode', expect.stringMatching(/^refused: /)],
      ['codec.decode', 'redacted for this role'],
      ['codec.encode', 'forbidden'],
      ['codec.decode', 'ok'],
    ]);
    expect(last[0]!.subject).toBe('anonymous');
    expect(last[1]!.roles).toContain('journey-viewer');
    expect(last[2]!.roles).toContain('journey-viewer');
    expect(last[3]!.roles).toContain('journey-operator');
    // The person by their subject, with the readable name beside it.
    expect(last[3]!.details).toMatchObject({ namespace: 'default', payloads: 0, name: people.operator.username });
    // Never a token in the trail.
    const raw = lines.join('\n');
    for (const t of Object.values(tokens)) expect(raw).not.toContain(t.slice(-20));
  });

  it("lets the viewer's token read from Temporal but not signal; a call without a token is refused", async () => {
    const as = async (token?: string) => {
      const connection = await Connection.connect({
        address: stack.temporalAddress,
        ...(token ? { apiKey: token, tls: false } : {}),
      });
      return { connection, client: new Client({ connection, namespace: 'default' }) };
    };
    const viewer = await as(tokens.viewer);
    try {
      // Read: visibility and the journey's history (its payloads sealed; this client has no key).
      expect((await viewer.client.workflow.count(`WorkflowId='${workflowId}'`)).count).toBe(1);
      const history = await viewer.client.workflow.getHandle(workflowId).fetchHistory();
      expect(history.events?.length).toBeGreaterThan(0);
      await deniedBy(viewer.client.workflow.getHandle(workflowId).signal('callbackReceived'));
      await deniedBy(viewer.client.workflow.getHandle(workflowId).terminate('a viewer cannot'));
    } finally {
      await viewer.connection.close();
    }
    const nobody = await as();
    try {
      await deniedBy(nobody.client.workflow.count());
    } finally {
      await nobody.connection.close();
    }
  });

  it("checks roles at the admin API by the same tokens: the viewer lists journeys, dead letters are the admin's", async () => {
    const admin = (route: string, token: string) =>
      fetch(`${stack.apiUrl}${route}`, { headers: { authorization: `Bearer ${token}` } });
    expect(
      (await admin(`/admin/journeys?query=${encodeURIComponent(`WorkflowId = '${workflowId}'`)}`, tokens.viewer!))
        .status,
    ).toBe(200);
    expect((await admin('/admin/dead-letters', tokens.viewer!)).status).toBe(403);
    expect((await admin('/admin/dead-letters', tokens.operator!)).status).toBe(403);
    // The trail is the admin's to read: the viewer is refused, and that refusal is on it too.
    expect((await admin('/admin/audit', tokens.viewer!)).status).toBe(403);
    const lines: string[] = [];
    expect(await verifyAuditTable(stack.auditDatabaseUrl, { onRecord: (l) => void lines.push(l) })).toMatchObject({
      ok: true,
    });
    const viewerRecords = lines
      .map((l) => JSON.parse(l) as AuditRecord)
      .filter((r) => r.details?.name === people.viewer.username);
    // The viewer's first request with this token signed them in, on the record once; the refusals too.
    expect(viewerRecords.filter((r) => r.action === 'admin.sign-in')).toHaveLength(1);
    expect(viewerRecords.map((r) => r.outcome)).toContain('forbidden');
  });

  it('configures no static admin token beside the identity provider; Keycloak logs in to PostgreSQL as its own role', async () => {
    // No admin token made, none configured in any API replica: the public local one, or any, is refused.
    expect(existsSync(path.join(root, 'secrets', 'admin_token'))).toBe(false);
    const processes = readdirSync('/proc')
      .filter((e) => /^\d+$/.test(e))
      .flatMap((pid) => {
        try {
          const cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
          const env = readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0');
          return env.includes(`STACK_PID=${process.pid}`) ? [{ cmd, env }] : [];
        } catch {
          return [];
        }
      });
    const apis = processes.filter((p) => p.cmd.includes('src/api/server.ts')).map((p) => p.env);
    expect(apis.length).toBeGreaterThan(0);
    for (const env of apis) expect(env.filter((kv) => kv.startsWith('ADMIN_TOKEN'))).toEqual([]);

    // No part of the stack is handed a secret in its environment or on its command line: each reads a file.
    const secrets = JSON.parse(readFileSync(path.join(root, 'local-secrets.json'), 'utf8')) as Record<string, unknown>;
    const values = [
      ...Object.values(secrets).filter((v): v is string => typeof v === 'string'),
      ...Object.values(secrets.identity as Record<string, string>),
    ].filter((v) => v.length >= 16);
    expect(values.length).toBeGreaterThan(8);
    const exposed = processes.flatMap((p) =>
      [...p.env, p.cmd]
        .filter((text) => values.some((v) => text.includes(v)))
        .map((text) => `${p.cmd.split('\0').slice(0, 2).join(' ')}: ${text.split('=')[0]}`),
    );
    expect(exposed).toEqual([]);
    const res = await fetch(`${stack.apiUrl}/admin/dead-letters`, {
      headers: { authorization: 'Bearer local-admin-token' },
    });
    expect([401, 403]).toContain(res.status);

    const su = new PgClient({ connectionString: stack.postgres!.url });
    await su.connect();
    try {
      const sessions = await su.query<{ datname: string; usename: string; rolsuper: boolean }>(
        `SELECT DISTINCT a.datname, a.usename, r.rolsuper FROM pg_stat_activity a
           JOIN pg_roles r ON r.rolname = a.usename
          WHERE a.pid <> pg_backend_pid() AND a.backend_type = 'client backend' ORDER BY a.datname, a.usename`,
      );
      expect(sessions.rows.filter((r) => r.rolsuper)).toEqual([]);
      expect(sessions.rows.filter((r) => r.datname === 'keycloak').map((r) => r.usename)).toEqual(['keycloak']);
    } finally {
      await su.end();
    }
  });

  it('signs a person in to npm run ops on a terminal: the device grant, approved in the browser at Keycloak', async () => {
    const oidc: OidcSettings = {
      issuer: stack.issuer,
      clientId: 'journey-ops',
      clientIdGiven: false,
      cacheDir: path.join(root, 'ops-cache'),
    };
    const out: string[] = [];
    let approve!: (url: string) => void;
    const prompted = new Promise<string>((resolve) => (approve = resolve));
    const io = {
      out: (t: string) => out.push(t),
      err: (t: string) => {
        const url = /(https?:\/\/\S+)/.exec(t)?.[1];
        if (url) approve(url);
      },
      interactive: true,
    };
    const signedIn = runSession({ command: 'sign-in', oidc, clientCredentials: false }, io);
    const url = await prompted;
    expect(url.startsWith(`${stack.issuer}/device`)).toBe(true);

    // The person opens the address on any device, signs in as themselves (their password, then a code from their
    // authenticator) and approves.
    const context = await browser.newContext();
    const page = await context.newPage();
    try {
      await page.goto(url);
      const went = await completeSignIn(page, people.operator, () => false);
      expect(went.slice(0, 2)).toEqual(['password', 'otp']);
    } finally {
      await context.close();
    }
    expect(await signedIn).toBe(0);
    expect(out.join('')).toMatch(/journey-operator/);

    // The kept sign-in is what the admin API sees: the person's roles, no typed name.
    const session = await operatorSession(oidc, { out: () => undefined, err: () => undefined });
    expect(session.roles).toContain('journey-operator');
    const res = await fetch(
      `${stack.apiUrl}/admin/journeys?query=${encodeURIComponent(`WorkflowId = '${workflowId}'`)}`,
      { headers: { authorization: `Bearer ${await session.token()}` } },
    );
    expect(res.status).toBe(200);
  }, 120_000);
});
