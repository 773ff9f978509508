// One zod-validated configuration object, read once from the environment. Secrets come from the environment or
// from files named by *_FILE variables, never from the repository.
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { loadClientConfigProfile, type ClientConfigTLS } from '@temporalio/envconfig';
import { z } from 'zod';
import { parseEncryptionKeys, type EncryptionKey } from './encryption-keys';
import { DEFAULT_TIMINGS, JourneyTimings } from './contract/journey-request';
import { TASK_QUEUE_DEFAULT } from './contract/definitions';
import { DEFAULT_WORKFLOW_STACK_FRAMES, MAX_WORKFLOW_STACK_FRAMES } from './workflow-stack-frames';

const ms = z.coerce.number().int().positive();
const port = z.coerce.number().int().min(0).max(65_535);
/** A whole number, 0 or more (0 often: no bound). */
const wholeNumber = z.coerce.number().int().min(0);
const bool = z
  .enum(['true', 'false', '1', '0', 'yes', 'no'])
  .transform((v) => v === 'true' || v === '1' || v === 'yes');

/** One clinic the engine acts for: its key at the exam service and its own credentials with us. */
/**
 * Where the head of the audit trail is checkpointed, at least every minute and at stop (audit/checkpoints.ts):
 * `file` beside a trail file, `s3` a bucket with Object Lock (the production shapes), `off`.
 */
export const AuditCheckpoints = z
  .discriminatedUnion('store', [
    z.object({ store: z.literal('file') }),
    z.object({
      store: z.literal('s3'),
      bucket: z.string().min(1, 'AUDIT_CHECKPOINT_BUCKET is required when AUDIT_CHECKPOINTS is s3'),
      prefix: z.string(),
      endpoint: z.string().url('AUDIT_CHECKPOINT_ENDPOINT must be a URL such as http://objects:9000').optional(),
      region: z.string().min(1),
      /** How long each checkpoint is locked (compliance mode): at least as long as the trail is kept. */
      retentionDays: z.number().int().min(1, 'AUDIT_CHECKPOINT_RETENTION_DAYS: at least 1').max(36_500),
    }),
    z.object({ store: z.literal('off') }),
  ])
  .and(
    z.object({ intervalMs: z.number().int().min(1_000).max(60_000, 'AUDIT_CHECKPOINT_INTERVAL_MS: at most 60000') }),
  );

/**
 * Where erasures are logged so that a restore of the key store from an older backup does not undo them
 * (PATIENT_ERASURE_LOG): a file, or the audit checkpoints' bucket with Object Lock.
 */
export const ErasureLogSettings = z.discriminatedUnion('store', [
  z.object({ store: z.literal('file'), file: z.string().min(1) }),
  z.object({
    store: z.literal('s3'),
    bucket: z.string().min(1, 'PATIENT_ERASURE_LOG_BUCKET (or AUDIT_CHECKPOINT_BUCKET) is required when it is s3'),
    prefix: z.string(),
    endpoint: z.string().url('PATIENT_ERASURE_LOG_ENDPOINT must be a URL such as http://objects:9000').optional(),
    region: z.string().min(1),
    /** How long each erasure is locked: at least as long as the oldest backup is kept. */
    retentionDays: z.number().int().min(1, 'PATIENT_ERASURE_LOG_RETENTION_DAYS: at least 1').max(36_500),
  }),
]);

/**
 * Per-patient data keys (PATIENT_KEY_STORE, src/patient-keys): every journey's payloads sealed under its patient's
 * key. `file`: one file the API writes and the worker and codec server read (one host); `postgres`: a table every
 * process shares; `off`: journeys sealed by the master key ring alone (and no erasure).
 */
export const PatientKeySettings = z.discriminatedUnion('store', [
  z.object({ store: z.literal('off') }),
  z.object({ store: z.literal('file'), file: z.string().min(1), erasureLog: ErasureLogSettings }),
  z.object({
    store: z.literal('postgres'),
    /** postgres://user:password@host:port/database: a secret (PATIENT_KEY_DATABASE_URL or ..._FILE). */
    databaseUrl: z
      .string()
      .min(
        1,
        'PATIENT_KEY_DATABASE_URL (or PATIENT_KEY_DATABASE_URL_FILE) is required when PATIENT_KEY_STORE is postgres',
      )
      .regex(/^postgres(ql)?:\/\//, 'PATIENT_KEY_DATABASE_URL: a postgres:// URL'),
    erasureLog: ErasureLogSettings,
  }),
]);
export type PatientKeySettings = z.infer<typeof PatientKeySettings>;

export const ClinicConfig = z.object({
  clinicId: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/),
  name: z.string().min(1).optional(),
  /** The clinic's api_key at the exam service. Never logged, never in a workflow history. */
  examServiceApiKey: z.string().min(1),
  /** Overrides EXAM_SERVICE_BASE_URL for this clinic. */
  examServiceBaseUrl: z.url().optional(),
  /** SHA-256 (hex) of each bearer token that acts as this clinic on our API. */
  apiTokenSha256: z.array(z.string().regex(/^[0-9a-f]{64}$/, 'hex SHA-256 of the token')).default([]),
  /** Standard Webhooks signing secret for the clinic's notifications (`whsec_` + base64, or raw). */
  notificationSecret: z.string().min(16).optional(),
});
export type ClinicConfig = z.infer<typeof ClinicConfig>;

/** What webhook pressure does to the inbox forwarder (FORWARDER_POLICY; src/inbox/forwarder.ts). */
export const FORWARDER_POLICIES = ['adaptive', 'steady', 'surge'] as const;
export type ForwarderPolicy = (typeof FORWARDER_POLICIES)[number];

const ConfigSchema = z.object({
  /** The Temporal connection as the CLI resolves it: a temporal.toml profile, then the TEMPORAL_* variables. */
  temporal: z.object({
    address: z.string().min(1),
    namespace: z.string().min(1),
    taskQueue: z.string().min(1),
    apiKey: z.string().min(1).optional(),
    /** As @temporalio/envconfig gives it (files named, read at connection); undefined: on with an API key only. */
    tls: z.custom<ClientConfigTLS>().optional(),
    grpcMeta: z.record(z.string(), z.string()).optional(),
    /**
     * A service account of the identity provider (client credentials): its access token goes to the Temporal server
     * as the bearer token, refreshed before it expires (a server with the JWT authorizer on).
     */
    oauth: z
      .object({
        clientId: z.string().min(1, 'TEMPORAL_OAUTH_CLIENT_ID: required'),
        clientSecret: z
          .string()
          .min(1, 'TEMPORAL_OAUTH_CLIENT_SECRET (or TEMPORAL_OAUTH_CLIENT_SECRET_FILE): required'),
        tokenUrl: z.url('TEMPORAL_OAUTH_TOKEN_URL: the token endpoint, a URL'),
        scope: z.string().min(1).optional(),
      })
      .optional(),
  }),
  examService: z.object({
    baseUrl: z.url(),
    connectTimeoutMs: ms,
    requestTimeoutMs: ms,
    catalogCacheTtlMs: ms,
  }),
  clinics: z.array(ClinicConfig).refine((cs) => new Set(cs.map((c) => c.clinicId)).size === cs.length, {
    message: 'clinic ids must be unique',
  }),
  api: z.object({
    host: z.string().min(1),
    port,
    /** Where the exam service reaches our webhook: {publicBaseUrl}/webhooks/exam-service/{journeyId}/{token}. */
    publicBaseUrl: z.url(),
    /** HMAC key of the per-journey webhook token. */
    webhookSecret: z.string().min(16, 'at least 16 characters'),
    /** Admin routes (dead letters, replays) need this bearer token; they are off without it. */
    adminTokenSha256: z
      .string()
      .regex(/^[0-9a-f]{64}$/)
      .optional(),
    bodyLimitBytes: z.number().int().positive(),
    rateLimitPerMinute: z.number().int().positive(),
    /**
     * Requests from one address refused sign-in (no token, or a wrong one) within a minute before that address's
     * requests without a valid token are answered 429 for the rest of the minute, their body not read (a valid token
     * is served all the same).
     */
    signInFailuresPerMinute: z.number().int().positive(),
    /**
     * The load balancers whose X-Forwarded-For names the caller (addresses or CIDR ranges): the source the limits
     * count by. Exactly the balancer in front, which replaces the header: anyone else trusted could name any source.
     * Empty: the connection's own address.
     */
    trustedProxies: z.array(z.string().min(1)),
    /** Callback bodies up to this size are read and kept (a callback over 1 MiB becomes a dead letter). */
    webhookMaxBodyBytes: z.number().int().positive(),
    /** Deadline of the API's own Temporal calls (describe, query, update, a forwarded signal). */
    temporalTimeoutMs: z.number().int().positive(),
    /** Dead letters older than this many days are deleted, each deletion audited (0: kept until removed by hand). */
    deadLetterRetentionDays: z.number().int().min(0).max(3650),
    /** The API's audit trail (JSON lines, hash-chained): retention's deletions. */
    auditFile: z.string().min(1).optional(),
  }),
  /** Where the webhook keeps callbacks before the forwarder signals them, and the dead letters. */
  inbox: z.discriminatedUnion('store', [
    z.object({
      store: z.literal('files'),
      /**
       * INBOX_SETTLES: `deferred` (the default) lets the record that a callback was signalled wait for the webhook's
       * next write; `durable` writes it at once. A settle lost in a crash is signalled again, and the journey knows it.
       */
      settles: z.enum(['deferred', 'durable'], { error: 'INBOX_SETTLES: deferred or durable' }).optional(),
      dir: z.string().min(1),
      deadLetterDir: z.string().min(1),
      /** The spool folder of earlier versions, imported at start. */
      legacySpoolDir: z.string().min(1),
    }),
    z.object({
      store: z.literal('postgres'),
      /** postgres://user:password@host:port/database: a secret (INBOX_DATABASE_URL or INBOX_DATABASE_URL_FILE). */
      databaseUrl: z.string().min(1, 'INBOX_DATABASE_URL is required when INBOX_STORE is postgres'),
      poolSize: z.number().int().positive(),
      /** INBOX_SETTLES: `deferred` commits a claim's settle without waiting for its WAL flush; `durable` waits. */
      settles: z.enum(['deferred', 'durable'], { error: 'INBOX_SETTLES: deferred or durable' }).optional(),
    }),
  ]),
  forwarder: z.object({
    /** Signals in flight at once per API replica (one per journey). */
    concurrency: z.number().int().positive(),
    /** Longest wait between attempts while Temporal is unreachable. */
    maxBackoffMs: z.number().int().positive(),
    /** Three webhook answers slower than this within a second hold new signals back (a surge); 0: never. */
    ackPressureMs: z.number().int().min(0),
    /** Under that pressure a callback waits to be signalled at most this long after it was received. */
    maxDeferMs: z.number().int().min(0),
    /**
     * What that pressure does (FORWARDER_POLICY): `adaptive` (the default) holds new signals through a burst (each up to
     * maxDeferMs) and otherwise halves the signals in flight, down to 2; `steady` only halves them; `surge` holds new
     * signals under any pressure (up to maxDeferMs) (docs/design-notes.md#acknowledgement-pressure).
     */
    policy: z.enum(FORWARDER_POLICIES, { error: 'FORWARDER_POLICY: adaptive, steady or surge' }),
    /**
     * Deadline of one forwarded signal. Short on purpose: while Temporal is away a signal fails at its deadline (the
     * client retries within it), and the forwarder's probe finds Temporal back sooner than a long deadline runs out.
     */
    signalTimeoutMs: z.number().int().positive(),
    /** Signals are sent from a thread of their own, so the webhook's event loop does not do their work. */
    thread: z.boolean(),
    /** That thread's nice value: under it when cores are short, the acknowledgements come first (Linux). */
    threadNice: z.number().int().min(0).max(19),
  }),
  codec: z.object({
    /** Payload encryption keys, the first one active; every one decrypts (rotation). */
    keys: z.array(z.custom<EncryptionKey>()),
    /** Explicitly run without payload encryption (throwaway setups only: histories then hold PHI in the clear). */
    disabled: z.boolean(),
    serverHost: z.string().min(1),
    serverPort: port,
    /** Browser origins allowed to call the codec server: the Temporal UI's. */
    corsOrigins: z.array(z.string().min(1)),
    /**
     * The `Host` names the codec server answers to (`name:port`, or `name` for any port); others get 421. Unset: on
     * loopback its own address and the loopback names on its port, beyond loopback any name (a token is required).
     */
    allowedHosts: z.array(z.string().min(1)).optional(),
    /** HTTPS (CODEC_TLS_CERT_FILE, CODEC_TLS_KEY_FILE): the Web UI passes access tokens to an https endpoint only. */
    tls: z.object({ certFile: z.string().min(1), keyFile: z.string().min(1) }).optional(),
    /** Bearer token the codec server requires, when set (with an identity provider: automation only). */
    serverToken: z.string().min(16).optional(),
    /** Who the static token is on the audit trail: `machine:<name>` (a machine's job, never a person's decodes). */
    serverTokenName: z
      .string()
      .regex(/^[A-Za-z0-9._-]{1,64}$/, 'CODEC_SERVER_TOKEN_NAME: letters, digits, . _ - (at most 64)')
      .default('automation'),
    /** The identity provider whose access tokens the codec server checks on every request (OIDC_ISSUER). */
    oidc: z
      .object({
        issuer: z.url('OIDC_ISSUER: the issuer URL, as its tokens name it'),
        audience: z.array(z.string().min(1)).min(1, 'OIDC_AUDIENCE: at least one audience'),
        jwksUrl: z.url('OIDC_JWKS_URL: a URL').optional(),
        roleClaim: z.string().min(1),
        clockSkewSeconds: z.number().int().min(0).max(300),
        /** Roles that may decode (and encode) patient data. */
        decodeRoles: z.array(z.string().min(1)).min(1, 'CODEC_DECODE_ROLES: at least one role'),
      })
      .optional(),
    /** The codec server's audit trail: every decode and encode, and every refusal (JSON lines, hash-chained). */
    auditFile: z.string().min(1).optional(),
  }),
  dataDir: z.string().min(1),
  attachmentsDir: z.string().min(1),
  /** Where attachment bytes live: the folder above (one host, or a shared file system) or an S3-compatible bucket. */
  attachmentStore: z.discriminatedUnion('kind', [
    z.object({ kind: z.literal('folder') }),
    z.object({
      kind: z.literal('s3'),
      bucket: z.string().min(1, 'ATTACHMENTS_S3_BUCKET is required when ATTACHMENTS_STORE is s3'),
      prefix: z.string(),
      endpoint: z.string().url('ATTACHMENTS_S3_ENDPOINT must be a URL such as http://objects:9000').optional(),
      region: z.string().min(1),
    }),
  ]),
  /** What each clinic may keep in the attachment store (0: no bound); the API refuses an upload past it (429). */
  attachmentQuota: z.object({ bytes: z.number().int().min(0), count: z.number().int().min(0) }),
  /** An upload no journey takes is deleted once this old (the API's hourly sweep); 0: never. */
  attachmentOrphanGraceMs: z.number().int().min(0),
  worker: z.object({
    maxCachedWorkflows: z.number().int().positive(),
    maxConcurrentActivities: z.number().int().positive(),
    maxConcurrentWorkflowTasks: z.number().int().positive(),
    /** host:port of the worker's Prometheus page (the SDK's Runtime telemetry); undefined: none. */
    metricsAddress: z
      .string()
      .regex(
        /^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+):([1-9]\d{0,3}|[1-5]\d{4}|6[0-4]\d{3}|65[0-4]\d{2}|655[0-2]\d|6553[0-5])$/,
        'WORKER_METRICS_ADDRESS: host:port (e.g. 0.0.0.0:9464), or off',
      )
      .optional(),
    /** A workflow bundle built ahead (npm run build:workflows; the image has one); undefined: built at start. */
    workflowBundlePath: z.string().min(1).optional(),
    /** How long a stopping worker may take before it gives up waiting (a Temporal server gone first holds it). */
    shutdownForceMs: z.number().int().positive(),
    /** The frames each stack in workflow code keeps: the stack-trace query's view and its cost (workflow-stack-frames.ts). */
    workflowStackFrames: z.number().int().min(0).max(MAX_WORKFLOW_STACK_FRAMES),
    /**
     * Worker Deployment Versioning (docs/deploy.md#deploying-a-workflow-change): the worker polls as one version of
     * the deployment; undefined: unversioned (no build id, or WORKER_VERSIONING=off for a server without the feature).
     */
    deployment: z
      .object({
        name: z.string().regex(/^[A-Za-z0-9_-]{1,100}$/, 'WORKER_DEPLOYMENT_NAME: letters, digits, - and _'),
        buildId: z.string().regex(/^[A-Za-z0-9_.+-]{1,255}$/, 'WORKER_BUILD_ID: letters, digits, - _ . +'),
        /** Make this version current when the deployment has none yet (the first deploy). */
        bootstrapCurrent: z.boolean(),
      })
      .optional(),
  }),
  timings: JourneyTimings,
  /** Callbacks a journey takes before it asks for a person (an exam sends a handful; a flood is someone else's). */
  callbackFloodLimit: z.number().int().min(10).max(5_000),
  logLevel: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']),
  /** Unset: pretty lines on a terminal, JSON lines anywhere else. */
  logFormat: z.enum(['json', 'pretty'], { message: 'LOG_FORMAT: json or pretty' }).optional(),
  patientKeys: PatientKeySettings,
  /** The audit trail (AUDIT_STORE): the file AUDIT_FILE names (one process), or the table every process shares. */
  audit: z.discriminatedUnion('store', [
    z.object({ store: z.literal('file'), file: z.string().min(1).optional(), checkpoints: AuditCheckpoints }),
    z.object({
      store: z.literal('postgres'),
      /** postgres://writer:password@host:port/database: a secret (AUDIT_DATABASE_URL or AUDIT_DATABASE_URL_FILE). */
      databaseUrl: z
        .string()
        .min(1, 'AUDIT_DATABASE_URL (or AUDIT_DATABASE_URL_FILE) is required when AUDIT_STORE is postgres')
        .regex(/^postgres(ql)?:\/\//, 'AUDIT_DATABASE_URL: a postgres:// URL'),
      checkpoints: AuditCheckpoints,
    }),
  ]),
});
export type Config = z.infer<typeof ConfigSchema>;

/** The Worker Deployment the engine's workers belong to, unless WORKER_DEPLOYMENT_NAME names another. */
export const DEFAULT_DEPLOYMENT_NAME = 'patient-journey-engine';

type Env = Record<string, string | undefined>;

/** A secret from NAME, or from the file NAME_FILE points at (for mounted secrets). */
function secret(env: Env, name: string): string | undefined {
  const file = env[`${name}_FILE`];
  if (file) {
    try {
      return readFileSync(file, 'utf8').trim();
    } catch (err) {
      throw new ConfigError([`${name}_FILE: cannot read ${file} (${(err as NodeJS.ErrnoException).code ?? 'error'})`]);
    }
  }
  return env[name] || undefined;
}

function clinicsFrom(env: Env): unknown {
  const file = env.CLINICS_FILE;
  if (file) return JSON.parse(readFileSync(file, 'utf8'));
  if (env.CLINICS_JSON) return JSON.parse(env.CLINICS_JSON);
  return [];
}

/** A number setting: its default when unset, else a parse that names the variable (not its value) when it fails. */
function flag(name: string, value: string | undefined, fallback: boolean): boolean {
  if (value === undefined || value === '') return fallback;
  const parsed = bool.safeParse(value);
  if (!parsed.success) throw new ConfigError([`${name}: expected true or false (also 1/0, yes/no)`]);
  return parsed.data;
}

function num(schema: z.ZodType<number>, name: string, value: string | undefined, fallback: number): number {
  if (value === undefined || value === '') return fallback;
  const parsed = schema.safeParse(value);
  if (!parsed.success) throw new ConfigError([`${name}: ${parsed.error.issues[0]?.message ?? 'invalid'}`]);
  return parsed.data;
}

/**
 * The worker's deployment version: versioned wherever a build id is given (WORKER_BUILD_ID: the image's, or the
 * stacks' from the commit), unless WORKER_VERSIONING=off; WORKER_VERSIONING=on without a build id is an error.
 */
function workerDeployment(env: Env) {
  const buildId = env.WORKER_BUILD_ID?.trim() || undefined;
  const versioning = env.WORKER_VERSIONING?.trim().toLowerCase();
  if (versioning && !['on', 'off'].includes(versioning)) throw new ConfigError(['WORKER_VERSIONING: on or off']);
  if (versioning === 'off' || (!buildId && versioning !== 'on')) return undefined;
  if (!buildId) throw new ConfigError(['WORKER_BUILD_ID: required with WORKER_VERSIONING=on']);
  return {
    name: env.WORKER_DEPLOYMENT_NAME?.trim() || DEFAULT_DEPLOYMENT_NAME,
    buildId,
    bootstrapCurrent: flag('WORKER_BOOTSTRAP_CURRENT', env.WORKER_BOOTSTRAP_CURRENT, true),
  };
}

/** WORKER_METRICS_ADDRESS: unset, empty or `off` turns the worker's metrics page off. */
function workerMetricsAddress(value: string | undefined): string | undefined {
  const v = value?.trim();
  return v === undefined || v === '' || v.toLowerCase() === 'off' ? undefined : v;
}

/**
 * The Temporal connection by @temporalio/envconfig, as the Temporal CLI reads it (a temporal.toml profile overridden by
 * TEMPORAL_* variables); earlier names still work (docs/design-notes.md#the-temporal-connections-settings).
 */
function temporalSettings(env: Env) {
  if (env.TEMPORAL_TLS !== undefined && !bool.safeParse(env.TEMPORAL_TLS).success) {
    throw new ConfigError(['TEMPORAL_TLS: must be true or false']);
  }
  const standard: Record<string, string | undefined> = {
    TEMPORAL_CONFIG_FILE: env.TEMPORAL_CONFIG_FILE,
    TEMPORAL_PROFILE: env.TEMPORAL_PROFILE,
    // Where the CLI keeps its temporal.toml when TEMPORAL_CONFIG_FILE is unset.
    XDG_CONFIG_HOME: env.XDG_CONFIG_HOME,
    HOME: env.HOME,
    TEMPORAL_ADDRESS: env.TEMPORAL_ADDRESS,
    TEMPORAL_NAMESPACE: env.TEMPORAL_NAMESPACE,
    TEMPORAL_API_KEY: secret(env, 'TEMPORAL_API_KEY'),
    TEMPORAL_TLS: env.TEMPORAL_TLS === undefined ? undefined : String(bool.parse(env.TEMPORAL_TLS)),
    TEMPORAL_TLS_CLIENT_CERT_PATH: env.TEMPORAL_TLS_CLIENT_CERT_PATH ?? env.TEMPORAL_TLS_CERT,
    TEMPORAL_TLS_CLIENT_CERT_DATA: env.TEMPORAL_TLS_CLIENT_CERT_DATA,
    TEMPORAL_TLS_CLIENT_KEY_PATH: env.TEMPORAL_TLS_CLIENT_KEY_PATH ?? env.TEMPORAL_TLS_KEY,
    TEMPORAL_TLS_CLIENT_KEY_DATA: secret(env, 'TEMPORAL_TLS_CLIENT_KEY_DATA'),
    TEMPORAL_TLS_SERVER_CA_CERT_PATH: env.TEMPORAL_TLS_SERVER_CA_CERT_PATH,
    TEMPORAL_TLS_SERVER_CA_CERT_DATA: env.TEMPORAL_TLS_SERVER_CA_CERT_DATA,
    TEMPORAL_TLS_SERVER_NAME: env.TEMPORAL_TLS_SERVER_NAME,
  };
  // The library takes a missing file for an empty one; a file named on purpose must be there.
  if (standard.TEMPORAL_CONFIG_FILE && !existsSync(standard.TEMPORAL_CONFIG_FILE)) {
    throw new ConfigError([`TEMPORAL_CONFIG_FILE: no file at ${standard.TEMPORAL_CONFIG_FILE}`]);
  }
  let profile;
  try {
    profile = loadClientConfigProfile({
      overrideEnvVars: Object.fromEntries(
        Object.entries(standard).filter((e): e is [string, string] => e[1] !== undefined && e[1] !== ''),
      ),
    });
  } catch (err) {
    // Name the file and the profile, never echo the file: a TOML error quotes its line, which may hold an api_key.
    const { line, code } = err as { line?: number; code?: string };
    const where = standard.TEMPORAL_CONFIG_FILE
      ? `TEMPORAL_CONFIG_FILE (${standard.TEMPORAL_CONFIG_FILE})`
      : 'temporal.toml';
    const why = /^Profile '.*' not found/.test((err as Error).message)
      ? `has no profile ${standard.TEMPORAL_PROFILE}`
      : code
        ? `cannot be read (${code})`
        : `is not valid TOML${line ? ` (line ${line})` : ''}`;
    throw new ConfigError([`${where}: ${why}`]);
  }
  const tls = profile.tls;
  if (tls && !tls.disabled && Boolean(tls.clientCert) !== Boolean(tls.clientKey)) {
    throw new ConfigError([
      'TEMPORAL_TLS_CLIENT_CERT_PATH and TEMPORAL_TLS_CLIENT_KEY_PATH (or TEMPORAL_TLS_CERT and TEMPORAL_TLS_KEY): ' +
        'the client certificate and its key go together',
    ]);
  }
  return {
    address: profile.address ?? '127.0.0.1:7233',
    namespace: profile.namespace ?? 'default',
    taskQueue: env.TEMPORAL_TASK_QUEUE ?? TASK_QUEUE_DEFAULT,
    apiKey: profile.apiKey || undefined,
    tls,
    grpcMeta: profile.grpcMeta,
    ...temporalServiceAccount(env, Boolean(profile.apiKey)),
  };
}

/** TEMPORAL_OAUTH_*: the service account whose tokens this process presents to Temporal (none when unset). */
function temporalServiceAccount(env: Env, hasApiKey: boolean) {
  const clientId = env.TEMPORAL_OAUTH_CLIENT_ID?.trim();
  if (!clientId) return {};
  if (hasApiKey) {
    throw new ConfigError([
      'TEMPORAL_OAUTH_CLIENT_ID: set together with an API key; a connection presents one or the other',
    ]);
  }
  return {
    oauth: {
      clientId,
      clientSecret: secret(env, 'TEMPORAL_OAUTH_CLIENT_SECRET') ?? '',
      tokenUrl: env.TEMPORAL_OAUTH_TOKEN_URL ?? '',
      ...(env.TEMPORAL_OAUTH_SCOPE ? { scope: env.TEMPORAL_OAUTH_SCOPE } : {}),
    },
  };
}

export class ConfigError extends Error {
  constructor(readonly issues: string[]) {
    super(`invalid configuration:\n  ${issues.join('\n  ')}`);
    this.name = 'ConfigError';
  }
}

/**
 * Every environment variable loadConfig reads (a secret's `NAME_FILE` included), for deployment files to be checked
 * against; test/compose/config-env-vars.test.ts keeps it in step with the code below.
 */
export const CONFIG_ENV_VARS: readonly string[] = [
  'DATA_DIR',
  'TEMPORAL_ADDRESS',
  'TEMPORAL_NAMESPACE',
  'TEMPORAL_TASK_QUEUE',
  'TEMPORAL_OAUTH_CLIENT_ID',
  'TEMPORAL_OAUTH_CLIENT_SECRET',
  'TEMPORAL_OAUTH_CLIENT_SECRET_FILE',
  'TEMPORAL_OAUTH_TOKEN_URL',
  'TEMPORAL_OAUTH_SCOPE',
  'TEMPORAL_API_KEY',
  'TEMPORAL_API_KEY_FILE',
  'TEMPORAL_TLS',
  'TEMPORAL_TLS_CERT',
  'TEMPORAL_TLS_KEY',
  'TEMPORAL_CONFIG_FILE',
  'TEMPORAL_PROFILE',
  'XDG_CONFIG_HOME',
  'HOME',
  'TEMPORAL_TLS_CLIENT_CERT_PATH',
  'TEMPORAL_TLS_CLIENT_CERT_DATA',
  'TEMPORAL_TLS_CLIENT_KEY_PATH',
  'TEMPORAL_TLS_CLIENT_KEY_DATA',
  'TEMPORAL_TLS_CLIENT_KEY_DATA_FILE',
  'TEMPORAL_TLS_SERVER_CA_CERT_PATH',
  'TEMPORAL_TLS_SERVER_CA_CERT_DATA',
  'TEMPORAL_TLS_SERVER_NAME',
  'EXAM_SERVICE_BASE_URL',
  'EXAM_SERVICE_CONNECT_TIMEOUT_MS',
  'EXAM_SERVICE_REQUEST_TIMEOUT_MS',
  'EXAM_CATALOG_CACHE_TTL_MS',
  'CLINICS_FILE',
  'CLINICS_JSON',
  'API_HOST',
  'API_PORT',
  'PUBLIC_BASE_URL',
  'WEBHOOK_SECRET',
  'WEBHOOK_SECRET_FILE',
  'ADMIN_TOKEN_SHA256',
  'API_BODY_LIMIT_BYTES',
  'API_RATE_LIMIT_PER_MINUTE',
  'API_SIGN_IN_FAILURES_PER_MINUTE',
  'API_TRUSTED_PROXIES',
  'DEAD_LETTER_RETENTION_DAYS',
  'AUDIT_FILE',
  'WEBHOOK_MAX_BODY_BYTES',
  'API_TEMPORAL_TIMEOUT_MS',
  'INBOX_STORE',
  'INBOX_DIR',
  'INBOX_DATABASE_URL',
  'INBOX_DATABASE_URL_FILE',
  'INBOX_DATABASE_POOL_SIZE',
  'INBOX_SETTLES',
  'FORWARDER_CONCURRENCY',
  'FORWARDER_MAX_BACKOFF_MS',
  'FORWARDER_ACK_PRESSURE_MS',
  'FORWARDER_POLICY',
  'FORWARDER_MAX_DEFER_MS',
  'FORWARDER_SIGNAL_TIMEOUT_MS',
  'WORKFLOW_BUNDLE_PATH',
  'FORWARDER_THREAD',
  'FORWARDER_THREAD_NICE',
  'SPOOL_MAX_BACKOFF_MS',
  'PAYLOAD_ENCRYPTION_KEYS',
  'PAYLOAD_ENCRYPTION_KEYS_FILE',
  'PAYLOAD_ENCRYPTION_DISABLED',
  'CODEC_HOST',
  'CODEC_PORT',
  'CODEC_CORS_ORIGINS',
  'CODEC_ALLOWED_HOSTS',
  'CODEC_SERVER_TOKEN',
  'CODEC_SERVER_TOKEN_NAME',
  'CODEC_SERVER_TOKEN_FILE',
  'CODEC_DECODE_ROLES',
  'CODEC_TLS_CERT_FILE',
  'CODEC_TLS_KEY_FILE',
  'CODEC_AUDIT_FILE',
  'OIDC_ISSUER',
  'OIDC_AUDIENCE',
  'OIDC_JWKS_URL',
  'OIDC_ROLE_CLAIM',
  'OIDC_CLOCK_SKEW_SECONDS',
  'ATTACHMENTS_DIR',
  'ATTACHMENTS_STORE',
  'ATTACHMENTS_S3_BUCKET',
  'ATTACHMENTS_S3_PREFIX',
  'ATTACHMENTS_S3_ENDPOINT',
  'ATTACHMENTS_S3_REGION',
  'ATTACHMENTS_QUOTA_BYTES',
  'ATTACHMENTS_QUOTA_COUNT',
  'ATTACHMENTS_ORPHAN_GRACE_MS',
  'SPOOL_DIR',
  'DEAD_LETTER_DIR',
  'WORKER_MAX_CACHED_WORKFLOWS',
  'WORKER_MAX_CONCURRENT_ACTIVITIES',
  'WORKER_MAX_CONCURRENT_WORKFLOW_TASKS',
  'WORKER_METRICS_ADDRESS',
  'WORKER_SHUTDOWN_FORCE_MS',
  'WORKFLOW_STACK_TRACE_FRAMES',
  'WORKER_VERSIONING',
  'WORKER_DEPLOYMENT_NAME',
  'WORKER_BUILD_ID',
  'WORKER_BOOTSTRAP_CURRENT',
  'JOURNEY_REMINDERS_MS',
  'JOURNEY_CONSULTATION_DEADLINE_MS',
  'JOURNEY_REINVITE_MAX_ATTEMPTS',
  'JOURNEY_REINVITE_COOL_DOWN_MS',
  'JOURNEY_PRESCRIPTION_DEADLINE_MS',
  'JOURNEY_PRESCRIPTION_HARD_LIMIT_MS',
  'JOURNEY_TRACKING_DEADLINE_MS',
  'JOURNEY_TRACKING_HARD_LIMIT_MS',
  'JOURNEY_FINAL_VERDICT_DEADLINE_MS',
  'JOURNEY_MORE_DRUGS_GRACE_MS',
  'JOURNEY_ATTACHMENT_GRACE_MS',
  'JOURNEY_CALLBACK_FLOOD_LIMIT',
  'LOG_LEVEL',
  'LOG_FORMAT',
  'AUDIT_STORE',
  'AUDIT_DATABASE_URL',
  'AUDIT_DATABASE_URL_FILE',
  'AUDIT_CHECKPOINTS',
  'AUDIT_CHECKPOINT_BUCKET',
  'AUDIT_CHECKPOINT_PREFIX',
  'AUDIT_CHECKPOINT_ENDPOINT',
  'AUDIT_CHECKPOINT_REGION',
  'AUDIT_CHECKPOINT_RETENTION_DAYS',
  'AUDIT_CHECKPOINT_INTERVAL_MS',
  'PATIENT_KEY_STORE',
  'PATIENT_KEY_FILE',
  'PATIENT_KEY_DATABASE_URL',
  'PATIENT_KEY_DATABASE_URL_FILE',
  'PATIENT_ERASURE_LOG',
  'PATIENT_ERASURE_LOG_FILE',
  'PATIENT_ERASURE_LOG_BUCKET',
  'PATIENT_ERASURE_LOG_PREFIX',
  'PATIENT_ERASURE_LOG_ENDPOINT',
  'PATIENT_ERASURE_LOG_REGION',
  'PATIENT_ERASURE_LOG_RETENTION_DAYS',
];

const FINAL_VERDICT_DEADLINE_MS = DEFAULT_TIMINGS.finalVerdictDeadlineMs ?? 3 * 86_400_000;
const MORE_DRUGS_GRACE_MS = DEFAULT_TIMINGS.moreDrugsGraceMs ?? 15 * 60_000;
const CALLBACK_FLOOD_LIMIT_DEFAULT = 100;
const ATTACHMENT_GRACE_MS = DEFAULT_TIMINGS.attachmentGraceMs ?? 7 * 86_400_000;

/** The codec section alone: the codec server needs nothing else. */
function codecSettings(env: Env) {
  return {
    keys: parseEncryptionKeys(secret(env, 'PAYLOAD_ENCRYPTION_KEYS') ?? ''),
    disabled: env.PAYLOAD_ENCRYPTION_DISABLED !== undefined && bool.parse(env.PAYLOAD_ENCRYPTION_DISABLED),
    serverHost: env.CODEC_HOST ?? '127.0.0.1',
    serverPort: num(port, 'CODEC_PORT', env.CODEC_PORT, 8888),
    ...codecTls(env),
    corsOrigins: (env.CODEC_CORS_ORIGINS ?? 'http://127.0.0.1:8233,http://localhost:8233')
      .split(',')
      .map((o) => o.trim())
      .filter(Boolean),
    ...(env.CODEC_ALLOWED_HOSTS?.trim() ? { allowedHosts: list(env.CODEC_ALLOWED_HOSTS.toLowerCase()) } : {}),
    serverToken: secret(env, 'CODEC_SERVER_TOKEN'),
    serverTokenName: env.CODEC_SERVER_TOKEN_NAME?.trim() || undefined,
    ...(env.OIDC_ISSUER
      ? {
          oidc: {
            issuer: env.OIDC_ISSUER,
            audience: list(env.OIDC_AUDIENCE ?? 'temporal-ui'),
            ...(env.OIDC_JWKS_URL ? { jwksUrl: env.OIDC_JWKS_URL } : {}),
            roleClaim: env.OIDC_ROLE_CLAIM ?? 'realm_access.roles',
            clockSkewSeconds: num(z.number().int(), 'OIDC_CLOCK_SKEW_SECONDS', env.OIDC_CLOCK_SKEW_SECONDS, 30),
            decodeRoles: list(env.CODEC_DECODE_ROLES ?? 'journey-operator,journey-admin'),
          },
        }
      : {}),
    ...(env.CODEC_AUDIT_FILE ? { auditFile: env.CODEC_AUDIT_FILE } : {}),
  };
}

const list = (v: string) =>
  v
    .split(',')
    .map((x) => x.trim())
    .filter(Boolean);

/** Whether a listen address is reachable from this host only. */
export function isLoopbackHost(host: string): boolean {
  const h = host
    .trim()
    .toLowerCase()
    .replace(/^\[|\]$/g, '');
  return h === 'localhost' || h === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(h);
}

/** CODEC_TLS_CERT_FILE and CODEC_TLS_KEY_FILE: both or neither, each a file that is there. */
function codecTls(env: Env) {
  const certFile = env.CODEC_TLS_CERT_FILE?.trim();
  const keyFile = env.CODEC_TLS_KEY_FILE?.trim();
  if (!certFile && !keyFile) return {};
  if (!certFile || !keyFile) {
    throw new ConfigError(['CODEC_TLS_CERT_FILE and CODEC_TLS_KEY_FILE: the certificate and its key go together']);
  }
  for (const [name, file] of [
    ['CODEC_TLS_CERT_FILE', certFile],
    ['CODEC_TLS_KEY_FILE', keyFile],
  ] as const) {
    if (!existsSync(file)) throw new ConfigError([`${name}: no file at ${file}`]);
  }
  return { tls: { certFile, keyFile } };
}

/** The codec server's settings, validated, without the settings only the API and the worker need. */
export function loadCodecConfig(env: Env = process.env): Pick<Config, 'codec'> {
  try {
    const parsed = ConfigSchema.shape.codec.safeParse(codecSettings(env));
    if (!parsed.success) {
      throw new ConfigError(parsed.error.issues.map((i) => `codec.${i.path.join('.')}: ${i.message}`));
    }
    // It decrypts every payload for whoever reaches it: beyond this host, only with a token.
    if (!isLoopbackHost(parsed.data.serverHost) && !parsed.data.serverToken && !parsed.data.oidc) {
      throw new ConfigError([
        `CODEC_HOST: ${parsed.data.serverHost} is reachable from other hosts, and the codec server decrypts for whoever ` +
          'reaches it: set OIDC_ISSUER (the identity provider the Web UI signs in with; it passes the access token), ' +
          'or CODEC_SERVER_TOKEN (or CODEC_SERVER_TOKEN_FILE) for machines, which send it as ' +
          '"Authorization: Bearer <token>" (never in a URL), or listen on 127.0.0.1',
      ]);
    }
    return { codec: parsed.data };
  } catch (err) {
    if (err instanceof Error && err.message.startsWith('encryption key')) {
      throw new ConfigError([`PAYLOAD_ENCRYPTION_KEYS: ${err.message}`]);
    }
    throw err;
  }
}

/** AUDIT_STORE: `file` (AUDIT_FILE, as before; none: no trail) or `postgres` (AUDIT_DATABASE_URL, a secret). */
function auditSettings(env: Env, file = env.AUDIT_FILE) {
  const store = env.AUDIT_STORE?.trim() || 'file';
  if (store !== 'file' && store !== 'postgres') throw new ConfigError(['AUDIT_STORE: must be file or postgres']);
  const checkpoints = checkpointSettings(env, store);
  if (store === 'postgres') return { store, databaseUrl: secret(env, 'AUDIT_DATABASE_URL') ?? '', checkpoints };
  return { store, ...(file ? { file: path.resolve(file) } : {}), checkpoints };
}

/** AUDIT_CHECKPOINTS: s3 when AUDIT_CHECKPOINT_BUCKET is set, a file beside a trail file, else off. */
function checkpointSettings(env: Env, store: 'file' | 'postgres') {
  const chosen =
    env.AUDIT_CHECKPOINTS?.trim() || (env.AUDIT_CHECKPOINT_BUCKET ? 's3' : store === 'file' ? 'file' : 'off');
  if (!['file', 's3', 'off'].includes(chosen)) throw new ConfigError(['AUDIT_CHECKPOINTS: must be file, s3 or off']);
  if (chosen === 'file' && store === 'postgres') {
    throw new ConfigError(['AUDIT_CHECKPOINTS: file goes beside a trail file; the table is checkpointed to s3']);
  }
  const intervalMs = num(wholeNumber, 'AUDIT_CHECKPOINT_INTERVAL_MS', env.AUDIT_CHECKPOINT_INTERVAL_MS, 60_000);
  if (chosen !== 's3') return { store: chosen, intervalMs };
  return {
    store: chosen,
    intervalMs,
    bucket: env.AUDIT_CHECKPOINT_BUCKET ?? '',
    prefix: env.AUDIT_CHECKPOINT_PREFIX ?? 'audit-checkpoints/',
    endpoint: env.AUDIT_CHECKPOINT_ENDPOINT || env.ATTACHMENTS_S3_ENDPOINT || undefined,
    region: env.AUDIT_CHECKPOINT_REGION || env.ATTACHMENTS_S3_REGION || 'us-east-1',
    retentionDays: num(wholeNumber, 'AUDIT_CHECKPOINT_RETENTION_DAYS', env.AUDIT_CHECKPOINT_RETENTION_DAYS, 2190),
  };
}

/**
 * PATIENT_KEY_STORE: `file` by default when payloads are encrypted (PATIENT_KEY_FILE, default
 * <DATA_DIR>/patient-keys.json), `postgres` (PATIENT_KEY_DATABASE_URL, a secret), or `off` (the default without
 * encryption keys). PATIENT_ERASURE_LOG: `s3` by default when the audit checkpoints go to a bucket (the same bucket,
 * under patient-erasures/), else `file` (PATIENT_ERASURE_LOG_FILE, default <DATA_DIR>/patient-erasures.jsonl).
 */
function patientKeySettings(env: Env, encrypted: boolean) {
  const dataDir = path.resolve(env.DATA_DIR ?? '.data');
  const store = env.PATIENT_KEY_STORE?.trim() || (encrypted ? 'file' : 'off');
  if (!['file', 'postgres', 'off'].includes(store)) {
    throw new ConfigError(['PATIENT_KEY_STORE: must be file, postgres or off']);
  }
  if (store === 'off') return { store };
  if (!encrypted) {
    throw new ConfigError([
      `PATIENT_KEY_STORE: ${store} wraps each patient's key with PAYLOAD_ENCRYPTION_KEYS, which are not set`,
    ]);
  }
  const bucket = env.PATIENT_ERASURE_LOG_BUCKET || env.AUDIT_CHECKPOINT_BUCKET;
  const logStore = env.PATIENT_ERASURE_LOG?.trim() || (bucket ? 's3' : 'file');
  if (logStore !== 'file' && logStore !== 's3') throw new ConfigError(['PATIENT_ERASURE_LOG: must be file or s3']);
  const erasureLog =
    logStore === 'file'
      ? {
          store: logStore,
          file: path.resolve(env.PATIENT_ERASURE_LOG_FILE ?? path.join(dataDir, 'patient-erasures.jsonl')),
        }
      : {
          store: logStore,
          bucket: bucket ?? '',
          prefix: env.PATIENT_ERASURE_LOG_PREFIX ?? 'patient-erasures/',
          endpoint:
            env.PATIENT_ERASURE_LOG_ENDPOINT ||
            env.AUDIT_CHECKPOINT_ENDPOINT ||
            env.ATTACHMENTS_S3_ENDPOINT ||
            undefined,
          region:
            env.PATIENT_ERASURE_LOG_REGION || env.AUDIT_CHECKPOINT_REGION || env.ATTACHMENTS_S3_REGION || 'us-east-1',
          retentionDays: num(
            wholeNumber,
            'PATIENT_ERASURE_LOG_RETENTION_DAYS',
            env.PATIENT_ERASURE_LOG_RETENTION_DAYS,
            2190,
          ),
        };
  if (store === 'postgres') {
    return { store, databaseUrl: secret(env, 'PATIENT_KEY_DATABASE_URL') ?? '', erasureLog };
  }
  return {
    store,
    file: path.resolve(env.PATIENT_KEY_FILE ?? path.join(dataDir, 'patient-keys.json')),
    erasureLog,
  };
}

/** The patient key settings alone (the codec server, tools): with the encryption keys they wrap under. */
export function loadPatientKeyConfig(env: Env = process.env): Pick<Config, 'patientKeys'> {
  const encrypted = (secret(env, 'PAYLOAD_ENCRYPTION_KEYS') ?? '').trim() !== '';
  const parsed = PatientKeySettings.safeParse(patientKeySettings(env, encrypted));
  if (!parsed.success) {
    throw new ConfigError(parsed.error.issues.map((i) => `patientKeys.${i.path.join('.')}: ${i.message}`));
  }
  return { patientKeys: parsed.data };
}

/** The audit store's settings alone, for a process that needs nothing else of the configuration (the codec server). */
export function loadAuditConfig(env: Env = process.env): Pick<Config, 'audit'> {
  const parsed = ConfigSchema.shape.audit.safeParse(auditSettings(env));
  if (!parsed.success) throw new ConfigError(parsed.error.issues.map((i) => `audit.${i.path.join('.')}: ${i.message}`));
  return { audit: parsed.data };
}

/** The Temporal connection's settings alone, for tools that talk to Temporal and nothing else. */
export function loadTemporalConfig(env: Env = process.env): Pick<Config, 'temporal'> {
  const parsed = ConfigSchema.shape.temporal.safeParse(temporalSettings(env));
  if (!parsed.success) {
    throw new ConfigError(parsed.error.issues.map((i) => `temporal.${i.path.join('.')}: ${i.message}`));
  }
  return { temporal: parsed.data };
}

export function loadConfig(env: Env = process.env): Config {
  const dataDir = path.resolve(env.DATA_DIR ?? '.data');
  const timing = (name: string, fallback: number) => num(ms, name, env[name], fallback);
  const inboxSettles = env.INBOX_SETTLES?.trim() || 'deferred';
  let raw: unknown;
  if (env.INBOX_STORE !== undefined && !['files', 'postgres'].includes(env.INBOX_STORE)) {
    throw new ConfigError(['INBOX_STORE: must be files or postgres']);
  }
  if (env.ATTACHMENTS_STORE !== undefined && !['folder', 's3'].includes(env.ATTACHMENTS_STORE)) {
    throw new ConfigError(['ATTACHMENTS_STORE: must be folder or s3']);
  }
  try {
    const apiPort = num(port, 'API_PORT', env.API_PORT, 3000);
    raw = {
      temporal: temporalSettings(env),
      examService: {
        baseUrl: env.EXAM_SERVICE_BASE_URL ?? 'http://127.0.0.1:4010',
        connectTimeoutMs: num(ms, 'EXAM_SERVICE_CONNECT_TIMEOUT_MS', env.EXAM_SERVICE_CONNECT_TIMEOUT_MS, 5_000),
        requestTimeoutMs: num(ms, 'EXAM_SERVICE_REQUEST_TIMEOUT_MS', env.EXAM_SERVICE_REQUEST_TIMEOUT_MS, 30_000),
        catalogCacheTtlMs: num(ms, 'EXAM_CATALOG_CACHE_TTL_MS', env.EXAM_CATALOG_CACHE_TTL_MS, 60_000),
      },
      clinics: clinicsFrom(env),
      api: {
        host: env.API_HOST ?? '127.0.0.1',
        port: apiPort,
        publicBaseUrl: env.PUBLIC_BASE_URL ?? `http://127.0.0.1:${apiPort}`,
        webhookSecret: secret(env, 'WEBHOOK_SECRET'),
        adminTokenSha256: env.ADMIN_TOKEN_SHA256,
        bodyLimitBytes: num(ms, 'API_BODY_LIMIT_BYTES', env.API_BODY_LIMIT_BYTES, 8 * 1024 * 1024),
        rateLimitPerMinute: num(ms, 'API_RATE_LIMIT_PER_MINUTE', env.API_RATE_LIMIT_PER_MINUTE, 600),
        signInFailuresPerMinute: num(ms, 'API_SIGN_IN_FAILURES_PER_MINUTE', env.API_SIGN_IN_FAILURES_PER_MINUTE, 60),
        trustedProxies: list(env.API_TRUSTED_PROXIES ?? ''),
        webhookMaxBodyBytes: num(ms, 'WEBHOOK_MAX_BODY_BYTES', env.WEBHOOK_MAX_BODY_BYTES, 16 * 1024 * 1024),
        temporalTimeoutMs: num(ms, 'API_TEMPORAL_TIMEOUT_MS', env.API_TEMPORAL_TIMEOUT_MS, 10_000),
        deadLetterRetentionDays: num(
          z.number().int().min(0).max(3650),
          'DEAD_LETTER_RETENTION_DAYS',
          env.DEAD_LETTER_RETENTION_DAYS,
          30,
        ),
        ...(env.AUDIT_FILE ? { auditFile: path.resolve(env.AUDIT_FILE) } : {}),
      },
      inbox:
        (env.INBOX_STORE ?? 'files') === 'postgres'
          ? {
              store: 'postgres',
              databaseUrl: secret(env, 'INBOX_DATABASE_URL') ?? '',
              poolSize: num(ms, 'INBOX_DATABASE_POOL_SIZE', env.INBOX_DATABASE_POOL_SIZE, 10),
              settles: inboxSettles,
            }
          : {
              store: env.INBOX_STORE ?? 'files',
              dir: path.resolve(env.INBOX_DIR ?? path.join(dataDir, 'inbox')),
              deadLetterDir: path.resolve(env.DEAD_LETTER_DIR ?? path.join(dataDir, 'dead-letters')),
              legacySpoolDir: path.resolve(env.SPOOL_DIR ?? path.join(dataDir, 'spool')),
              settles: inboxSettles,
            },
      forwarder: {
        concurrency: num(ms, 'FORWARDER_CONCURRENCY', env.FORWARDER_CONCURRENCY, 16),
        // SPOOL_MAX_BACKOFF_MS is the name of earlier versions.
        maxBackoffMs: num(
          ms,
          'FORWARDER_MAX_BACKOFF_MS',
          env.FORWARDER_MAX_BACKOFF_MS ?? env.SPOOL_MAX_BACKOFF_MS,
          30_000,
        ),
        ackPressureMs: num(
          z.coerce.number().int().min(0),
          'FORWARDER_ACK_PRESSURE_MS',
          env.FORWARDER_ACK_PRESSURE_MS,
          5,
        ),
        maxDeferMs: num(z.coerce.number().int().min(0), 'FORWARDER_MAX_DEFER_MS', env.FORWARDER_MAX_DEFER_MS, 10_000),
        policy: env.FORWARDER_POLICY?.trim() || 'adaptive',
        signalTimeoutMs: num(ms, 'FORWARDER_SIGNAL_TIMEOUT_MS', env.FORWARDER_SIGNAL_TIMEOUT_MS, 3_000),
        thread: flag('FORWARDER_THREAD', env.FORWARDER_THREAD, true),
        threadNice: num(z.coerce.number().int().min(0).max(19), 'FORWARDER_THREAD_NICE', env.FORWARDER_THREAD_NICE, 5),
      },
      codec: codecSettings(env),
      dataDir,
      attachmentsDir: path.resolve(env.ATTACHMENTS_DIR ?? path.join(dataDir, 'attachments')),
      attachmentStore:
        env.ATTACHMENTS_STORE === 's3'
          ? {
              kind: 's3',
              bucket: env.ATTACHMENTS_S3_BUCKET ?? '',
              prefix: env.ATTACHMENTS_S3_PREFIX ?? '',
              endpoint: env.ATTACHMENTS_S3_ENDPOINT || undefined,
              region: env.ATTACHMENTS_S3_REGION ?? 'us-east-1',
            }
          : { kind: env.ATTACHMENTS_STORE ?? 'folder' },
      attachmentQuota: {
        bytes: num(wholeNumber, 'ATTACHMENTS_QUOTA_BYTES', env.ATTACHMENTS_QUOTA_BYTES, 2 * 1024 ** 3),
        count: num(wholeNumber, 'ATTACHMENTS_QUOTA_COUNT', env.ATTACHMENTS_QUOTA_COUNT, 2_000),
      },
      attachmentOrphanGraceMs: num(
        wholeNumber,
        'ATTACHMENTS_ORPHAN_GRACE_MS',
        env.ATTACHMENTS_ORPHAN_GRACE_MS,
        86_400_000,
      ),
      worker: {
        maxCachedWorkflows: num(ms, 'WORKER_MAX_CACHED_WORKFLOWS', env.WORKER_MAX_CACHED_WORKFLOWS, 1_000),
        maxConcurrentActivities: num(ms, 'WORKER_MAX_CONCURRENT_ACTIVITIES', env.WORKER_MAX_CONCURRENT_ACTIVITIES, 100),
        maxConcurrentWorkflowTasks: num(
          ms,
          'WORKER_MAX_CONCURRENT_WORKFLOW_TASKS',
          env.WORKER_MAX_CONCURRENT_WORKFLOW_TASKS,
          40,
        ),
        metricsAddress: workerMetricsAddress(env.WORKER_METRICS_ADDRESS),
        workflowBundlePath: env.WORKFLOW_BUNDLE_PATH ? path.resolve(env.WORKFLOW_BUNDLE_PATH) : undefined,
        shutdownForceMs: num(ms, 'WORKER_SHUTDOWN_FORCE_MS', env.WORKER_SHUTDOWN_FORCE_MS, 8_000),
        workflowStackFrames: num(
          wholeNumber.max(MAX_WORKFLOW_STACK_FRAMES, `at most ${MAX_WORKFLOW_STACK_FRAMES}`),
          'WORKFLOW_STACK_TRACE_FRAMES',
          env.WORKFLOW_STACK_TRACE_FRAMES,
          DEFAULT_WORKFLOW_STACK_FRAMES,
        ),
        deployment: workerDeployment(env),
      },
      timings: {
        remindersMs: env.JOURNEY_REMINDERS_MS
          ? env.JOURNEY_REMINDERS_MS.split(',').map((v) => num(ms, 'JOURNEY_REMINDERS_MS', v.trim(), 0))
          : DEFAULT_TIMINGS.remindersMs,
        consultationDeadlineMs: timing('JOURNEY_CONSULTATION_DEADLINE_MS', DEFAULT_TIMINGS.consultationDeadlineMs),
        reinviteMaxAttempts: num(
          z.coerce.number().int().min(0),
          'JOURNEY_REINVITE_MAX_ATTEMPTS',
          env.JOURNEY_REINVITE_MAX_ATTEMPTS,
          0,
        ),
        reinviteCoolDownMs: timing('JOURNEY_REINVITE_COOL_DOWN_MS', DEFAULT_TIMINGS.reinviteCoolDownMs),
        finalVerdictDeadlineMs: timing('JOURNEY_FINAL_VERDICT_DEADLINE_MS', FINAL_VERDICT_DEADLINE_MS),
        moreDrugsGraceMs: timing('JOURNEY_MORE_DRUGS_GRACE_MS', MORE_DRUGS_GRACE_MS),
        attachmentGraceMs: timing('JOURNEY_ATTACHMENT_GRACE_MS', ATTACHMENT_GRACE_MS),
        prescriptionDeadlineMs: timing('JOURNEY_PRESCRIPTION_DEADLINE_MS', DEFAULT_TIMINGS.prescriptionDeadlineMs),
        prescriptionHardLimitMs: timing('JOURNEY_PRESCRIPTION_HARD_LIMIT_MS', DEFAULT_TIMINGS.prescriptionHardLimitMs),
        trackingDeadlineMs: timing('JOURNEY_TRACKING_DEADLINE_MS', DEFAULT_TIMINGS.trackingDeadlineMs),
        trackingHardLimitMs: timing('JOURNEY_TRACKING_HARD_LIMIT_MS', DEFAULT_TIMINGS.trackingHardLimitMs),
      },
      callbackFloodLimit: num(
        z.coerce.number().int(),
        'JOURNEY_CALLBACK_FLOOD_LIMIT',
        env.JOURNEY_CALLBACK_FLOOD_LIMIT,
        CALLBACK_FLOOD_LIMIT_DEFAULT,
      ),
      logLevel: env.LOG_LEVEL ?? 'info',
      logFormat: env.LOG_FORMAT?.trim().toLowerCase() || undefined,
      audit: auditSettings(env),
      patientKeys: patientKeySettings(env, (secret(env, 'PAYLOAD_ENCRYPTION_KEYS') ?? '').trim() !== ''),
    };
  } catch (err) {
    if (err instanceof z.ZodError) throw new ConfigError(err.issues.map((i) => i.message));
    if (err instanceof SyntaxError) throw new ConfigError([`clinics: not valid JSON (${err.message})`]);
    if (err instanceof Error && err.message.startsWith('encryption key')) {
      throw new ConfigError([`PAYLOAD_ENCRYPTION_KEYS: ${err.message}`]);
    }
    throw err;
  }
  const parsed = ConfigSchema.safeParse(raw);
  if (!parsed.success) {
    // Name the setting, never echo its value: some are secrets.
    throw new ConfigError(parsed.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`));
  }
  return parsed.data;
}

export function clinicById(config: Pick<Config, 'clinics'>, clinicId: string): ClinicConfig | undefined {
  return config.clinics.find((c) => c.clinicId === clinicId);
}
