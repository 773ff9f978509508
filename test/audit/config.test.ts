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
    const beside = { store: 'file', intervalMs: 60_000 };
    expect(loadConfig(BASE).audit).toEqual({ store: 'file', checkpoints: beside });
    expect(auditLogFrom(loadConfig(BASE).audit)).toBeUndefined();
    const file = path.join(dir, 'audit.jsonl');
    const config = loadConfig({ ...BASE, AUDIT_FILE: file });
    expect(config.audit).toEqual({ store: 'file', file, checkpoints: beside });
    expect(auditLogFrom(config.audit)).toBeInstanceOf(FileAuditLog);
  });

  it('is the PostgreSQL table with AUDIT_STORE=postgres, the URL from the variable or a file', async () => {
    const off = { store: 'off', intervalMs: 60_000 };
    expect(loadConfig({ ...BASE, AUDIT_STORE: 'postgres', AUDIT_DATABASE_URL: URL }).audit).toEqual({
      store: 'postgres',
      databaseUrl: URL,
      checkpoints: off,
    });
    const secretFile = path.join(dir, 'audit-url');
    writeFileSync(secretFile, `${URL}\n`);
    const { audit } = loadAuditConfig({ AUDIT_STORE: 'postgres', AUDIT_DATABASE_URL_FILE: secretFile });
    expect(audit).toEqual({ store: 'postgres', databaseUrl: URL, checkpoints: off });
    const store = auditLogFrom(audit);
    expect(store).toBeInstanceOf(PostgresAuditLog);
    await store!.close();
  });

  it('checkpoints the head beside a trail file, or to a bucket with Object Lock (the shared table), or not at all', () => {
    const file = path.join(dir, 'api.jsonl');
    const bucket = { AUDIT_CHECKPOINT_BUCKET: 'journey-audit', AUDIT_CHECKPOINT_ENDPOINT: 'http://objects:9000' };
    expect(
      loadConfig({ ...BASE, AUDIT_STORE: 'postgres', AUDIT_DATABASE_URL: URL, ...bucket }).audit.checkpoints,
    ).toEqual({
      store: 's3',
      intervalMs: 60_000,
      bucket: 'journey-audit',
      prefix: 'audit-checkpoints/',
      endpoint: 'http://objects:9000',
      region: 'us-east-1',
      retentionDays: 2190,
    });
    expect(loadConfig({ ...BASE, AUDIT_FILE: file, AUDIT_CHECKPOINTS: 'off' }).audit.checkpoints).toEqual({
      store: 'off',
      intervalMs: 60_000,
    });
    expect(refusal({ AUDIT_STORE: 'postgres', AUDIT_DATABASE_URL: URL, AUDIT_CHECKPOINTS: 'file' })).toContain(
      'AUDIT_CHECKPOINTS: file goes beside a trail file; the table is checkpointed to s3',
    );
    expect(refusal({ AUDIT_CHECKPOINTS: 's3' })).toContain(
      'AUDIT_CHECKPOINT_BUCKET is required when AUDIT_CHECKPOINTS is s3',
    );
    expect(refusal({ AUDIT_CHECKPOINTS: 'somewhere' })).toContain('AUDIT_CHECKPOINTS: must be file, s3 or off');
    expect(refusal({ AUDIT_CHECKPOINT_INTERVAL_MS: '600000' })).toContain(
      'AUDIT_CHECKPOINT_INTERVAL_MS: at most 60000',
    );
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
