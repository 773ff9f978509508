// The audit store's settings: AUDIT_STORE file (AUDIT_FILE, the default) or postgres (AUDIT_DATABASE_URL, a secret,
// from the variable or a file), each fault named by its variable and never echoed; auditLogFrom makes the store.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { auditLogFrom, FileAuditLog, PostgresAuditLog } from '../../src/audit';
import { ConfigError, loadAuditConfig, loadConfig } from '../../src/config';

const BASE = { WEBHOOK_SECRET: 'webhook-secret-for-tests-0123456789', PAYLOAD_ENCRYPTION_DISABLED: 'true' };
const URL = 'postgres://journey_audit_writer:s3cret-pass-word@db.internal:5432/journeys';

function refusal(env: Record<string, string>): string {
  try {
    loadConfig({ ...BASE, ...env });
  } catch (err) {
    if (err instanceof ConfigError) return err.message;
    throw err;
  }
  throw new Error('accepted');
}

describe('the audit store settings', () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'audit-config-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('is the file of AUDIT_FILE by default, or none', () => {
    expect(loadConfig(BASE).audit).toEqual({ store: 'file' });
    expect(auditLogFrom(loadConfig(BASE).audit)).toBeUndefined();
    const file = path.join(dir, 'audit.jsonl');
    const config = loadConfig({ ...BASE, AUDIT_FILE: file });
    expect(config.audit).toEqual({ store: 'file', file });
    expect(auditLogFrom(config.audit)).toBeInstanceOf(FileAuditLog);
  });

  it('is the PostgreSQL table with AUDIT_STORE=postgres, the URL from the variable or a file', async () => {
    expect(loadConfig({ ...BASE, AUDIT_STORE: 'postgres', AUDIT_DATABASE_URL: URL }).audit).toEqual({
      store: 'postgres',
      databaseUrl: URL,
    });
    const secretFile = path.join(dir, 'audit-url');
    writeFileSync(secretFile, `${URL}\n`);
    const { audit } = loadAuditConfig({ AUDIT_STORE: 'postgres', AUDIT_DATABASE_URL_FILE: secretFile });
    expect(audit).toEqual({ store: 'postgres', databaseUrl: URL });
    const store = auditLogFrom(audit);
    expect(store).toBeInstanceOf(PostgresAuditLog);
    await store!.close();
  });

  it('names the variable at fault, never its value', () => {
    expect(refusal({ AUDIT_STORE: 'sqlite' })).toContain('AUDIT_STORE: must be file or postgres');
    expect(refusal({ AUDIT_STORE: 'postgres' })).toContain(
      'audit.databaseUrl: AUDIT_DATABASE_URL (or AUDIT_DATABASE_URL_FILE) is required when AUDIT_STORE is postgres',
    );
    const bad = refusal({ AUDIT_STORE: 'postgres', AUDIT_DATABASE_URL: 'mysql://u:s3cret-pass-word@h/d' });
    expect(bad).toContain('AUDIT_DATABASE_URL: a postgres:// URL');
    expect(bad).not.toContain('s3cret-pass-word');
    expect(() =>
      loadAuditConfig({ AUDIT_STORE: 'postgres', AUDIT_DATABASE_URL_FILE: path.join(dir, 'missing') }),
    ).toThrow(/AUDIT_DATABASE_URL_FILE: cannot read/);
  });
});
