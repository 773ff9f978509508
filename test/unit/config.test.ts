import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { stackTemporalProfile } from '../../scripts/lib/stack-secrets';
import { ConfigError, loadCodecConfig, loadConfig } from '../../src/config';

const base = { WEBHOOK_SECRET: 'webhook-secret-0123456789' };

describe('configuration', () => {
  it('names the variable of a bad number, not its value', () => {
    expect(() => loadConfig({ ...base, API_PORT: 'notaport' })).toThrow(ConfigError);
    expect(() => loadConfig({ ...base, API_PORT: 'notaport' })).toThrow(/API_PORT: /);
    expect(() => loadConfig({ ...base, JOURNEY_CONSULTATION_DEADLINE_MS: '-5' })).toThrow(
      /JOURNEY_CONSULTATION_DEADLINE_MS: /,
    );
    expect(() => loadConfig({ ...base, JOURNEY_REMINDERS_MS: '1000,soon' })).toThrow(/JOURNEY_REMINDERS_MS: /);
  });

  it('takes the callbacks a journey accepts before it asks for a person: 100, or the bounded setting', () => {
    expect(loadConfig(base).callbackFloodLimit).toBe(100);
    expect(loadConfig({ ...base, JOURNEY_CALLBACK_FLOOD_LIMIT: '400' }).callbackFloodLimit).toBe(400);
    // Past 5,000 a journey's history could pass Temporal's limit before anyone is asked.
    expect(() => loadConfig({ ...base, JOURNEY_CALLBACK_FLOOD_LIMIT: '100000' })).toThrow(/callbackFloodLimit/);
    expect(() => loadConfig({ ...base, JOURNEY_CALLBACK_FLOOD_LIMIT: 'many' })).toThrow(/JOURNEY_CALLBACK_FLOOD_LIMIT/);
  });

  it('keeps 4 frames per workflow stack by default, takes 0 to 100, and names a bad setting', () => {
    expect(loadConfig(base).worker.workflowStackFrames).toBe(4);
    expect(loadConfig({ ...base, WORKFLOW_STACK_TRACE_FRAMES: '0' }).worker.workflowStackFrames).toBe(0);
    expect(loadConfig({ ...base, WORKFLOW_STACK_TRACE_FRAMES: '10' }).worker.workflowStackFrames).toBe(10);
    expect(() => loadConfig({ ...base, WORKFLOW_STACK_TRACE_FRAMES: '101' })).toThrow(
      /WORKFLOW_STACK_TRACE_FRAMES: at most 100$/,
    );
    expect(() => loadConfig({ ...base, WORKFLOW_STACK_TRACE_FRAMES: 'all' })).toThrow(
      /\n {2}WORKFLOW_STACK_TRACE_FRAMES: /,
    );
    expect(() => loadConfig({ ...base, WORKFLOW_STACK_TRACE_FRAMES: '-1' })).toThrow(
      /\n {2}WORKFLOW_STACK_TRACE_FRAMES: /,
    );
  });

  it("reads the CLI's default profile, except in a stack started here (its own empty profile)", () => {
    const home = mkdtempSync(path.join(tmpdir(), 'config-home-'));
    try {
      mkdirSync(path.join(home, '.config', 'temporalio'), { recursive: true });
      writeFileSync(
        path.join(home, '.config', 'temporalio', 'temporal.toml'),
        '[profile.default]\naddress = "cloud.example.test:7233"\napi_key = "a-cloud-key"\n',
      );
      const own = { ...base, HOME: home, TEMPORAL_ADDRESS: '127.0.0.1:7233' };
      expect(loadConfig(own).temporal.apiKey).toBe('a-cloud-key');
      const stack = loadConfig({ ...own, TEMPORAL_CONFIG_FILE: stackTemporalProfile(path.join(home, 'stack')) });
      expect(stack.temporal).toMatchObject({ address: '127.0.0.1:7233', apiKey: undefined, namespace: 'default' });
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  });

  it('names a secret file it cannot read', () => {
    expect(() => loadConfig({ WEBHOOK_SECRET_FILE: '/nonexistent/webhook-secret' })).toThrow(
      'WEBHOOK_SECRET_FILE: cannot read /nonexistent/webhook-secret (ENOENT)',
    );
  });

  it('runs the worker as a version of its deployment wherever a build id is given, unless versioning is off', () => {
    expect(loadConfig(base).worker.deployment).toBeUndefined();
    expect(loadConfig({ ...base, WORKER_BUILD_ID: '25d4cdb4a391' }).worker.deployment).toEqual({
      name: 'patient-journey-engine',
      buildId: '25d4cdb4a391',
      bootstrapCurrent: true,
    });
    expect(
      loadConfig({ ...base, WORKER_BUILD_ID: 'v2', WORKER_DEPLOYMENT_NAME: 'journeys', WORKER_BOOTSTRAP_CURRENT: 'no' })
        .worker.deployment,
    ).toEqual({ name: 'journeys', buildId: 'v2', bootstrapCurrent: false });
    expect(loadConfig({ ...base, WORKER_BUILD_ID: 'v2', WORKER_VERSIONING: 'off' }).worker.deployment).toBeUndefined();
    expect(() => loadConfig({ ...base, WORKER_VERSIONING: 'on' })).toThrow(/WORKER_BUILD_ID: required/);
    expect(() => loadConfig({ ...base, WORKER_VERSIONING: 'maybe' })).toThrow(/WORKER_VERSIONING: on or off/);
    expect(() => loadConfig({ ...base, WORKER_BUILD_ID: 'v 2/x' })).toThrow(/WORKER_BUILD_ID: letters/);
    expect(loadConfig(base).worker.shutdownForceMs).toBe(8_000);
  });

  it('names a missing required setting', () => {
    expect(() => loadConfig({})).toThrow(/api\.webhookSecret/);
  });

  it('chooses the callback inbox: files by default, PostgreSQL with its URL, and names what is wrong', () => {
    const files = loadConfig({ ...base, DATA_DIR: '/srv/journeys' });
    expect(files.inbox).toEqual({
      store: 'files',
      dir: '/srv/journeys/inbox',
      deadLetterDir: '/srv/journeys/dead-letters',
      legacySpoolDir: '/srv/journeys/spool',
      settles: 'deferred',
    });
    expect(files.forwarder).toEqual({
      concurrency: 16,
      maxBackoffMs: 30_000,
      ackPressureMs: 5,
      maxDeferMs: 10_000,
      policy: 'adaptive',
      signalTimeoutMs: 3_000,
      thread: true,
      threadNice: 5,
    });
    expect(loadConfig({ ...base, FORWARDER_POLICY: 'surge' }).forwarder.policy).toBe('surge');
    expect(() => loadConfig({ ...base, FORWARDER_POLICY: 'eager' })).toThrow(
      'FORWARDER_POLICY: adaptive, steady or surge',
    );
    expect(loadConfig({ ...base, FORWARDER_MAX_DEFER_MS: '0' }).forwarder.maxDeferMs).toBe(0);
    expect(() => loadConfig({ ...base, FORWARDER_MAX_DEFER_MS: 'soon' })).toThrow('FORWARDER_MAX_DEFER_MS');
    expect(loadConfig({ ...base, FORWARDER_THREAD: 'false', FORWARDER_THREAD_NICE: '0' }).forwarder).toMatchObject({
      thread: false,
      threadNice: 0,
    });
    expect(() => loadConfig({ ...base, FORWARDER_THREAD: 'sometimes' })).toThrow('FORWARDER_THREAD: expected true');
    expect(() => loadConfig({ ...base, FORWARDER_THREAD_NICE: '20' })).toThrow('FORWARDER_THREAD_NICE');
    const url = 'postgres://journeys:s3cret-pw@db:5432/journeys';
    const pg = loadConfig({ ...base, INBOX_STORE: 'postgres', INBOX_DATABASE_URL: url, FORWARDER_CONCURRENCY: '4' });
    expect(pg.inbox).toEqual({ store: 'postgres', databaseUrl: url, poolSize: 10, settles: 'deferred' });
    expect(loadConfig({ ...base, INBOX_SETTLES: 'durable' }).inbox).toMatchObject({ settles: 'durable' });
    expect(() => loadConfig({ ...base, INBOX_SETTLES: 'later' })).toThrow('INBOX_SETTLES: deferred or durable');
    expect(pg.forwarder.concurrency).toBe(4);
    // The spool's backoff setting of earlier versions still works; the new name wins.
    expect(loadConfig({ ...base, SPOOL_MAX_BACKOFF_MS: '500' }).forwarder.maxBackoffMs).toBe(500);
    expect(
      loadConfig({ ...base, SPOOL_MAX_BACKOFF_MS: '500', FORWARDER_MAX_BACKOFF_MS: '700' }).forwarder.maxBackoffMs,
    ).toBe(700);
    expect(() => loadConfig({ ...base, INBOX_STORE: 'redis' })).toThrow('INBOX_STORE: must be files or postgres');
    expect(() => loadConfig({ ...base, INBOX_STORE: 'postgres' })).toThrow(
      /INBOX_DATABASE_URL is required when INBOX_STORE is postgres/,
    );
    // A bad URL setting is named, its value (a password) never echoed.
    try {
      loadConfig({ ...base, INBOX_STORE: 'postgres', INBOX_DATABASE_URL: url, INBOX_DATABASE_POOL_SIZE: 'x' });
      throw new Error('expected a ConfigError');
    } catch (err) {
      expect((err as Error).message).toMatch(/INBOX_DATABASE_POOL_SIZE/);
      expect((err as Error).message).not.toContain('s3cret-pw');
    }
  });

  it('chooses the attachment store: the folder by default, an S3 bucket when asked, and names what is missing', () => {
    expect(loadConfig({ ...base, DATA_DIR: '/srv/journeys' })).toMatchObject({
      attachmentsDir: '/srv/journeys/attachments',
      attachmentStore: { kind: 'folder' },
    });
    const s3 = loadConfig({
      ...base,
      ATTACHMENTS_STORE: 's3',
      ATTACHMENTS_S3_BUCKET: 'journey-attachments',
      ATTACHMENTS_S3_PREFIX: 'prod/',
      ATTACHMENTS_S3_ENDPOINT: 'http://objects:9000',
    });
    expect(s3.attachmentStore).toEqual({
      kind: 's3',
      bucket: 'journey-attachments',
      prefix: 'prod/',
      endpoint: 'http://objects:9000',
      region: 'us-east-1',
    });
    expect(() => loadConfig({ ...base, ATTACHMENTS_STORE: 'gcs' })).toThrow('ATTACHMENTS_STORE: must be folder or s3');
    expect(() => loadConfig({ ...base, ATTACHMENTS_STORE: 's3' })).toThrow(
      /ATTACHMENTS_S3_BUCKET is required when ATTACHMENTS_STORE is s3/,
    );
    expect(() =>
      loadConfig({ ...base, ATTACHMENTS_STORE: 's3', ATTACHMENTS_S3_BUCKET: 'b', ATTACHMENTS_S3_ENDPOINT: 'objects' }),
    ).toThrow(/ATTACHMENTS_S3_ENDPOINT must be a URL/);
  });

  it("bounds each clinic's attachments by default, takes other bounds (0: none), and names a bad one", () => {
    expect(loadConfig(base)).toMatchObject({
      attachmentQuota: { bytes: 2 * 1024 ** 3, count: 2_000 },
      attachmentOrphanGraceMs: 86_400_000,
    });
    const set = loadConfig({
      ...base,
      ATTACHMENTS_QUOTA_BYTES: '0',
      ATTACHMENTS_QUOTA_COUNT: '50',
      ATTACHMENTS_ORPHAN_GRACE_MS: '3600000',
    });
    expect(set).toMatchObject({ attachmentQuota: { bytes: 0, count: 50 }, attachmentOrphanGraceMs: 3_600_000 });
    expect(() => loadConfig({ ...base, ATTACHMENTS_QUOTA_COUNT: '-1' })).toThrow(/ATTACHMENTS_QUOTA_COUNT: /);
    expect(() => loadConfig({ ...base, ATTACHMENTS_QUOTA_BYTES: '1.5GB' })).toThrow(/ATTACHMENTS_QUOTA_BYTES: /);
  });

  it('lets the codec server start with its own settings only', () => {
    const keys = `k:${randomBytes(32).toString('base64')}`;
    const { codec } = loadCodecConfig({ PAYLOAD_ENCRYPTION_KEYS: keys, CODEC_PORT: '9999' });
    expect(codec).toMatchObject({ serverPort: 9999, disabled: false });
    expect(codec.keys.map((k) => k.id)).toEqual(['k']);
    expect(() => loadCodecConfig({ CODEC_PORT: 'x' })).toThrow(/CODEC_PORT: /);
  });

  it('takes an identity provider for the codec server: issuer, audience, role claim, skew, decode roles', () => {
    const { codec } = loadCodecConfig({
      OIDC_ISSUER: 'https://id.clinic.example/realms/journeys',
      OIDC_AUDIENCE: 'temporal-ui, journeys-api',
      CODEC_DECODE_ROLES: 'journey-operator',
      CODEC_AUDIT_FILE: '/var/lib/codec/audit.jsonl',
      // Beyond loopback, the identity provider is the guard: no static token needed.
      CODEC_HOST: '0.0.0.0',
    });
    expect(codec.oidc).toEqual({
      issuer: 'https://id.clinic.example/realms/journeys',
      audience: ['temporal-ui', 'journeys-api'],
      roleClaim: 'realm_access.roles',
      clockSkewSeconds: 30,
      decodeRoles: ['journey-operator'],
    });
    expect(codec.auditFile).toBe('/var/lib/codec/audit.jsonl');
    expect(() => loadCodecConfig({ OIDC_ISSUER: 'not a url' })).toThrow(/OIDC_ISSUER: the issuer URL/);
    expect(() => loadCodecConfig({ OIDC_ISSUER: 'https://id.example', CODEC_DECODE_ROLES: ' , ' })).toThrow(
      /CODEC_DECODE_ROLES: at least one role/,
    );
    expect(() => loadCodecConfig({ CODEC_HOST: '0.0.0.0' })).toThrow(/set OIDC_ISSUER/);
  });
});
