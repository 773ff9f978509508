// The production shape on one machine, every part a real server: PostgreSQL (Temporal's persistence and visibility,
// the callback inbox and the audit trail), the Temporal server itself with its Web UI, MinIO for attachments and the
// audit trail's checkpoints, the codec server, the exam-service sandbox, N workers, N API replicas and HAProxy in front
// of them. API replicas and workers each get a data folder of their own: they share nothing but PostgreSQL, Temporal
// and the object store.
//
// Held against someone on the host: no part logs in to PostgreSQL as its superuser (Temporal, Keycloak and the inbox
// each have a role owning its database(s); the audit table belongs to a role nobody logs in as, prepared over the
// cluster's socket: scripts/lib/database-roles.ts); every engine process checkpoints the audit table's head to a
// bucket with Object Lock; the engine's secrets are files (mode 0600, <dataDir>/secrets) named by its *_FILE
// settings, never its environment; the admin routes take a token the stack made (none beside the identity provider).
//
// Started in dependency order and stopped in the reverse one. Each part can be killed and started again on its own
// (the fault drills do), and with `supervise` a worker or API replica that dies is started again, as an
// orchestrator would.
import { parseEncryptionKeys } from '../../src/encryption-keys';
import { PatientKeys, PostgresPatientKeyStore, S3ErasureLog } from '../../src/patient-keys';
import { copyFileSync, existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import {
  CreateBucketCommand,
  GetObjectLockConfigurationCommand,
  HeadBucketCommand,
  S3Client,
} from '@aws-sdk/client-s3';
import { S3AttachmentStore } from '../../src/attachments/s3';
import { SEARCH_ATTRIBUTE_KEYS } from '../../src/contract/definitions';
import { ServiceAccountTokens } from '../../src/auth/service-account';
import { portFree, type StackPort } from './stack-guard';
import type { StackLog } from './stack-log';
import type { ManagedProcess } from './processes';
import {
  AUDIENCE,
  CLIENTS,
  DATABASE as KEYCLOAK_DATABASE,
  issuerOf,
  jwksUrlOf,
  keycloakInstalled,
  prepareKeycloakHome,
  tokenUrlOf,
} from './keycloak';
import { ensureLocalCertificate } from './local-tls';
import { startObjectStore, type ObjectStoreServer } from './object-store';
import { startPostgres, type PostgresServer } from './postgres-server';
import { PostgresBackups } from './stack/postgres-backup';
import { PostgresCluster } from './stack/postgres-cluster';
import {
  adminTokenFile,
  DEMO_CLINIC_TOKEN,
  sha256,
  stackAdminToken,
  stackSecrets,
  stackTemporalProfile,
  writeDemoClinics,
  writeSecretFiles,
} from './stack-secrets';
import { prepareAuditOwner, prepareDatabaseRole, roleUrl, type SuperuserAccess } from './database-roles';
import { inboxRoleUrl, prepareInboxRole, type InboxRole } from './inbox-role';
import {
  api,
  codec,
  keycloak,
  loadBalancer,
  makeVersionCurrent,
  sandbox,
  temporalUi,
  TOOLS,
  worker,
  workerVersion,
  type PartSpec,
} from './stack/parts';
import { Stack } from './stack/stack';
import {
  prepareNamespace,
  setupTemporalSchema,
  splitProcessCount,
  startTemporalServer,
  type TemporalServer,
  type TemporalSplitPorts,
} from './temporal-server';

const BUCKET = 'journey-attachments';
/** The attachments' bucket (versioned), for tests that read it. */
export const ATTACHMENTS_BUCKET = BUCKET;
const INBOX_DATABASE = 'journeys';
/** The API replicas' role in PostgreSQL: owns the inbox database, nothing else, no superuser (scripts/lib/inbox-role.ts). */
const INBOX_ROLE = 'journey_inbox';
/** Each patient's data key: a database of its own, owned by a role the API, the workers and the codec server share. */
const PATIENT_KEYS_DATABASE = 'journey_patient_keys';
const PATIENT_KEYS_ROLE = 'journey_patient_keys';
const AUDIT_DATABASE = 'journey_audit';
/** Owns the audit table: no LOGIN, no password; the stack prepares it as the superuser over the cluster's socket. */
const AUDIT_OWNER = 'journey_audit_owner';
/** The engine's role on the audit table: SELECT and INSERT only (src/audit/postgres.ts). */
const AUDIT_WRITER = 'journey_audit_writer';
/** The Temporal server's role: owns its two databases (temporal, temporal_visibility), no superuser. */
const TEMPORAL_ROLE = 'temporal';
/**
 * How long the attachments' bucket keeps a version deleted by mistake (`npm run attachments:restore` brings it back);
 * what the engine deletes goes with every version.
 */
export const ATTACHMENTS_KEEP_DELETED_DAYS = 7;

/** Keycloak's role: owns its database, no superuser. */
const KEYCLOAK_ROLE = 'keycloak';
/** The bucket with Object Lock every engine process checkpoints the audit table's head to (src/audit/checkpoints.ts). */
export const CHECKPOINT_BUCKET = 'journey-audit-checkpoints';
/** The cluster's backups' bucket, in the backup store; full backups kept (each with the WAL after it). */
export const POSTGRES_BACKUP_BUCKET = 'journeys-postgres';
export const POSTGRES_FULL_BACKUPS_KEPT = 2;

export interface ProductionPorts {
  /** The load balancer: the clinic API and the webhook, as the outside sees them. */
  api: number;
  /** One per API replica, behind the load balancer. */
  apiReplicas: number[];
  temporal: number;
  temporalHttp: number;
  temporalHistory: number;
  temporalMatching: number;
  temporalWorker: number;
  /** Four consecutive ports from here (frontend, history, matching, worker); below 32768. */
  temporalMembership: number;
  temporalMetrics: number;
  ui: number;
  codec: number;
  sandbox: number;
  /**
   * PostgreSQL: the one server's port, or with the cluster the primary's address (its load balancer), the cluster's
   * nodes and etcd on the next 33 ports (postgres-cluster.ts).
   */
  postgres: number;
  objectStore: number;
  objectStoreConsole: number;
  /** The cluster's backups: an object store of their own (HTTPS) and its console; with the cluster only. */
  backupStore?: number;
  backupStoreConsole?: number;
  /** Keycloak (the identity provider) and its management interface (health): with `identity` only. */
  keycloak?: number;
  keycloakManagement?: number;
  /** The Temporal server's internal frontend (gRPC, HTTP), for its own system worker: with `identity` only. */
  temporalInternalFrontend?: number;
  temporalInternalFrontendHttp?: number;
  /** One per worker, its Prometheus page (WORKER_METRICS_ADDRESS); a worker without one has none. */
  workerMetrics?: number[];
  /**
   * TEMPORAL_SPLIT=on: the Temporal server's services as processes of their own (two frontends behind HAProxy on
   * `temporal` and `temporalHttp`, two history and two matching nodes, the internal worker), their own ports.
   */
  temporalSplit?: TemporalSplitPorts;
}

type Env = Record<string, string | undefined>;

/** The ports `npm run start:production` uses: the same variables as `npm start`, plus the production parts'. */
export function productionPorts(env: Env = process.env, workersAndReplicas = 2): ProductionPorts {
  const port = (name: string, v: string) => {
    const p = Number(v);
    if (!Number.isInteger(p) || p < 1 || p > 65_535) throw new Error(`${name}: not a port: ${v}`);
    return p;
  };
  const n = (name: string, fallback: number) => {
    const v = env[name];
    return v === undefined || v === '' ? fallback : port(name, v);
  };
  /** A comma-separated list of ports (each checked), or `count` consecutive ones from `first`. */
  const list = (name: string, first: number, count: number) => {
    const v = env[name];
    return v === undefined || v === ''
      ? Array.from({ length: count }, (_, i) => first + i)
      : v.split(',').map((p) => port(name, p.trim()));
  };
  const api = n('API_PORT', 3000);
  const temporal = n('TEMPORAL_PORT', 7233);
  return {
    api,
    apiReplicas: list('API_REPLICA_PORTS', api + 1, workersAndReplicas),
    temporal,
    temporalHttp: n('TEMPORAL_HTTP_PORT', temporal + 10),
    temporalHistory: n('TEMPORAL_HISTORY_PORT', temporal + 1),
    temporalMatching: n('TEMPORAL_MATCHING_PORT', temporal + 2),
    temporalWorker: n('TEMPORAL_WORKER_PORT', temporal + 6),
    temporalMembership: n('TEMPORAL_MEMBERSHIP_PORT', 6933),
    temporalMetrics: n('TEMPORAL_METRICS_PORT', 9091),
    ui: n('TEMPORAL_UI_PORT', 8233),
    codec: n('CODEC_PORT', 8888),
    sandbox: n('SANDBOX_PORT', 4010),
    postgres: n('POSTGRES_PORT', 5433),
    objectStore: n('OBJECT_STORE_PORT', 9000),
    objectStoreConsole: n('OBJECT_STORE_CONSOLE_PORT', 9001),
    backupStore: n('BACKUP_STORE_PORT', 9010),
    backupStoreConsole: n('BACKUP_STORE_CONSOLE_PORT', 9011),
    keycloak: n('KEYCLOAK_PORT', 8180),
    keycloakManagement: n('KEYCLOAK_MANAGEMENT_PORT', 8181),
    temporalInternalFrontend: n('TEMPORAL_INTERNAL_FRONTEND_PORT', temporal + 3),
    temporalInternalFrontendHttp: n('TEMPORAL_INTERNAL_FRONTEND_HTTP_PORT', temporal + 11),
    workerMetrics: list('WORKER_METRICS_PORTS', 9464, workersAndReplicas),
    // Used with TEMPORAL_SPLIT=on only: the frontends' own ports after the balancer's, the second history and
    // matching nodes beside them; one membership and one metrics port per process from TEMPORAL_MEMBERSHIP_PORT and
    // TEMPORAL_METRICS_PORT.
    temporalSplit: {
      frontends: [
        { grpc: temporal + 20, http: temporal + 21 },
        { grpc: temporal + 22, http: temporal + 23 },
      ],
      history: [n('TEMPORAL_HISTORY_PORT', temporal + 1), temporal + 24],
      matching: [n('TEMPORAL_MATCHING_PORT', temporal + 2), temporal + 25],
      membershipBase: n('TEMPORAL_MEMBERSHIP_PORT', 6933),
      metricsBase: n('TEMPORAL_METRICS_PORT', 9091),
    },
  };
}

/**
 * Free ports for every part, from `base` up to `max` (the cluster membership's four, five with `identity`, in a row):
 * a stack beside others (the bench's shapes, the tests'). Workers get a metrics port each only with `workerMetrics`.
 */
export async function freeProductionPorts(
  base: number,
  max: number,
  o: {
    replicas?: number;
    identity?: boolean;
    workerMetrics?: boolean;
    cluster?: boolean;
    temporalSplit?: boolean;
  } = {},
): Promise<ProductionPorts> {
  let next = base;
  const run = async (length = 1): Promise<number> => {
    for (; next + length - 1 <= max; next++) {
      let free = true;
      for (let p = next; p < next + length && free; p++) free = await portFree(p);
      if (free) return (next += length) - length;
    }
    throw new Error(`no ${length} free port(s) in a row between ${base} and ${max}`);
  };
  const some = async (n = o.replicas ?? 2) => {
    const out: number[] = [];
    for (let i = 0; i < n; i++) out.push(await run());
    return out;
  };
  return {
    api: await run(),
    apiReplicas: await some(),
    temporal: await run(),
    temporalHttp: await run(),
    temporalHistory: await run(),
    temporalMatching: await run(),
    temporalWorker: await run(),
    temporalMembership: await run(o.identity ? 5 : 4),
    temporalMetrics: await run(),
    ui: await run(),
    codec: await run(),
    sandbox: await run(),
    // The cluster: its address and 33 ports after it, all below 32768.
    postgres: await run(o.cluster ? 34 : 1),
    objectStore: await run(),
    objectStoreConsole: await run(),
    ...(o.cluster ? { backupStore: await run(), backupStoreConsole: await run() } : {}),
    ...(o.identity
      ? {
          keycloak: await run(),
          keycloakManagement: await run(),
          temporalInternalFrontend: await run(),
          temporalInternalFrontendHttp: await run(),
        }
      : {}),
    ...(o.workerMetrics ? { workerMetrics: await some() } : {}),
    ...(o.temporalSplit ? { temporalSplit: await freeSplitPorts(run, o.identity === true) } : {}),
  };
}

/** The split Temporal server's ports: two frontends (gRPC, HTTP), two history and two matching nodes, a membership
 * and a metrics port per process, each run in a row. */
async function freeSplitPorts(
  run: (length?: number) => Promise<number>,
  identity: boolean,
): Promise<TemporalSplitPorts> {
  const frontends = [
    { grpc: await run(), http: await run() },
    { grpc: await run(), http: await run() },
  ];
  const history = [await run(), await run()];
  const matching = [await run(), await run()];
  const count = splitProcessCount({ frontends, history, matching, membershipBase: 0, metricsBase: 0 }, identity);
  return { frontends, history, matching, membershipBase: await run(count), metricsBase: await run(count) };
}

/** Every port the production stack listens on, with the part that needs it and the variable that moves it. */
export function productionStackPorts(
  ports: ProductionPorts,
  workers: number,
  identity = false,
  cluster = false,
  temporalSplit = false,
): StackPort[] {
  const split = temporalSplit ? ports.temporalSplit : undefined;
  if (temporalSplit && !split) throw new Error("TEMPORAL_SPLIT=on needs the split Temporal server's ports");
  const splitPorts: StackPort[] = split
    ? [
        ...split.frontends.flatMap((f, i) => [
          { part: `Temporal frontend ${i + 1}`, port: f.grpc, variable: 'TEMPORAL_PORT' },
          { part: `Temporal frontend ${i + 1} (HTTP)`, port: f.http, variable: 'TEMPORAL_PORT' },
        ]),
        ...split.history.map((port, i) => ({
          part: `Temporal history ${i + 1}`,
          port,
          variable: 'TEMPORAL_HISTORY_PORT',
        })),
        ...split.matching.map((port, i) => ({
          part: `Temporal matching ${i + 1}`,
          port,
          variable: 'TEMPORAL_MATCHING_PORT',
        })),
        ...Array.from({ length: splitProcessCount(split, identity) }, (_, i) => [
          { part: 'Temporal cluster membership', port: split.membershipBase + i, variable: 'TEMPORAL_MEMBERSHIP_PORT' },
          { part: "Temporal's metrics", port: split.metricsBase + i, variable: 'TEMPORAL_METRICS_PORT' },
        ]).flat(),
      ]
    : [];
  const clusterPorts: StackPort[] = cluster
    ? [
        ...Array.from({ length: 33 }, (_, i) => ({
          part: 'PostgreSQL cluster (nodes, etcd)',
          port: ports.postgres + 1 + i,
          variable: 'POSTGRES_PORT',
        })),
        { part: 'backup store', port: ports.backupStore!, variable: 'BACKUP_STORE_PORT' },
        { part: "backup store's console", port: ports.backupStoreConsole!, variable: 'BACKUP_STORE_CONSOLE_PORT' },
      ]
    : [];
  const identityPorts: StackPort[] = identity
    ? ([
        { part: 'Keycloak', port: ports.keycloak, variable: 'KEYCLOAK_PORT' },
        { part: "Keycloak's management", port: ports.keycloakManagement, variable: 'KEYCLOAK_MANAGEMENT_PORT' },
        {
          part: 'Temporal internal frontend',
          port: ports.temporalInternalFrontend,
          variable: 'TEMPORAL_INTERNAL_FRONTEND_PORT',
        },
        {
          part: 'Temporal internal frontend (HTTP)',
          port: ports.temporalInternalFrontendHttp,
          variable: 'TEMPORAL_INTERNAL_FRONTEND_HTTP_PORT',
        },
      ].filter((p) => p.port !== undefined) as StackPort[])
    : [];
  const unsplit: StackPort[] = split
    ? []
    : [
        { part: 'Temporal history', port: ports.temporalHistory, variable: 'TEMPORAL_HISTORY_PORT' },
        { part: 'Temporal matching', port: ports.temporalMatching, variable: 'TEMPORAL_MATCHING_PORT' },
        ...[0, 1, 2, 3, ...(identity ? [4] : [])].map((i) => ({
          part: 'Temporal cluster membership',
          port: ports.temporalMembership + i,
          variable: 'TEMPORAL_MEMBERSHIP_PORT',
        })),
        { part: "Temporal's metrics", port: ports.temporalMetrics, variable: 'TEMPORAL_METRICS_PORT' },
      ];
  return [
    ...identityPorts,
    ...clusterPorts,
    ...splitPorts,
    ...unsplit,
    { part: 'load balancer (clinic API)', port: ports.api, variable: 'API_PORT' },
    ...ports.apiReplicas.map((port, i) => ({ part: `API replica ${i + 1}`, port, variable: 'API_REPLICA_PORTS' })),
    { part: 'Temporal frontend', port: ports.temporal, variable: 'TEMPORAL_PORT' },
    { part: 'Temporal HTTP API', port: ports.temporalHttp, variable: 'TEMPORAL_HTTP_PORT' },
    { part: 'Temporal worker service', port: ports.temporalWorker, variable: 'TEMPORAL_WORKER_PORT' },
    { part: 'Temporal Web UI', port: ports.ui, variable: 'TEMPORAL_UI_PORT' },
    { part: 'codec server', port: ports.codec, variable: 'CODEC_PORT' },
    { part: 'exam-service sandbox', port: ports.sandbox, variable: 'SANDBOX_PORT' },
    {
      part: cluster ? "PostgreSQL's primary (load balancer)" : 'PostgreSQL',
      port: ports.postgres,
      variable: 'POSTGRES_PORT',
    },
    { part: 'object store', port: ports.objectStore, variable: 'OBJECT_STORE_PORT' },
    { part: "object store's console", port: ports.objectStoreConsole, variable: 'OBJECT_STORE_CONSOLE_PORT' },
    ...(ports.workerMetrics ?? [])
      .slice(0, workers)
      .map((port, i) => ({ part: `worker ${i + 1}'s metrics`, port, variable: 'WORKER_METRICS_PORTS' })),
  ];
}

export interface ProductionStackOptions {
  dataDir: string;
  ports: ProductionPorts;
  /** Workers to run. Default 2. */
  workers?: number;
  /** Print every part's output through this log (logs are kept in <dataDir>/logs either way). */
  echo?: StackLog;
  /** Start a worker or API replica again when it dies on its own (one second later). */
  supervise?: boolean;
  /** Extra environment for the sandbox (its provider's pace, callback retries). */
  sandboxEnv?: Record<string, string>;
  /** Extra environment for workers and API replicas. */
  engineEnv?: Record<string, string>;
  /** The Temporal server's dynamic configuration file (production.yaml's by default). */
  temporalDynamicConfig?: string;
  /**
   * Operators sign in: Keycloak with the journeys realm, the Web UI's sign-in and the codec server, the admin API and
   * the Temporal server (its JWT authorizer) checking its tokens; workers and API replicas use service accounts.
   */
  identity?: boolean;
  /**
   * PostgreSQL as one server (`single`, the default), or highly available (`cluster`): a primary and a synchronous
   * standby run by Patroni with etcd, one address through HAProxy, the WAL archived and full backups taken by
   * pgBackRest into an object store of their own (postgres-cluster.ts, postgres-backup.ts).
   */
  database?: 'single' | 'cluster';
  /**
   * The Temporal server's services each a process of its own (`ports.temporalSplit`: two frontends behind HAProxy,
   * two history and two matching nodes, the internal worker), rather than one process running them all.
   */
  temporalSplit?: boolean;
  /**
   * The Temporal server's history shards (default 4): chosen at the cluster's first start, for good (a data folder
   * made with another count refuses to start).
   */
  historyShards?: number;
  log?: (line: string) => void;
  /** Called when an infrastructure part (not a worker or API replica) dies on its own. */
  onFatal?: (why: string) => void;
}

export class ProductionStack {
  readonly workers: ManagedProcess[] = [];
  readonly apis: ManagedProcess[] = [];
  postgres: PostgresServer | undefined;
  /** With `database: 'cluster'`: the cluster, its backups and their object store. */
  cluster: PostgresCluster | undefined;
  backups: PostgresBackups | undefined;
  backupStore: ObjectStoreServer | undefined;
  temporal: TemporalServer | undefined;
  objectStore: ObjectStoreServer | undefined;
  readonly #stack: Stack;
  #clinicsFile: string | undefined;
  #secrets: ReturnType<typeof stackSecrets> | undefined;
  /** The audit trail's table, as its insert-only writer role reaches it (carries the password: never log it). */
  #auditUrl: string | undefined;
  /** The automation service account's tokens (the stack's own calls to a Temporal server with the authorizer). */
  #automation: ServiceAccountTokens | undefined;
  /** The admin routes' token this stack made (none beside the identity provider). */
  #adminToken: string | undefined;
  /** The engine's secrets as files (mode 0600) in the secrets folder, by name. */
  #files: Record<string, string> | undefined;
  readonly #log: (line: string) => void;

  constructor(readonly o: ProductionStackOptions) {
    this.#log = o.log ?? (() => undefined);
    this.#stack = new Stack({ logDir: path.join(o.dataDir, 'logs'), echo: o.echo, log: this.#log, onFatal: o.onFatal });
  }

  get apiUrl(): string {
    return `http://127.0.0.1:${this.o.ports.api}`;
  }
  /** The workers' Prometheus pages, one per worker that has a port. */
  get workerMetricsUrls(): string[] {
    return (this.o.ports.workerMetrics ?? [])
      .slice(0, this.o.workers ?? 2)
      .map((port) => `http://127.0.0.1:${port}/metrics`);
  }
  get sandboxUrl(): string {
    return `http://127.0.0.1:${this.o.ports.sandbox}`;
  }
  get temporalAddress(): string {
    return `127.0.0.1:${this.o.ports.temporal}`;
  }
  get uiUrl(): string {
    return `http://127.0.0.1:${this.o.ports.ui}`;
  }
  /** HTTPS with the identity provider (the Web UI passes access tokens to an https endpoint only). */
  get codecUrl(): string {
    return `${this.o.identity ? 'https' : 'http'}://127.0.0.1:${this.o.ports.codec}`;
  }
  /** The codec server's certificate (with `identity`): made for 127.0.0.1, self-signed. */
  get codecCertificate(): string {
    return this.#codecTls().certFile;
  }

  #codecTls() {
    return ensureLocalCertificate(path.join(this.o.dataDir, 'tls'));
  }
  /** The identity provider's issuer (with `identity`). */
  get issuer(): string {
    return issuerOf(this.#identityPorts().keycloak);
  }

  #splitPorts(): TemporalSplitPorts {
    if (!this.o.ports.temporalSplit) throw new Error('temporalSplit: the ports temporalSplit are needed');
    return this.o.ports.temporalSplit;
  }
  #identityPorts() {
    const { keycloak, keycloakManagement, temporalInternalFrontend, temporalInternalFrontendHttp } = this.o.ports;
    if (!keycloak || !keycloakManagement || !temporalInternalFrontend || !temporalInternalFrontendHttp) {
      throw new Error('identity: the ports keycloak, keycloakManagement and temporalInternalFrontend(Http) are needed');
    }
    return { keycloak, keycloakManagement, temporalInternalFrontend, temporalInternalFrontendHttp };
  }
  /** The identity provider's secrets (with `identity`): its administrator's and the clients'. */
  get identitySecrets() {
    const identity = this.#secrets?.identity;
    if (!this.o.identity || !identity) throw new Error('the stack runs without an identity provider');
    return identity;
  }
  /** A token of the automation service account (with `identity`), fresh. */
  async automationToken(): Promise<string> {
    if (!this.#automation) throw new Error('the stack runs without an identity provider');
    return this.#automation.token();
  }
  /**
   * The admin routes' bearer token, made by this stack at its first start and kept in its secrets folder (mode 0600):
   * without the identity provider only. Beside it there is none: admins sign in (journey-admin).
   */
  get adminToken(): string {
    if (!this.#adminToken) {
      throw new Error(this.o.identity ? 'no admin token beside the identity provider' : 'the stack is not started');
    }
    return this.#adminToken;
  }
  /** Where the admin token is kept (read it with `cat`); undefined beside the identity provider. */
  get adminTokenFile(): string | undefined {
    return this.#adminToken ? adminTokenFile(this.o.dataDir) : undefined;
  }
  /** The secrets folder's file holding the audit trail's writer URL (AUDIT_DATABASE_URL_FILE). */
  get auditDatabaseUrlFile(): string {
    if (!this.#files) throw new Error('the stack is not started');
    return this.#files.audit_database_url!;
  }
  /** The object store's credentials as an AWS shared credentials file (AWS_SHARED_CREDENTIALS_FILE). */
  get objectStoreCredentialsFile(): string {
    if (!this.#files) throw new Error('the stack is not started');
    return this.#files.object_store_credentials!;
  }
  /**
   * The stack's patient keys as a reader (the replay gate, a test): its key tables and erasure log; nothing made or
   * destroyed through it. Not opened: call init(), and close() after.
   */
  patientKeysReader(): PatientKeys {
    return this.patientKeysAt(this.patientKeysDatabaseUrl, { readOnly: true });
  }

  /**
   * Patient keys on a key database of this stack's (its own, or one restored from its backups) with its erasure log
   * and master keys; a writer re-applies the erasure log at init (nothing is recorded on the audit trail).
   */
  patientKeysAt(
    connectionString: string,
    o: { readOnly: boolean } & Partial<Pick<ConstructorParameters<typeof PatientKeys>[0], 'audit' | 'subject'>>,
  ): PatientKeys {
    const store = this.objectStore;
    if (!store || !this.#secrets) throw new Error('the stack is not started');
    return new PatientKeys({
      ring: parseEncryptionKeys(this.#secrets.payloadEncryptionKeys),
      store: new PostgresPatientKeyStore({ connectionString }),
      erasureLog: new S3ErasureLog({
        client: new S3Client({
          region: 'us-east-1',
          endpoint: store.endpoint,
          forcePathStyle: true,
          credentials: { accessKeyId: store.accessKeyId, secretAccessKey: store.secretAccessKey },
        }),
        bucket: CHECKPOINT_BUCKET,
        prefix: 'patient-erasures/',
        retentionDays: 2190,
      }),
      readOnly: o.readOnly,
      audit: o.audit ?? (() => Promise.resolve()),
      ...(o.subject !== undefined ? { subject: o.subject } : {}),
    });
  }

  /** The inbox database's URL, as the inbox's own role reaches it (carries the password: never log it). */
  get inboxDatabaseUrl(): string {
    const pg = this.#pg();
    return inboxRoleUrl('127.0.0.1', pg.port, this.#inboxRole());
  }

  #inboxRole(): InboxRole {
    const password = this.#secrets?.inboxPassword;
    if (!password) throw new Error('the stack is not started');
    return { database: INBOX_DATABASE, role: INBOX_ROLE, password };
  }

  /** The patient keys' database URL, as their own role reaches it (carries the password: never log it). */
  get patientKeysDatabaseUrl(): string {
    return inboxRoleUrl('127.0.0.1', this.#pg().port, this.#patientKeysRole());
  }

  #patientKeysRole(): InboxRole {
    const password = this.#secrets?.patientKeysPassword;
    if (!password) throw new Error('the stack is not started');
    return { database: PATIENT_KEYS_DATABASE, role: PATIENT_KEYS_ROLE, password };
  }

  /** PostgreSQL's address: the one server's, or the cluster's primary's. */
  #pg(): { port: number } {
    const pg = this.cluster ?? this.postgres;
    if (!pg) throw new Error('PostgreSQL is not started');
    return pg;
  }

  /**
   * The superuser: the stack's own preparation, and nothing else. The one server's over its unix socket (no
   * password); the cluster's through its primary's address, with its password.
   */
  #superuser(): SuperuserAccess {
    if (this.cluster) return { host: '127.0.0.1', port: this.cluster.port, ...this.cluster.superuser };
    const pg = this.postgres!;
    return { host: pg.socketDir, port: pg.port, user: pg.user };
  }

  /** The superuser's URL to the inbox's database (tests and drills look around with it). Carries a password. */
  get superuserUrl(): string {
    if (this.cluster) return this.cluster.url(INBOX_DATABASE);
    if (!this.postgres) throw new Error('PostgreSQL is not started');
    return this.postgres.url;
  }

  /** A role's access over TCP with its password (what a part logs in as). */
  #roleAccess(role: string, password: string) {
    return { host: '127.0.0.1', port: this.#pg().port, user: role, password };
  }

  async start(): Promise<void> {
    const { dataDir, ports } = this.o;
    const stack = this.#stack;
    if (ports.temporalMembership + 3 >= 32_768) throw new Error('TEMPORAL_MEMBERSHIP_PORT: must stay below 32765');
    if (!existsSync(path.join(TOOLS, 'temporal-ui', 'bin', 'temporal-ui-server')))
      throw new Error('the Temporal UI server is missing: run `bash scripts/install-production.sh`');
    if (this.o.identity && !keycloakInstalled())
      throw new Error('Keycloak is missing: run `bash scripts/install-production.sh`');
    const secrets = (this.#secrets = stackSecrets(dataDir));
    this.#adminToken = stackAdminToken(dataDir, !this.o.identity);

    // 1. PostgreSQL: Temporal's two databases, Keycloak's, the callback inbox and the audit trail, each owned by a
    // role of its own; no part logs in as the superuser.
    if (this.o.database === 'cluster') {
      await this.#startCluster();
    } else {
      const postgres = await startPostgres({
        dataDir: path.join(dataDir, 'postgres'),
        port: ports.postgres,
        database: INBOX_DATABASE,
        user: 'journeys',
        log: (l) => this.#log(l),
      });
      this.postgres = postgres;
      stack.add({ name: 'postgres', stop: () => postgres.stop() });
    }
    const su = this.#superuser();

    // 1a. The callback inbox: a database the API replicas' own role owns (not the cluster's superuser); the patient
    // keys likewise, a database and role of their own (the workers and the codec server reach them, not the inbox).
    await prepareInboxRole(su, this.#inboxRole());
    await prepareInboxRole(su, this.#patientKeysRole());

    // 1b. One audit trail for every process: a table in a database of its own, owned by a role nobody logs in as;
    // the processes' role can only read and append to it.
    await prepareAuditOwner(su, {
      database: AUDIT_DATABASE,
      owner: AUDIT_OWNER,
      writerRole: AUDIT_WRITER,
      writerPassword: secrets.auditWriterPassword!,
    });
    this.#auditUrl = roleUrl('127.0.0.1', this.#pg().port, AUDIT_WRITER, secrets.auditWriterPassword!, AUDIT_DATABASE);

    // 1c. The identity provider: Keycloak on its own database as its own role, the realm imported on its first
    // start. Temporal's authorizer reads its keys at start, so it comes first (its ~20 s overlap the schema's setup).
    const keycloakReady = this.o.identity ? this.#startKeycloak(su) : Promise.resolve();

    // 2. The Temporal server as its own role, owning its two databases; its schema set up or updated first (by that
    // role); then the namespace and search attributes.
    const temporalAccess = this.#roleAccess(TEMPORAL_ROLE, secrets.temporalDatabasePassword!);
    await prepareDatabaseRole(su, {
      role: TEMPORAL_ROLE,
      password: secrets.temporalDatabasePassword!,
      databases: ['temporal', 'temporal_visibility'],
    });
    await setupTemporalSchema(temporalAccess, (l) => this.#log(l));
    await keycloakReady;
    this.temporal = startTemporalServer({
      postgres: temporalAccess,
      ports: {
        frontend: ports.temporal,
        http: ports.temporalHttp,
        history: ports.temporalHistory,
        matching: ports.temporalMatching,
        worker: ports.temporalWorker,
        membershipBase: ports.temporalMembership,
        metrics: ports.temporalMetrics,
        internalFrontend: ports.temporalInternalFrontend,
        internalFrontendHttp: ports.temporalInternalFrontendHttp,
      },
      logDir: path.join(dataDir, 'logs'),
      configDir: path.join(dataDir, 'secrets', 'temporal-server'),
      ...(this.o.temporalDynamicConfig ? { dynamicConfigFile: this.o.temporalDynamicConfig } : {}),
      ...(this.o.identity ? { auth: { jwksUrl: jwksUrlOf(this.#identityPorts().keycloak), audience: AUDIENCE } } : {}),
      ...(this.o.temporalSplit ? { split: this.#splitPorts() } : {}),
      ...(this.o.historyShards ? { historyShards: this.o.historyShards } : {}),
      log: (l) => this.#log(l),
    });
    const temporal = this.temporal;
    stack.add({ name: 'temporal', stop: () => temporal.stop() });
    await temporal.start();
    await prepareNamespace(
      this.temporalAddress,
      'default',
      SEARCH_ATTRIBUTE_KEYS.map((k) => ({ name: k.name, type: k.type })),
      30,
      this.#automation ? await this.#automation.token() : undefined,
    );

    // 3. The object store (its root credentials read from files), its attachments' bucket and the audit trail's
    // checkpoint bucket (Object Lock).
    const root = writeSecretFiles(dataDir, {
      object_store_root_user: secrets.objectStoreAccessKey!,
      object_store_root_password: secrets.objectStoreSecretKey!,
    });
    this.objectStore = stack.add(
      await startObjectStore({
        dataDir: path.join(dataDir, 'objects', 'data'),
        port: ports.objectStore,
        consolePort: ports.objectStoreConsole,
        accessKeyId: secrets.objectStoreAccessKey!,
        secretAccessKey: secrets.objectStoreSecretKey!,
        credentialFiles: { user: root.object_store_root_user, password: root.object_store_root_password },
      }),
    );
    await new S3AttachmentStore({
      bucket: BUCKET,
      endpoint: this.objectStore.endpoint,
      credentials: { accessKeyId: this.objectStore.accessKeyId, secretAccessKey: this.objectStore.secretAccessKey },
    }).ensureBucket({ keepDeletedDays: ATTACHMENTS_KEEP_DELETED_DAYS });
    await ensureLockedBucket(this.objectStore, CHECKPOINT_BUCKET);
    this.#log(`object store ready at ${this.objectStore.endpoint} (buckets ${BUCKET}, ${CHECKPOINT_BUCKET})`);

    // The engine's secrets, each a file of its own (mode 0600) that its *_FILE setting names.
    this.#files = this.#writeSecretFiles();
    const files = this.#files;

    // 4. Codec server, Web UI, sandbox.
    await stack.up(
      codec(ports.codec, {
        PAYLOAD_ENCRYPTION_KEYS_FILE: files.payload_encryption_keys!,
        CODEC_HOST: '127.0.0.1',
        // Even on loopback: any local process could otherwise decrypt every payload. With the identity provider, the
        // static token stays for automation (header only); people come with the Web UI's access token.
        CODEC_SERVER_TOKEN_FILE: files.codec_server_token!,
        ...this.#oidcEnv(),
        ...(this.o.identity
          ? { CODEC_TLS_CERT_FILE: this.#codecTls().certFile, CODEC_TLS_KEY_FILE: this.#codecTls().keyFile }
          : {}),
        CODEC_CORS_ORIGINS: `http://127.0.0.1:${ports.ui},http://localhost:${ports.ui}`,
        // Every decode on the record, in the trail every process shares (npm run audit-trail:verify -- --database-url).
        ...this.#auditEnv(),
        ...this.#patientKeyEnv(),
        LOG_LEVEL: 'warn',
      }),
      temporalUi({
        dir: path.join(dataDir, 'temporal-ui'),
        port: ports.ui,
        temporal: this.temporalAddress,
        codec: this.codecUrl,
        ...(this.o.identity ? { auth: { issuer: this.issuer, secrets: this.identitySecrets } } : {}),
      }),
      sandbox(ports.sandbox, this.o.sandboxEnv),
    );

    // 5. Workers and API replicas, each with a data folder of its own; then the load balancer.
    this.#clinicsFile = writeDemoClinics(dataDir, secrets);
    const env = { ...process.env, ...this.o.engineEnv };
    const version = workerVersion(env);
    for (let i = 1; i <= (this.o.workers ?? 2); i++) {
      this.#startWorker(`worker-${i}`, this.o.ports.workerMetrics?.[i - 1], version);
    }
    stack.add({ name: 'workers and API replicas', stop: () => this.#stopApps() });
    ports.apiReplicas.forEach((port, i) => {
      const name = `api-${i + 1}`;
      this.apis.push(this.#app(api(port, this.#engineEnv(name), { name })));
    });
    await Promise.all(this.apis.map((a) => a.ready()));
    if (version.WORKER_BUILD_ID) {
      const apiKey = await this.#automation?.token();
      await makeVersionCurrent(this.temporalAddress, version.WORKER_BUILD_ID, { env, apiKey, log: this.#log });
    }
    await stack.up(loadBalancer(path.join(dataDir, 'load-balancer'), ports.api, ports.apiReplicas));
  }

  /** A worker or an API replica, started: supervised when the stack is, stopped with the others (#stopApps). */
  #app(spec: PartSpec): ManagedProcess {
    return this.#stack.process(spec, this.o.supervise ? 'supervise' : 'ignore').start();
  }

  /** Every engine process's environment (workers and API replicas); `name` is its data folder. */
  #engineEnv(name: string): Record<string, string> {
    const files = this.#files!;
    return {
      DATA_DIR: path.join(this.o.dataDir, 'processes', name),
      TEMPORAL_ADDRESS: this.temporalAddress,
      TEMPORAL_CONFIG_FILE: stackTemporalProfile(this.o.dataDir),
      EXAM_SERVICE_BASE_URL: this.sandboxUrl,
      CLINICS_FILE: this.#clinicsFile!,
      WEBHOOK_SECRET_FILE: files.webhook_secret!,
      PUBLIC_BASE_URL: process.env.PUBLIC_BASE_URL ?? this.apiUrl,
      // HAProxy on this host: its X-Forwarded-For names the caller the limits on refused sign-ins count by.
      API_TRUSTED_PROXIES: '127.0.0.1,::1',
      PAYLOAD_ENCRYPTION_KEYS_FILE: files.payload_encryption_keys!,
      // The stack's own admin token (its hash); none beside the identity provider, whose admins sign in.
      ...(this.#adminToken ? { ADMIN_TOKEN_SHA256: sha256(this.#adminToken) } : {}),
      INBOX_STORE: 'postgres',
      INBOX_DATABASE_URL_FILE: files.inbox_database_url!,
      ATTACHMENTS_STORE: 's3',
      ATTACHMENTS_S3_BUCKET: BUCKET,
      ATTACHMENTS_S3_ENDPOINT: this.objectStore!.endpoint,
      ...this.#auditEnv(),
      ...this.#patientKeyEnv(),
      LOG_LEVEL: 'warn',
      ...this.#oidcEnv(),
      ...this.#serviceAccountEnv(name.startsWith('api-') ? 'api' : 'worker'),
      ...this.o.engineEnv,
    };
  }

  /**
   * The shared audit trail (PostgreSQL, insert-only role) of the codec server, the workers and the API, its head
   * checkpointed to the bucket with Object Lock; the object store's keys from a credentials file (the AWS SDK's own
   * setting), the environment's AWS keys emptied so that a person's own do not take their place.
   */
  #auditEnv(): Record<string, string> {
    const files = this.#files!;
    return {
      AUDIT_STORE: 'postgres',
      AUDIT_DATABASE_URL_FILE: files.audit_database_url!,
      AUDIT_CHECKPOINT_BUCKET: CHECKPOINT_BUCKET,
      AUDIT_CHECKPOINT_ENDPOINT: this.objectStore!.endpoint,
      AWS_SHARED_CREDENTIALS_FILE: files.object_store_credentials!,
      AWS_PROFILE: 'default',
      AWS_ACCESS_KEY_ID: '',
      AWS_SECRET_ACCESS_KEY: '',
      AWS_SESSION_TOKEN: '',
    };
  }

  /**
   * Per-patient keys in PostgreSQL, every process sharing them (a database and role of their own, which makes the
   * tables at the first start); erasures logged in the checkpoints' bucket with Object Lock (AUDIT_CHECKPOINT_BUCKET).
   */
  #patientKeyEnv(): Record<string, string> {
    return {
      PATIENT_KEY_STORE: 'postgres',
      PATIENT_KEY_DATABASE_URL_FILE: this.#files!.patient_key_database_url!,
    };
  }

  /** The environment `npm run audit-trail:verify` needs for this stack's table and its checkpoints (files only). */
  get auditVerifyEnv(): Record<string, string> {
    if (!this.#files) throw new Error('the stack is not started');
    const { AUDIT_STORE: _store, ...env } = this.#auditEnv();
    return env;
  }

  /** Writes the engine's secrets to the secrets folder, each a file (mode 0600); returns their paths by name. */
  #writeSecretFiles(): Record<string, string> {
    const secrets = this.#secrets!;
    const store = this.objectStore!;
    const identity = this.o.identity ? this.identitySecrets : undefined;
    return writeSecretFiles<string>(this.o.dataDir, {
      webhook_secret: secrets.webhookSecret,
      payload_encryption_keys: secrets.payloadEncryptionKeys,
      codec_server_token: secrets.codecServerToken!,
      inbox_database_url: this.inboxDatabaseUrl,
      patient_key_database_url: this.patientKeysDatabaseUrl,
      audit_database_url: this.#auditUrl!,
      object_store_credentials: [
        '[default]',
        `aws_access_key_id = ${store.accessKeyId}`,
        `aws_secret_access_key = ${store.secretAccessKey}`,
      ].join('\n'),
      ...(identity
        ? {
            journey_api_client_secret: identity.apiClientSecret,
            journey_worker_client_secret: identity.workerClientSecret,
            // For `npm run add-person` (KEYCLOAK_ADMIN_PASSWORD_FILE): the realm has no people until one is added.
            keycloak_admin_password: identity.keycloakAdminPassword,
          }
        : {}),
    });
  }

  /** The file with Keycloak's administrator's password, which `npm run add-person` reads (with `identity`). */
  get keycloakAdminPasswordFile(): string {
    return path.join(this.o.dataDir, 'secrets', 'keycloak_admin_password');
  }

  /** The audit trail's database URL, as its writer role reaches it (a secret: never log it). */
  get auditDatabaseUrl(): string {
    if (!this.#auditUrl) throw new Error('the stack is not started');
    return this.#auditUrl;
  }

  /** The identity provider whose tokens the codec server and the admin API check (none without `identity`). */
  #oidcEnv(): Record<string, string> {
    if (!this.o.identity) return {};
    return { OIDC_ISSUER: this.issuer, OIDC_AUDIENCE: AUDIENCE };
  }

  /** The service account a worker or an API replica presents to Temporal (none without `identity`). */
  #serviceAccountEnv(kind: 'api' | 'worker'): Record<string, string> {
    if (!this.o.identity) return {};
    const files = this.#files!;
    const clientSecretFile = kind === 'api' ? files.journey_api_client_secret : files.journey_worker_client_secret;
    return {
      TEMPORAL_OAUTH_CLIENT_ID: CLIENTS[kind],
      TEMPORAL_OAUTH_CLIENT_SECRET_FILE: clientSecretFile!,
      TEMPORAL_OAUTH_TOKEN_URL: tokenUrlOf(this.#identityPorts().keycloak),
    };
  }

  /**
   * The highly available cluster: its backups' object store first (HTTPS: pgBackRest speaks S3 over TLS only, with a
   * certificate made for this machine), then the cluster archiving every node's WAL into it, then a full backup, and
   * another every 24 hours while the stack runs (two kept: the window a point-in-time restore reaches into).
   */
  async #startCluster() {
    const { dataDir, ports } = this.o;
    const secrets = this.#secrets!;
    if (ports.backupStore === undefined || ports.backupStoreConsole === undefined) {
      throw new Error('the PostgreSQL cluster needs ports.backupStore and ports.backupStoreConsole');
    }
    const cert = ensureLocalCertificate(path.join(dataDir, 'tls'), 'backup-store');
    const certsDir = path.join(dataDir, 'backup-store', 'certs');
    mkdirSync(certsDir, { recursive: true, mode: 0o700 });
    copyFileSync(cert.certFile, path.join(certsDir, 'public.crt'));
    copyFileSync(cert.keyFile, path.join(certsDir, 'private.key'));
    const keys = writeSecretFiles(dataDir, {
      backup_store_root_user: secrets.backupStoreAccessKey!,
      backup_store_root_password: secrets.backupStoreSecretKey!,
    });
    // Added first, so stopped last: the cluster archives into it until its last segment at its shutdown.
    const store = await startObjectStore({
      dataDir: path.join(dataDir, 'backup-store', 'data'),
      port: ports.backupStore,
      consolePort: ports.backupStoreConsole,
      accessKeyId: secrets.backupStoreAccessKey!,
      secretAccessKey: secrets.backupStoreSecretKey!,
      credentialFiles: { user: keys.backup_store_root_user, password: keys.backup_store_root_password },
      certsDir,
    });
    this.#stack.add({ name: 'backup store', stop: () => store.stop() });
    this.backupStore = store;
    const backups = new PostgresBackups({
      dir: path.join(dataDir, 'postgres-backups'),
      repository: {
        // The certificate's name: pgBackRest checks DNS names only.
        endpoint: store.endpoint.replace('127.0.0.1', 'localhost'),
        bucket: POSTGRES_BACKUP_BUCKET,
        accessKeyId: store.accessKeyId,
        secretAccessKey: store.secretAccessKey,
        caFile: cert.certFile,
      },
      retentionFull: POSTGRES_FULL_BACKUPS_KEPT,
      log: (l) => this.#log(l),
    });
    await backups.ensureBucket();
    const cluster = new PostgresCluster({
      dir: path.join(dataDir, 'postgres-cluster'),
      portBase: ports.postgres,
      database: INBOX_DATABASE,
      archive: backups,
      log: (l) => this.#log(l),
    });
    backups.attach(cluster);
    this.cluster = cluster;
    this.backups = backups;
    this.#stack.add({ name: 'postgres cluster', stop: () => cluster.stop() });
    await cluster.start();
    await backups.createStanza();
    const full = await backups.backup('full');
    this.#log(`postgres cluster: full backup on ${full.node} in ${full.ms} ms`);
    const daily = setInterval(() => {
      backups.backup('full').then(
        (b) => this.#log(`postgres cluster: full backup on ${b.node} in ${b.ms} ms`),
        (err: unknown) => this.#log(`postgres cluster: the full backup failed: ${String(err).slice(0, 200)}`),
      );
    }, 86_400_000);
    daily.unref();
    this.#stack.add({
      name: 'postgres backups',
      stop: () => {
        clearInterval(daily);
        return Promise.resolve();
      },
    });
  }

  /** Keycloak on the stack's PostgreSQL as its own role; resolves once the realm answers discovery. */
  async #startKeycloak(su: SuperuserAccess) {
    const ports = this.#identityPorts();
    const password = this.#secrets!.keycloakDatabasePassword!;
    await prepareDatabaseRole(su, { role: KEYCLOAK_ROLE, password, databases: [KEYCLOAK_DATABASE] });
    const pg = this.#roleAccess(KEYCLOAK_ROLE, password);
    const identity = this.identitySecrets;
    const home = path.join(this.o.dataDir, 'keycloak');
    const configFile = prepareKeycloakHome({ home, pg, secrets: identity, uiUrl: this.uiUrl });
    await this.#stack.up(
      keycloak({
        home,
        configFile,
        port: ports.keycloak,
        managementPort: ports.keycloakManagement,
        issuer: this.issuer,
      }),
    );
    this.#automation = new ServiceAccountTokens({
      clientId: CLIENTS.automation,
      clientSecret: identity.automationClientSecret,
      tokenUrl: tokenUrlOf(ports.keycloak),
    });
    this.#log(`keycloak ready at ${this.issuer}`);
  }

  #startWorker(name: string, metricsPort: number | undefined, version: Record<string, string>): ManagedProcess {
    const env = {
      WORKER_METRICS_ADDRESS: metricsPort ? `127.0.0.1:${metricsPort}` : 'off',
      ...this.#engineEnv(name),
      ...version,
    };
    const w = this.#app(worker(env, { name }));
    this.workers.push(w);
    return w;
  }

  /**
   * More workers beside the running ones, as a deploy starts a new version's: each polls as `buildId` with the
   * workflow bundle at `bundlePath` and its Prometheus page on one of `metricsPorts`. Nothing is made current: a ramp
   * or set-current does that. They stop with the stack, or earlier by their own stop().
   */
  startWorkerVersion(o: { buildId: string; bundlePath: string; metricsPorts: number[]; label?: string }) {
    if (!this.#clinicsFile) throw new Error('the stack is not started');
    const version = {
      WORKER_BUILD_ID: o.buildId,
      WORKER_BOOTSTRAP_CURRENT: 'false',
      WORKFLOW_BUNDLE_PATH: o.bundlePath,
    };
    return o.metricsPorts.map((port, i) => this.#startWorker(`worker-${o.label ?? o.buildId}-${i + 1}`, port, version));
  }

  /** Stops everything in the reverse order of the start. */
  stop(): Promise<void> {
    return this.#stack.stop();
  }

  /** The demo clinic's bearer token (the admin routes' is the stack's own: adminToken). */
  static readonly tokens = { clinic: DEMO_CLINIC_TOKEN };

  async #stopApps() {
    // API replicas first (nothing new comes in), then the workers.
    await Promise.all(this.apis.map((a) => a.stop()));
    await Promise.all(this.workers.map((w) => w.stop()));
  }
}

/**
 * The bucket with Object Lock the audit trail's checkpoints go to: created with it, or checked to have it (a bucket
 * without it cannot be given it here: the engine would refuse to start on it, so the stack says so first).
 */
async function ensureLockedBucket(store: ObjectStoreServer, bucket: string): Promise<void> {
  const s3 = new S3Client({
    region: 'us-east-1',
    endpoint: store.endpoint,
    forcePathStyle: true,
    credentials: { accessKeyId: store.accessKeyId, secretAccessKey: store.secretAccessKey },
  });
  try {
    try {
      await s3.send(new HeadBucketCommand({ Bucket: bucket }));
    } catch {
      await s3.send(new CreateBucketCommand({ Bucket: bucket, ObjectLockEnabledForBucket: true }));
    }
    const lock = await s3.send(new GetObjectLockConfigurationCommand({ Bucket: bucket })).catch(() => undefined);
    if (lock?.ObjectLockConfiguration?.ObjectLockEnabled !== 'Enabled') {
      throw new Error(
        `the object store's bucket ${bucket} has no Object Lock: remove it (it holds no checkpoint) and start again`,
      );
    }
  } finally {
    s3.destroy();
  }
}
