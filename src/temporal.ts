// Connections to Temporal shared by the worker, the API and the scripts: one place for address, namespace, TLS
// (Temporal Cloud with mTLS or an API key) and the payload codec, so every client reads and writes the same way.
import { Client, Connection, type ConnectionOptions, type WorkflowClientInterceptor } from '@temporalio/client';
import type { DataConverter } from '@temporalio/common';
import type { Info as ActivityInfo } from '@temporalio/activity';
import { encodeToPayloadsWithContext } from '@temporalio/common/lib/internal-non-workflow/codec-helpers';
import { loadDataConverter } from '@temporalio/common/lib/internal-non-workflow/data-converter-helpers';
import { toClientOptions } from '@temporalio/envconfig';
import { NativeConnection, type NativeConnectionOptions } from '@temporalio/worker';
import { ServiceAccountTokens } from './auth/service-account';
import { EncryptionCodec } from './codec/encryption-codec';
import { PatientCodec, type PatientCodecOptions, type PayloadPatientKeys } from './codec/patient-codec';
import { ConfigError, type Config } from './config';

type TemporalConfig = Config['temporal'];

/**
 * The connection options @temporalio/envconfig makes of the resolved profile (the CLI's own rules: TLS on with an
 * API key unless TLS is disabled; certificate files read here, at connection).
 */
export function connectionOptions(t: TemporalConfig): ConnectionOptions & NativeConnectionOptions {
  const { connectionOptions: o } = toClientOptions({
    address: t.address,
    namespace: t.namespace,
    apiKey: t.apiKey,
    tls: t.tls,
    grpcMeta: t.grpcMeta,
  });
  return {
    address: t.address,
    ...(o.tls !== undefined ? { tls: o.tls } : {}),
    ...(o.apiKey ? { apiKey: o.apiKey } : {}),
    ...(o.metadata ? { metadata: o.metadata } : {}),
  };
}

const serviceAccounts = new Map<string, ServiceAccountTokens>();

/** A token problem as a JSON log line (the processes' format), naming the account and the endpoint, never a token. */
function serviceAccountLog(level: 'info' | 'warn', msg: string) {
  process.stderr.write(
    `${JSON.stringify({ level: level === 'warn' ? 40 : 30, time: Date.now(), service: 'temporal-service-account', msg })}\n`,
  );
}

/** The process's tokens for the configured service account (one refresh schedule per account), or undefined. */
export function serviceAccountTokens(t: TemporalConfig): ServiceAccountTokens | undefined {
  if (!t.oauth) return undefined;
  const key = `${t.oauth.tokenUrl} ${t.oauth.clientId}`;
  let tokens = serviceAccounts.get(key);
  if (!tokens) {
    tokens = new ServiceAccountTokens(t.oauth, {
      log: serviceAccountLog,
    });
    serviceAccounts.set(key, tokens);
  }
  return tokens;
}

/**
 * How long a client connection waits at most between attempts to reconnect to a Temporal server that went away.
 * gRPC's own default grows each wait by 1.6x up to 120 s: after a minute's outage the next attempt could come 40 s
 * after the server was back, and every signal in between fails at once. The forwarder's signals (from a thread of
 * their own, with its own connection) then waited that long although its probe already found the server answering.
 * An attempt every 2 s at most costs the server nothing it notices.
 */
export const CLIENT_RECONNECT_BACKOFF = { initialMs: 500, maxMs: 2_000 } as const;

/**
 * The options of a client connection that presents the service account's token (asked for at each call, so a
 * refreshed one is used at once). Plain text unless TLS is configured: the token is a bearer credential, so a
 * server beyond this host belongs behind TLS.
 */
export function clientConnectionOptions(t: TemporalConfig): ConnectionOptions {
  const base: ConnectionOptions = {
    ...connectionOptions(t),
    channelArgs: {
      'grpc.initial_reconnect_backoff_ms': CLIENT_RECONNECT_BACKOFF.initialMs,
      'grpc.max_reconnect_backoff_ms': CLIENT_RECONNECT_BACKOFF.maxMs,
    },
  };
  const tokens = serviceAccountTokens(t);
  if (!tokens) return base;
  return { ...base, tls: base.tls ?? false, apiKey: () => tokens.current() ?? '' };
}

/**
 * Every payload (journey input, results, signals, updates, queries) encrypted with AES-256-GCM, and failure
 * messages and stack traces moved into an encoded payload so they are encrypted too. Undefined only when
 * encryption was switched off explicitly.
 */
export function dataConverterOf(
  config: Pick<Config, 'codec'>,
  patientKeys?: PayloadPatientKeys,
  o: PatientCodecOptions = { erased: 'throw' },
): DataConverter | undefined {
  if (config.codec.keys.length > 0) {
    // With per-patient keys, a journey's payloads are sealed under its patient's key (the master ring for the rest).
    const master = new EncryptionCodec(config.codec.keys);
    return {
      payloadCodecs: [patientKeys ? new PatientCodec(patientKeys, master, o) : master],
      failureConverterPath: require.resolve('./codec/failure-converter'),
    };
  }
  if (config.codec.disabled) return undefined;
  throw new ConfigError([
    'PAYLOAD_ENCRYPTION_KEYS: required (id:base64-of-32-bytes, comma-separated, first one active); ' +
      'set PAYLOAD_ENCRYPTION_DISABLED=true only for a throwaway setup',
  ]);
}

/** What a client adds beyond configuration: interceptors (tracing's, which carry the trace context). */
export interface ClientExtras {
  interceptors?: WorkflowClientInterceptor[];
  /** Per-patient keys: the client seals a journey's payloads (its start, signals, updates) for its patient. */
  patientKeys?: PayloadPatientKeys;
  /**
   * What an erased journey's payloads read as here: `throw` (PayloadErasedError), or `marker` (the API: a described
   * journey's memo, a result, read as `[erased]`, and the journey is answered from what visibility keeps).
   */
  erased?: PatientCodecOptions['erased'];
}

function clientOf(config: Pick<Config, 'temporal' | 'codec'>, connection: Connection, extras: ClientExtras): Client {
  const dataConverter = dataConverterOf(config, extras.patientKeys, { erased: extras.erased ?? 'throw' });
  return new Client({
    connection,
    namespace: config.temporal.namespace,
    ...(dataConverter ? { dataConverter } : {}),
    ...(extras.interceptors?.length ? { interceptors: { workflow: extras.interceptors } } : {}),
  });
}

export async function connectClient(
  config: Pick<Config, 'temporal' | 'codec'>,
  extras: ClientExtras = {},
): Promise<Client> {
  await serviceAccountTokens(config.temporal)?.token();
  return clientOf(config, await Connection.connect(clientConnectionOptions(config.temporal)), extras);
}

/** A client whose connection is made on first use: the API starts (and spools callbacks) while Temporal is down. */
export function lazyClient(config: Pick<Config, 'temporal' | 'codec'>, extras: ClientExtras = {}): Client {
  // The token comes in the background (the identity provider may be down too); calls before it are refused.
  serviceAccountTokens(config.temporal)
    ?.token()
    .catch((err: unknown) => serviceAccountLog('warn', (err as Error).message));
  return clientOf(config, Connection.lazy(clientConnectionOptions(config.temporal)), extras);
}

export async function connectWorkerConnection(t: TemporalConfig): Promise<NativeConnection> {
  const tokens = serviceAccountTokens(t);
  if (!tokens) return NativeConnection.connect(connectionOptions(t));
  const base = connectionOptions(t);
  const connection = await NativeConnection.connect({
    ...base,
    tls: base.tls ?? false,
    apiKey: await tokens.token(),
  });
  // Each refreshed token replaces the connection's (the SDK sends it with every call from then on).
  tokens.onToken((token) => connection.setApiKey(token));
  return connection;
}

/** How long a worker waits for Temporal to record an activity's heartbeat before it counts as not recorded. */
const HEARTBEAT_RECORD_TIMEOUT_MS = 10_000;

/** What heartbeatRecorder needs of the activity (its Info): the task, and whose payloads its details are. */
export type HeartbeatingActivity = Pick<ActivityInfo, 'taskToken' | 'activityId' | 'isLocal' | 'workflowExecution'>;

/**
 * Records an activity's heartbeat details with Temporal and resolves only once the server has them (the SDK's own
 * `heartbeat()` is sent later, without an answer). Details go through the data converter with the activity's
 * serialization context, as the SDK's own heartbeats do: a journey's are sealed for its patient like any of its
 * payloads (a timed-out attempt's failure carries them into the history), so an erasure leaves them unreadable too.
 */
export function heartbeatRecorder(
  connection: NativeConnection,
  namespace: string,
  dataConverter?: DataConverter,
): (activity: HeartbeatingActivity, details: unknown[]) => Promise<void> {
  const converter = loadDataConverter(dataConverter);
  const identity = `${process.pid}@journey-worker`;
  return async (activity, details) => {
    const payloads = await encodeToPayloadsWithContext(
      converter,
      {
        type: 'activity',
        namespace,
        activityId: activity.activityId,
        workflowId: activity.workflowExecution?.workflowId,
        isLocal: activity.isLocal,
      },
      details,
    );
    await connection.withDeadline(Date.now() + HEARTBEAT_RECORD_TIMEOUT_MS, () =>
      connection.workflowService.recordActivityTaskHeartbeat({
        taskToken: activity.taskToken,
        namespace,
        identity,
        ...(payloads ? { details: { payloads } } : {}),
      }),
    );
  };
}

/** The ids of the workflows a visibility query matches, first page only (at most `max`), on the worker's connection. */
export function workflowIdLister(
  connection: NativeConnection,
  namespace: string,
): (query: string, max: number) => Promise<string[]> {
  return async (query, max) => {
    const page = await connection.withDeadline(Date.now() + VISIBILITY_READ_TIMEOUT_MS, () =>
      connection.workflowService.listWorkflowExecutions({ namespace, query, pageSize: max }),
    );
    return (page.executions ?? []).flatMap((e) => (e.execution?.workflowId ? [e.execution.workflowId] : []));
  };
}
const VISIBILITY_READ_TIMEOUT_MS = 10_000;
const GRPC_INVALID_ARGUMENT = 3;

/**
 * Fails, naming them, when search attributes the journeys write are not registered on the namespace (a release that adds
 * one registers it first: docs/deploy.md). Asked as a visibility query naming each, which Temporal Cloud answers too.
 */
export async function requireSearchAttributes(
  connection: NativeConnection,
  namespace: string,
  keys: readonly { name: string }[],
): Promise<void> {
  const missing: string[] = [];
  for (const key of keys) {
    try {
      await connection.withDeadline(Date.now() + VISIBILITY_READ_TIMEOUT_MS, () =>
        connection.workflowService.countWorkflowExecutions({ namespace, query: `${key.name} IS NULL` }),
      );
    } catch (err) {
      // INVALID_ARGUMENT: the query names an attribute the namespace does not have; anything else is not ours to judge.
      if ((err as { code?: number }).code === GRPC_INVALID_ARGUMENT) missing.push(key.name);
    }
  }
  if (missing.length > 0) {
    throw new Error(
      `search attributes not registered on namespace ${namespace}: ${missing.join(', ')}; register them ` +
        '(docs/deploy.md) before starting workers of this release',
    );
  }
}

type WorkflowService = Connection['workflowService'];

export interface DeploymentVersion {
  deploymentName: string;
  buildId: string;
}

/** The deployment as the server lists it; undefined until a worker of it has polled. */
async function deploymentSummary(service: WorkflowService, namespace: string, deploymentName: string) {
  // Listed rather than described: a deployment no worker has polled yet is not an error to log on the server.
  let nextPageToken: Uint8Array | undefined;
  do {
    const page = await service.listWorkerDeployments({ namespace, pageSize: 100, nextPageToken });
    const found = page.workerDeployments?.find((d) => d.name === deploymentName);
    if (found) return found;
    nextPageToken = page.nextPageToken?.length ? page.nextPageToken : undefined;
  } while (nextPageToken);
  return undefined;
}

/** The build id of the deployment's current version; undefined while it has none (or the server has not seen it). */
export async function currentDeploymentVersion(
  service: WorkflowService,
  namespace: string,
  deploymentName: string,
): Promise<string | undefined> {
  const summary = await deploymentSummary(service, namespace, deploymentName);
  return summary?.routingConfig?.currentDeploymentVersion?.buildId || undefined;
}

/** The deployment's current build id, and whether the server knows the version (its workers have polled). */
async function versionState(service: WorkflowService, namespace: string, version: DeploymentVersion) {
  const summary = await deploymentSummary(service, namespace, version.deploymentName);
  if (!summary) return { known: false, current: undefined };
  const { workerDeploymentInfo } = await service.describeWorkerDeployment({
    namespace,
    deploymentName: version.deploymentName,
  });
  const known = (workerDeploymentInfo?.versionSummaries ?? []).some(
    (v) => v.deploymentVersion?.buildId === version.buildId,
  );
  return { known, current: summary.routingConfig?.currentDeploymentVersion?.buildId || undefined };
}

/**
 * Makes a version current: its workers then get every new journey's tasks, and (auto-upgrade) every running
 * journey's next one. With `onlyIfNone`, only where the deployment has no current version yet (a first deploy).
 * The server knows a version once its workers have polled: until then this waits, up to `timeoutMs`.
 */
export async function makeCurrentVersion(
  service: WorkflowService,
  namespace: string,
  version: DeploymentVersion,
  o: { onlyIfNone?: boolean; timeoutMs?: number; identity?: string } = {},
): Promise<{ changed: boolean; current: string }> {
  const deadline = Date.now() + (o.timeoutMs ?? 60_000);
  for (;;) {
    try {
      const { known, current } = await versionState(service, namespace, version);
      if (known) {
        if (current === version.buildId || (current !== undefined && o.onlyIfNone)) return { changed: false, current };
        await service.setWorkerDeploymentCurrentVersion({
          namespace,
          deploymentName: version.deploymentName,
          buildId: version.buildId,
          identity: o.identity ?? 'patient-journey-engine',
        });
        return { changed: true, current: version.buildId };
      }
      if (Date.now() > deadline) throw new Error('no worker of this version has polled the server');
    } catch (err) {
      if (Date.now() > deadline) {
        throw new Error(
          `could not make ${version.deploymentName}.${version.buildId} current: ${(err as Error).message}`,
          { cause: err },
        );
      }
    }
    await new Promise((r) => setTimeout(r, 500));
  }
}
