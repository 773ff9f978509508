// The record before the act: a dead letter's body (patient data) is not served, and an operator's action is not done,
// unless its record was written first (a trail that fails is a 503); a decode's payloads leave the codec server only
// once recorded. Labels come from the route that ran, not the raw URL (`?x=/replay` does not make a read a replay);
// what a request says goes on the record bounded and cleaned, and refusals are throttled per caller.
import { randomBytes } from 'node:crypto';
import type { AuditEvent } from '../../src/audit/types';
import { buildApp, type ApiApp } from '../../src/api/app';
import { EncryptionCodec } from '../../src/codec/encryption-codec';
import { buildCodecServer } from '../../src/codec/server';
import { parseEncryptionKeys } from '../../src/encryption-keys';
import { auth, fakeExamService, tempDataDir, testConfig, TOKENS, unreachableTemporal } from '../api/support';

describe('the admin API puts each access and action on the record first', () => {
  const dirs = tempDataDir();
  let app: ApiApp;
  let recorded: AuditEvent[];
  let trailDown = false;
  let letterId: string;

  beforeAll(async () => {
    app = await buildApp({
      config: testConfig(dirs.dataDir, { AUDIT_FILE: `${dirs.dataDir}/audit/api.jsonl` }),
      temporal: await unreachableTemporal(),
      examServiceFor: () => fakeExamService(),
      startForwarder: false,
    });
    await app.ready();
    // The trail as the routes see it, able to fail on demand (a store that is down).
    const trail = app.audit!;
    recorded = [];
    app.audit = (event) => {
      if (trailDown) return Promise.reject(new Error('the audit store is down'));
      recorded.push(event);
      return trail(event);
    };
    const letter = await app.callbacks.inbox.deadLetters.add(
      {
        journeyId: 'record-first-1',
        reason: 'unparseable',
        detail: 'not a callback',
        receivedAt: new Date().toISOString(),
        rawBody: '{"patient_email":"ada@example.com"',
      },
      new Date(),
    );
    letterId = letter.id;
  });
  afterAll(async () => {
    await app.close();
    dirs.cleanup();
  });
  beforeEach(() => {
    trailDown = false;
    recorded.length = 0;
  });

  const admin = (method: 'GET' | 'POST' | 'DELETE', url: string, payload?: unknown) =>
    app.inject({ method, url, headers: auth(TOKENS.admin), ...(payload ? { payload } : {}) });

  it('serves no dead letter whose read could not be recorded', async () => {
    trailDown = true;
    const res = await admin('GET', `/admin/dead-letters/${letterId}`);
    expect(res.statusCode).toBe(503);
    expect(res.json()).toMatchObject({ type: expect.stringContaining('audit-unavailable') });
    expect(res.body).not.toContain('ada@example.com');
    expect((await admin('GET', '/admin/dead-letters')).statusCode).toBe(503);
  });

  it('records a read as a read whatever the query string says', async () => {
    const res = await admin('GET', `/admin/dead-letters/${letterId}?x=/replay`);
    expect(res.statusCode).toBe(200);
    expect(recorded.map((e) => [e.action, e.outcome, e.details])).toEqual([
      ['dead-letter.read', 'ok', { deadLetterId: letterId, actor: 'ops-test' }],
    ]);
  });

  it('names who reads with the admin token, which names nobody: X-Actor, required and checked', async () => {
    const read = (headers: Record<string, string>) =>
      app.inject({ method: 'GET', url: `/admin/dead-letters/${letterId}`, headers });
    const bearer = { authorization: `Bearer ${TOKENS.admin}` };
    const nameless = await read(bearer);
    expect(nameless.statusCode).toBe(400);
    expect(nameless.json().errors).toEqual([{ field: 'X-Actor', message: 'required with the admin token' }]);
    expect(nameless.body).not.toContain('ada@example.com');
    expect((await read({ ...bearer, 'x-actor': 'called ada@example.com' })).statusCode).toBe(400);
    expect((await read({ ...bearer, 'x-actor': 'INC-7 on-call' })).statusCode).toBe(200);
    expect(recorded.map((e) => e.details)).toEqual([{ deadLetterId: letterId, actor: 'INC-7 on-call' }]);
    expect((await app.inject({ method: 'GET', url: '/admin/audit', headers: bearer })).statusCode).toBe(400);
  });

  it('deletes no dead letter and does no journey action whose record could not be written', async () => {
    trailDown = true;
    expect((await admin('DELETE', `/admin/dead-letters/${letterId}`)).statusCode).toBe(503);
    expect(await app.callbacks.inbox.deadLetters.get(letterId)).toBeDefined();
    const action = await admin('POST', '/admin/journeys/record-first-2/abandon', { actor: 'ops-1', note: 'n' });
    expect(action.statusCode).toBe(503);
    // Refused before Temporal was asked (it is unreachable here: asking it would be a 503 of another kind).
    expect(action.json()).toMatchObject({ type: expect.stringContaining('audit-unavailable') });
  });

  it('records an action before it runs and how it ended after', async () => {
    const action = await admin('POST', '/admin/journeys/record-first-2/abandon', { actor: 'ops-1', note: 'n' });
    expect(action.json()).not.toMatchObject({ type: expect.stringContaining('audit-unavailable') });
    expect(recorded.map((e) => [e.action, e.outcome])).toEqual([
      ['journey.abandon', 'requested'],
      ['journey.abandon', `failed: ${action.statusCode}`],
    ]);
    recorded.length = 0;
    expect((await admin('DELETE', `/admin/dead-letters/${letterId}`)).statusCode).toBe(204);
    expect(recorded.map((e) => [e.action, e.outcome])).toEqual([
      ['dead-letter.delete', 'requested'],
      ['dead-letter.delete', 'ok'],
    ]);
  });
});

describe('the codec server puts each decode on the record before its payloads leave', () => {
  const STATIC = randomBytes(24).toString('base64url');
  const codec = new EncryptionCodec(parseEncryptionKeys(`k1:${randomBytes(32).toString('base64')}`));
  const recorded: AuditEvent[] = [];
  let trailDown = false;
  const server = buildCodecServer({
    codec,
    corsOrigins: [],
    token: STATIC,
    refusalsPerMinute: 20,
    audit: (event) => {
      if (trailDown) return Promise.reject(new Error('the audit store is down'));
      recorded.push(event);
      return Promise.resolve();
    },
  });
  afterAll(() => server.close());
  beforeEach(() => {
    trailDown = false;
    recorded.length = 0;
  });

  async function sealedPayloads() {
    const [p] = await codec.encode([{ metadata: { encoding: Buffer.from('json/plain') }, data: Buffer.from('"Ada"') }]);
    return [
      {
        metadata: Object.fromEntries(
          Object.entries(p!.metadata!).map(([k, v]) => [k, Buffer.from(v).toString('base64')]),
        ),
        data: Buffer.from(p!.data!).toString('base64'),
      },
    ];
  }
  const call = (url: string, payloads: unknown, headers: Record<string, string> = {}) =>
    server.inject({
      method: 'POST',
      url,
      headers: { authorization: `Bearer ${STATIC}`, 'x-namespace': 'default', ...headers },
      payload: { payloads },
    });

  it('answers 503 and returns nothing decoded when the decode could not be recorded', async () => {
    trailDown = true;
    const res = await call('/decode', await sealedPayloads());
    expect(res.statusCode).toBe(503);
    expect(res.body).not.toContain(Buffer.from('"Ada"').toString('base64'));
    expect(res.json().error).toContain('nothing was served');
  });

  it('names the operation by the route that ran, not the query string', async () => {
    const res = await call('/decode?x=/encode', await sealedPayloads());
    expect(res.statusCode).toBe(200);
    expect(recorded.map((e) => e.action)).toEqual(['codec.decode']);
  });

  it('bounds what a caller writes into a record, and throttles refusals per caller', async () => {
    const wrong = (namespace: string) =>
      server.inject({
        method: 'POST',
        url: '/decode',
        headers: { authorization: 'Bearer wrong', 'x-namespace': namespace },
        payload: { payloads: [] },
      });
    expect((await wrong('n'.repeat(12_800) + '{"forged":true}')).statusCode).toBe(401);
    const [first] = recorded;
    expect(first).toMatchObject({
      action: 'codec.decode',
      subject: 'anonymous',
      outcome: 'refused: not the static token',
    });
    const namespace = String(first!.details!.namespace);
    expect(namespace.length).toBeLessThan(100);
    expect(namespace).toMatch(/^n{64}…\(12815 characters\)$/);
    // 20 refusals a minute, the first 10 on the record one by one; then 429 before the token is looked at.
    const statuses: number[] = [];
    for (let i = 0; i < 30; i++) statuses.push((await wrong('default')).statusCode);
    expect(statuses.filter((s) => s === 401)).toHaveLength(19);
    expect(statuses.filter((s) => s === 429)).toHaveLength(11);
    expect(recorded).toHaveLength(10);
    // The rest in one record when the window is written out (here: at close).
    await server.close();
    expect(recorded.at(-1)).toMatchObject({
      action: 'codec.refused-in-bulk',
      details: expect.objectContaining({ refused: 20, notRecordedAlone: 10, throttled: 11 }),
    });
  });
});
