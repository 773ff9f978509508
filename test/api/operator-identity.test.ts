// Operators as themselves on the admin API: their identity provider's access tokens (served over real HTTP), roles
// checked per route (a viewer lists journeys, an operator acts on them, an admin reads dead letters and resets), the
// actor a journey records is the token's subject, never a typed name, and every refusal and action is on the
// hash-chained audit trail. The static admin token still works, for automation, as an admin that names its actor.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { verifyAuditChain } from '../../src/audit/chain';
import type { AuditRecord } from '../../src/audit/types';
import { tokenVerifier, type TokenVerifier } from '../../src/auth/tokens';
import { useApiHarness } from '../support/api-harness';
import { startIssuer, token, type Issuer } from '../support/oidc-issuer';
import { auth, eventually, fakeActivities, gfeBody, startJourney, TOKENS, withInviteInDoubt } from './support';

describe('operators known by their access token', () => {
  let issuer: Issuer;
  let verify: TokenVerifier;
  const auditDir = mkdtempSync(path.join(os.tmpdir(), 'operator-audit-'));
  const auditFile = path.join(auditDir, 'audit.jsonl');

  beforeAll(async () => {
    issuer = await startIssuer();
    verify = tokenVerifier({ issuer: issuer.url, audience: 'temporal-ui' });
  });
  afterAll(async () => {
    await issuer?.close();
    rmSync(auditDir, { recursive: true, force: true });
  });

  // Every invite is in doubt: the journey parks for an operator.
  const activities = withInviteInDoubt(fakeActivities(80_000).activities);
  const stack = useApiHarness({
    taskQueue: 'api-operator-identity',
    worker: activities,
    env: { AUDIT_FILE: auditFile },
    app: { startForwarder: false, verifyOperator: (t) => verify(t) },
  });

  const as = async (sub: string, roles: string[]) => ({
    authorization: `Bearer ${await token(issuer.keys[0]!, { iss: issuer.url, sub, roles })}`,
  });
  const request = (method: 'GET' | 'POST', url: string, headers: Record<string, string>, payload?: object) =>
    stack.app.inject({ method, url, headers, ...(payload ? { payload } : {}) });

  async function parked(key: string): Promise<string> {
    const res = await startJourney(stack.app, key, gfeBody());
    expect(res.statusCode).toBe(201);
    const id = res.json().journeyId as string;
    await eventually(
      () => stack.app.inject({ method: 'GET', url: `/v1/journeys/${id}`, headers: auth(TOKENS.a) }),
      (r) => r.json().journey?.stage === 'needs_attention',
      { timeoutMs: 30_000, intervalMs: 250 },
    );
    return id;
  }

  it('answers 401 without a token or with a bad one, naming the reason', async () => {
    const none = await request('GET', '/admin/journeys?query=NeedsAttention%20%3D%20true', {});
    expect(none.statusCode).toBe(401);
    expect(none.json().detail).toContain('missing');
    const expired = await token(issuer.keys[0]!, { iss: issuer.url, expSec: -600, roles: ['journey-admin'] });
    const res = await request('GET', '/admin/dead-letters', { authorization: `Bearer ${expired}` });
    expect(res.statusCode).toBe(401);
    expect(res.json().detail).toContain('expired');
    expect(JSON.stringify(res.json())).not.toContain(expired.split('.')[2]);
  });

  it('lets a viewer list journeys but not act on them nor read dead letters', async () => {
    const viewer = await as('viewer-1', ['journey-viewer']);
    const id = await parked('identity-viewer');
    expect((await request('GET', '/admin/journeys?query=NeedsAttention%20%3D%20true', viewer)).statusCode).toBe(200);
    const act = await request('POST', `/admin/journeys/${id}/abandon`, viewer, { note: 'n' });
    expect(act.statusCode).toBe(403);
    expect(act.json().detail).toBe('this needs the role journey-operator or journey-admin');
    expect((await request('GET', '/admin/dead-letters', viewer)).statusCode).toBe(403);
  });

  it("records the operator's subject as the actor, refuses a typed other name, and keeps reset for admins", async () => {
    const operator = await as('operator-7', ['journey-operator']);
    const id = await parked('identity-operator');
    const typed = await request('POST', `/admin/journeys/${id}/abandon`, operator, { actor: 'alice', note: 'n' });
    expect(typed.statusCode).toBe(400);
    expect(typed.json().errors).toEqual([
      {
        field: 'actor',
        message: 'the actor is who signed in (operator-7); leave it out, or send that',
        rule: 'actor-named',
      },
    ]);
    expect((await request('POST', `/admin/journeys/${id}/reset`, operator, { note: 'n' })).statusCode).toBe(403);
    const done = await request('POST', `/admin/journeys/${id}/abandon`, operator, { note: 'INC-7 patient called' });
    expect(done.statusCode).toBe(200);
    const view = (await stack.app.inject({ method: 'GET', url: `/v1/journeys/${id}`, headers: auth(TOKENS.a) })).json();
    expect(view.journey.actions).toEqual([
      expect.objectContaining({ actor: 'operator-7', note: 'INC-7 patient called' }),
    ]);
  });

  it('lets an admin read dead letters, and the static admin token act when it names its actor', async () => {
    expect((await request('GET', '/admin/dead-letters', await as('admin-1', ['journey-admin']))).statusCode).toBe(200);
    const id = await parked('identity-static');
    const nameless = await request(
      'POST',
      `/admin/journeys/${id}/abandon`,
      { authorization: `Bearer ${TOKENS.admin}` },
      {
        note: 'n',
      },
    );
    expect(nameless.statusCode).toBe(400);
    const named = await request('POST', `/admin/journeys/${id}/abandon`, auth(TOKENS.admin), {
      actor: 'runbook-bot',
      note: 'n',
    });
    expect(named.statusCode).toBe(200);
  });

  it('puts every refusal, action and dead-letter access on the audit trail, chained', () => {
    const lines = readFileSync(auditFile, 'utf8').trim().split('\n');
    expect(verifyAuditChain(lines)).toMatchObject({ ok: true });
    const records = lines.map((l) => JSON.parse(l) as AuditRecord);
    const seen = records.map((r) => `${r.action} ${r.subject} ${r.outcome}`);
    expect(seen).toEqual(
      expect.arrayContaining([
        'admin.sign-in anonymous refused: missing',
        'admin.sign-in anonymous refused: expired',
        'admin.access viewer-1 forbidden',
        'admin.access operator-7 forbidden',
        'journey.abandon operator-7 ok',
        'dead-letter.list admin-1 ok',
        'journey.abandon admin-token ok',
      ]),
    );
    const abandon = records.find((r) => r.action === 'journey.abandon' && r.subject === 'operator-7')!;
    expect(abandon.roles).toEqual(['journey-operator']);
    expect(abandon.details).toMatchObject({ actor: 'operator-7' });
  });
});
