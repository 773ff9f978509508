// Throttling before identity: requests refused sign-in are counted per source address; past the limit the source's
// requests without a valid token are answered 429 with Retry-After, its refusals go on the audit trail in aggregate, and
// other sources are untouched. A request refused (401, or 429 for a clinic past its rate) never has its body read.
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { AuditRecord } from '../../src/audit/types';
import { useApiHarness } from '../support/api-harness';
import { auth, TOKENS } from './support';

const LIMIT = 20;

describe('throttling before identity', () => {
  const auditDir = mkdtempSync(path.join(tmpdir(), 'throttle-audit-'));
  const auditFile = path.join(auditDir, 'audit.jsonl');
  afterAll(() => rmSync(auditDir, { recursive: true, force: true }));
  const stack = useApiHarness({
    temporal: 'unreachable',
    listen: true,
    env: {
      AUDIT_FILE: auditFile,
      API_SIGN_IN_FAILURES_PER_MINUTE: String(LIMIT),
      API_RATE_LIMIT_PER_MINUTE: '3',
      API_TRUSTED_PROXIES: '127.0.0.1',
    },
    app: { startForwarder: false },
  });
  const trail = (): AuditRecord[] =>
    (existsSync(auditFile) ? readFileSync(auditFile, 'utf8') : '')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as AuditRecord);
  const from = (address: string, token: string) =>
    stack.app.inject({
      method: 'GET',
      url: '/admin/dead-letters',
      remoteAddress: address,
      headers: auth(token),
    });

  it('answers a flooding source 429 with Retry-After, audits its refusals in aggregate, and spares other sources', async () => {
    const before = trail().length;
    const answers = [];
    for (let i = 0; i < 300; i++) answers.push((await from('203.0.113.9', `wrong-${i}`)).statusCode);
    expect(answers.slice(0, LIMIT)).toEqual(Array(LIMIT).fill(401));
    expect(answers.slice(LIMIT)).toEqual(Array(300 - LIMIT).fill(429));
    const throttled = await from('203.0.113.9', 'wrong-again');
    expect(throttled.statusCode).toBe(429);
    expect(Number(throttled.headers['retry-after'])).toBeGreaterThan(0);
    expect(Number(throttled.headers['retry-after'])).toBeLessThanOrEqual(60);
    expect(throttled.json()).toMatchObject({ status: 429, detail: expect.stringMatching(/refused sign-in/) });
    // A valid token from that address is served all the same (test/api/sign-in-sources.test.ts).
    expect((await from('203.0.113.9', TOKENS.admin)).statusCode).toBe(200);

    // Another address, with or without a good token, is answered as ever.
    expect((await from('198.51.100.4', 'wrong')).statusCode).toBe(401);
    expect((await from('198.51.100.4', TOKENS.admin)).statusCode).toBe(200);
    // So is a clinic from another address; a clinic behind the load balancer is known by its X-Forwarded-For.
    const clinic = await stack.app.inject({
      method: 'GET',
      url: '/v1/catalog/exams',
      remoteAddress: '127.0.0.1',
      headers: { ...auth(TOKENS.a), 'x-forwarded-for': '192.0.2.7' },
    });
    expect(clinic.statusCode).not.toBe(429);

    // The first few refusals are on the trail one by one; the rest in one record for the address and its minute.
    await stack.app.signInGuard.close();
    const records = trail().slice(before);
    const alone = records.filter((r) => r.action === 'admin.sign-in' && r.outcome.startsWith('refused'));
    expect(alone.length).toBeLessThanOrEqual(11);
    const bulk = records.filter((r) => r.action === 'sign-in.refused-in-bulk');
    expect(bulk).toEqual([
      expect.objectContaining({
        details: expect.objectContaining({ source: '203.0.113.9', refused: LIMIT, throttled: 300 - LIMIT + 1 }),
      }),
    ]);
    expect(records.length).toBeLessThan(20);
  });

  it('counts a wrong clinic token the same, before the body is read', async () => {
    const answers = [];
    for (let i = 0; i < LIMIT + 5; i++) {
      const r = await stack.app.inject({
        method: 'POST',
        url: '/v1/journeys',
        remoteAddress: '203.0.113.77',
        headers: { ...auth(`nope-${i}`), 'content-type': 'application/json', 'idempotency-key': `k${i}` },
        payload: '{}',
      });
      answers.push(r.statusCode);
    }
    expect(answers.slice(0, LIMIT)).toEqual(Array(LIMIT).fill(401));
    expect(answers.slice(LIMIT)).toEqual(Array(5).fill(429));
  });

  /** Sends only the head of a POST that announces a 4 MiB body; resolves with the answer's status line. */
  function announceBody(token: string, address?: string): Promise<string> {
    const url = new URL(stack.url);
    return new Promise((resolve, reject) => {
      const socket = net.connect(Number(url.port), url.hostname);
      let answer = '';
      socket.setTimeout(5_000, () => {
        socket.destroy();
        reject(new Error('no answer before the body: the server waited to read it'));
      });
      socket.on('data', (d) => {
        answer += d.toString('latin1');
        if (answer.includes('\r\n')) {
          socket.destroy();
          resolve(answer.split('\r\n')[0]!);
        }
      });
      socket.on('error', reject);
      socket.write(
        'POST /v1/journeys HTTP/1.1\r\n' +
          `Host: ${url.host}\r\n` +
          `Authorization: Bearer ${token}\r\n` +
          (address ? `X-Forwarded-For: ${address}\r\n` : '') +
          'Idempotency-Key: big-body\r\n' +
          'Content-Type: application/json\r\n' +
          `Content-Length: ${4 * 1024 * 1024}\r\n\r\n{"patient":`,
      );
    });
  }

  it('answers a refused request without reading its body: a wrong token, and a clinic past its rate', async () => {
    expect(await announceBody('wrong-token', '192.0.2.200')).toMatch(/^HTTP\/1\.1 401/);
    // Clinic B's rate is 3 a minute in this suite: the fourth request is refused before its body is read.
    for (let i = 0; i < 3; i++) {
      await stack.app.inject({ method: 'GET', url: '/v1/catalog/exams', headers: auth(TOKENS.b) });
    }
    expect(await announceBody(TOKENS.b)).toMatch(/^HTTP\/1\.1 429/);
  });
});
