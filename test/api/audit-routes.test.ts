// The audit trail for admins, from either store (the AUDIT_FILE file, the PostgreSQL table): GET /admin/audit pages
// and filters it, GET /admin/audit/export streams it as JSON lines that `npm run audit-trail:verify` checks; viewers
// and operators are refused (403, itself recorded); each read and export is on the trail; every sign-in with an
// access token is recorded once per token, never the token.
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import type { Client } from '@temporalio/client';
import { createLocalJWKSet, SignJWT } from 'jose';
import { buildApp, type ApiApp } from '../../src/api/app';
import { auditSignIns } from '../../src/api/auth';
import { verifyAuditChain } from '../../src/audit/chain';
import type { AuditRecord } from '../../src/audit/types';
import { prepareAuditStore, verifyAuditTable } from '../../src/audit/postgres';
import { tokenVerifier } from '../../src/auth/tokens';
import { AUDIENCE, signingKey, token } from '../support/oidc-issuer';
import { startTestPostgres, type TestPostgres } from '../support/postgres';
import { auth, fakeExamService, tempDataDir, testConfig, TOKENS, unreachableTemporal, type TestDirs } from './support';

const run = promisify(execFile);
const ROOT = path.resolve(__dirname, '../..');
const ISSUER = 'https://id.clinic.test/realms/journeys';
/** Ports of this suite: 23000-23099. */
const PG_PORT = 23041;

describe.each(['file', 'postgres'] as const)('the audit trail for admins (%s store)', (store) => {
  let key: Awaited<ReturnType<typeof signingKey>>;
  let pg: TestPostgres | undefined;
  let databaseUrl = '';
  let dirs: TestDirs;
  let temporal: Client;
  let app: ApiApp;
  const work = mkdtempSync(path.join(os.tmpdir(), 'audit-routes-'));
  const auditFile = path.join(work, 'audit.jsonl');

  beforeAll(async () => {
    key = await signingKey('key-1');
    let env: Record<string, string> = { AUDIT_FILE: auditFile };
    if (store === 'postgres') {
      pg = await startTestPostgres({ port: PG_PORT, database: 'audit' });
      const prepared = await prepareAuditStore({
        ownerUrl: pg.url,
        writerRole: 'journey_audit_writer',
        writerPassword: 'writer-password-for-tests',
      });
      databaseUrl = prepared.writerUrl;
      env = { AUDIT_STORE: 'postgres', AUDIT_DATABASE_URL: databaseUrl };
    }
    dirs = tempDataDir();
    temporal = await unreachableTemporal();
    app = await buildApp({
      config: testConfig(dirs.dataDir, env),
      temporal,
      examServiceFor: () => fakeExamService(),
      startForwarder: false,
      verifyOperator: tokenVerifier({
        issuer: ISSUER,
        audience: AUDIENCE,
        keys: createLocalJWKSet({ keys: [key.jwk] }),
      }),
    });
    await app.ready();
  }, 120_000);
  afterAll(async () => {
    await app?.close();
    await temporal?.connection.close();
    dirs?.cleanup();
    await pg?.cleanup();
    rmSync(work, { recursive: true, force: true });
  });

  const bearer = async (sub: string, roles: string[], expSec = 300) => ({
    authorization: `Bearer ${await token(key, { iss: ISSUER, sub, roles, expSec })}`,
  });
  const get = (url: string, headers: Record<string, string>) => app.inject({ method: 'GET', url, headers });

  /** The whole trail as the store holds it, checked. */
  async function trail(): Promise<AuditRecord[]> {
    const res = await get('/admin/audit/export', auth(TOKENS.admin));
    expect(res.statusCode).toBe(200);
    const lines = res.body.trim().split('\n');
    expect(verifyAuditChain(lines)).toMatchObject({ ok: true });
    return lines.map((l) => JSON.parse(l) as AuditRecord);
  }

  it('refuses viewers and operators (403, recorded), and answers 401 without a token', async () => {
    for (const [sub, roles] of [
      ['viewer-1', ['journey-viewer']],
      ['operator-1', ['journey-operator']],
    ] as const) {
      // One token each (a token made in another second would be another sign-in).
      const headers = await bearer(sub, [...roles]);
      for (const url of ['/admin/audit', '/admin/audit/export']) {
        const res = await get(url, headers);
        expect(res.statusCode).toBe(403);
        expect(res.headers['content-type']).toContain('application/problem+json');
        expect(res.json().detail).toBe('this needs the role journey-admin');
      }
    }
    expect((await get('/admin/audit', {})).statusCode).toBe(401);
    const records = await trail();
    const forbidden = records.filter((r) => r.action === 'admin.access' && r.outcome === 'forbidden');
    expect(forbidden.map((r) => `${r.subject} ${r.details?.route}`)).toEqual([
      'viewer-1 /admin/audit',
      'viewer-1 /admin/audit/export',
      'operator-1 /admin/audit',
      'operator-1 /admin/audit/export',
    ]);
    expect(records.some((r) => r.action === 'admin.sign-in' && r.outcome === 'refused: missing')).toBe(true);
  });

  it('records a sign-in once per token, with its subject, roles, iat and exp, never the token', async () => {
    const headers = await bearer('admin-1', ['journey-admin']);
    // Together and one after the other: one sign-in.
    await Promise.all([get('/admin/audit?limit=1', headers), get('/admin/audit?limit=1', headers)]);
    for (let i = 0; i < 3; i++) expect((await get('/admin/audit?limit=1', headers)).statusCode).toBe(200);
    // Another token of the same person is another sign-in.
    await get('/admin/audit?limit=1', await bearer('admin-1', ['journey-admin'], 600));
    // A token with a jti is known by it.
    const now = Math.floor(Date.now() / 1000);
    const withJti = await new SignJWT({ realm_access: { roles: ['journey-admin'] } })
      .setProtectedHeader({ alg: 'RS256', kid: key.kid })
      .setIssuer(ISSUER)
      .setAudience(AUDIENCE)
      .setSubject('admin-2')
      .setJti('token-id-42')
      .setIssuedAt(now)
      .setExpirationTime(now + 300)
      .sign(key.privateKey);
    for (let i = 0; i < 2; i++) {
      expect((await get('/admin/audit?limit=1', { authorization: `Bearer ${withJti}` })).statusCode).toBe(200);
    }

    const signIns = (await trail()).filter((r) => r.action === 'admin.sign-in' && r.outcome === 'ok');
    expect(signIns.map((r) => r.subject)).toEqual(['viewer-1', 'operator-1', 'admin-1', 'admin-1', 'admin-2']);
    const first = signIns[2]!;
    expect(first.roles).toEqual(['journey-admin']);
    expect(first.details).toEqual({ iat: expect.any(String), exp: expect.any(String), name: 'olivia.operator' });
    expect(Date.parse(first.details!.exp as string) - Date.parse(first.details!.iat as string)).toBe(300_000);
    expect(signIns[4]!.details).toMatchObject({ jti: 'token-id-42' });
    const raw = store === 'file' ? readFileSync(auditFile, 'utf8') : JSON.stringify(await trail());
    const tokenText = headers.authorization.slice('Bearer '.length);
    expect(raw).not.toContain(tokenText.split('.')[2]);
    expect(raw).not.toContain(createHash('sha256').update(tokenText).digest('hex'));
  });

  it('pages through the trail in seq order, and each read is recorded', async () => {
    const admin = await bearer('admin-1', ['journey-admin']);
    const seen: AuditRecord[] = [];
    let after: number | null = 0;
    let pages = 0;
    while (after !== null) {
      const res = await get(`/admin/audit?limit=3&after=${after}`, admin);
      expect(res.statusCode).toBe(200);
      const page = res.json<{ records: AuditRecord[]; nextAfter: number | null }>();
      expect(page.records.length).toBeLessThanOrEqual(3);
      seen.push(...page.records);
      after = page.nextAfter;
      pages++;
    }
    expect(pages).toBeGreaterThan(3);
    expect(seen.map((r) => r.seq)).toEqual(seen.map((_, i) => i + 1));
    // Each page's own record was written after it was read: the next page begins with it.
    expect(verifyAuditChain(seen.map((r) => JSON.stringify(r)))).toMatchObject({ ok: true });
    const reads = (await trail()).filter((r) => r.action === 'audit.read' && r.subject === 'admin-1');
    expect(reads.length).toBeGreaterThanOrEqual(pages);
    expect(reads.at(-1)).toMatchObject({ outcome: 'ok', details: { store, limit: 3 } });
  });

  it('filters by subject, action and time, and refuses bad filters', async () => {
    const admin = await bearer('admin-1', ['journey-admin']);
    const bySubject = (await get('/admin/audit?subject=viewer-1', admin)).json().records as AuditRecord[];
    expect(bySubject.map((r) => `${r.action} ${r.outcome}`)).toEqual([
      'admin.sign-in ok',
      'admin.access forbidden',
      'admin.access forbidden',
    ]);
    const byAction = (await get('/admin/audit?action=admin.access&subject=operator-1', admin)).json().records;
    expect(byAction).toHaveLength(2);
    const all = await trail();
    const at = all[0]!.at;
    expect((await get(`/admin/audit?until=${encodeURIComponent(at)}`, admin)).json().records).toEqual([]);
    const since = (await get(`/admin/audit?since=${encodeURIComponent(at)}&limit=1000`, admin)).json().records;
    expect(since.length).toBeGreaterThanOrEqual(all.length);
    for (const bad of ['limit=1001', 'limit=0', 'since=yesterday', 'after=-1', 'colour=blue']) {
      const res = await get(`/admin/audit?${bad}`, admin);
      expect(res.statusCode).toBe(400);
      expect(res.headers['content-type']).toContain('application/problem+json');
    }
  });

  it('exports the trail as JSON lines that audit-trail:verify checks, the export itself on it', async () => {
    const res = await get('/admin/audit/export', await bearer('admin-1', ['journey-admin']));
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('application/x-ndjson; charset=utf-8');
    expect(res.headers['content-disposition']).toMatch(/^attachment; filename="audit-trail-.+\.jsonl"$/);
    const lines = res.body.trim().split('\n');
    const records = lines.map((l) => JSON.parse(l) as AuditRecord);
    expect(records[0]!.seq).toBe(1);
    // It ends with its own record, written before the first line was sent.
    expect(records.at(-1)).toMatchObject({ action: 'audit.export', subject: 'admin-1', outcome: 'ok' });
    const file = path.join(work, 'export.jsonl');
    writeFileSync(file, res.body);
    const checked = await run(process.execPath, ['--import', 'tsx', 'scripts/audit-trail.ts', file], { cwd: ROOT });
    expect(checked.stdout).toContain(`${lines.length} records, the chain is whole`);

    // A range verifies from its first record's prev; a selection is the records asked for.
    const range = (await get('/admin/audit/export?after=3', auth(TOKENS.admin))).body.trim().split('\n');
    expect(JSON.parse(range[0]!)).toMatchObject({ seq: 4 });
    expect(verifyAuditChain(range, { from: 'first' })).toMatchObject({ ok: true });
    const selection = (await get('/admin/audit/export?action=audit.export', auth(TOKENS.admin))).body
      .trim()
      .split('\n');
    expect(selection.map((l) => (JSON.parse(l) as AuditRecord).action)).toEqual(
      Array(selection.length).fill('audit.export'),
    );
    expect(selection.length).toBeGreaterThanOrEqual(3);
  });

  it('keeps the whole trail verifiable in its store', async () => {
    if (store === 'postgres') {
      expect(await verifyAuditTable(databaseUrl)).toMatchObject({ ok: true });
    } else {
      expect(verifyAuditChain(readFileSync(auditFile, 'utf8').split('\n'))).toMatchObject({ ok: true });
    }
  });
});

describe('the audit routes without a trail, and in the OpenAPI document', () => {
  let dirs: TestDirs;
  let temporal: Client;
  let app: ApiApp;
  beforeAll(async () => {
    dirs = tempDataDir();
    temporal = await unreachableTemporal();
    app = await buildApp({
      config: testConfig(dirs.dataDir),
      temporal,
      examServiceFor: () => fakeExamService(),
      startForwarder: false,
    });
  });
  afterAll(async () => {
    await app.close();
    await temporal.connection.close();
    dirs.cleanup();
  });

  it('answers 404 when no trail is kept', async () => {
    const res = await app.inject({ method: 'GET', url: '/admin/audit', headers: auth(TOKENS.admin) });
    expect(res.statusCode).toBe(404);
    expect(res.json().detail).toContain('no audit trail is kept here');
  });

  it('documents both routes, admin only, errors as problems', async () => {
    const doc = (await app.inject({ method: 'GET', url: '/docs/json' })).json();
    const list = doc.paths['/admin/audit'].get;
    expect(list.security).toEqual([{ adminAuth: [] }]);
    expect(list.responses['200'].content['application/json']).toBeDefined();
    expect(list.responses['403'].content['application/problem+json']).toBeDefined();
    const exported = doc.paths['/admin/audit/export'].get;
    expect(exported.responses['200'].content['application/x-ndjson']).toBeDefined();
    expect(exported.responses['503'].content['application/problem+json']).toBeDefined();
    expect(exported.description).toContain("verifies from its first record's `prev`");
  });
});

describe('the sign-in memory', () => {
  const caller = (subject: string) => ({ subject, roles: ['journey-admin'], expiresAt: new Date(Date.now() + 60_000) });

  it('forgets the least recently used token first, and records again a sign-in whose append failed', async () => {
    const appended: string[] = [];
    let failNext = false;
    const verify = auditSignIns(
      (t) => Promise.resolve(caller(`sub-of-${t}`)),
      (e) => {
        if (failNext) {
          failNext = false;
          return Promise.reject(new Error('store down'));
        }
        appended.push(e.subject);
        return Promise.resolve();
      },
      { max: 2 },
    );
    await verify('t1');
    await verify('t2');
    await verify('t1'); // t1 used last: t2 is the oldest now
    await verify('t3'); // t2 forgotten
    await verify('t1');
    await verify('t2');
    expect(appended).toEqual(['sub-of-t1', 'sub-of-t2', 'sub-of-t3', 'sub-of-t2']);
    failNext = true;
    await expect(verify('t4')).rejects.toThrow('store down');
    await verify('t4');
    expect(appended.at(-1)).toBe('sub-of-t4');
  });
});
