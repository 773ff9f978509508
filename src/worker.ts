// The worker: builds the activities' dependencies from configuration and runs the journey workflows.
// Scales out by running more of these against the same task queue.
import { setTimeout as sleep } from 'node:timers/promises';
import { Runtime, Worker, type NativeConnection, type WorkerOptions } from '@temporalio/worker';
import { createActivities, type ActivityDeps } from './activities';
import { auditLogFrom, checkpointerFor, type AuditEvent } from './audit';
import { createAttachmentStore } from './attachments';
import { sealerKeys } from './inbox';
import { RecordSealer } from './codec/at-rest';
import { clinicById, loadConfig, type Config } from './config';
import { examServiceClients } from './exam-service/clinic-clients';
import { jsonLogger, jsonLogLine } from './observability/json-log';
import { asStackPart } from './part-lifecycle';
import { logFormatOf, prettyLine } from './observability/log-format';
import { startTracing, tracingWorkerOptions, WORKER_SERVICE_NAME, type Tracing } from './observability/tracing';
import {
  connectWorkerConnection,
  dataConverterOf,
  heartbeatRecorder,
  makeCurrentVersion,
  requireSearchAttributes,
  workflowIdLister,
} from './temporal';
import { SEARCH_ATTRIBUTE_KEYS } from './contract/definitions';
import { webhookUrl } from './webhook-url';
import { patientKeysFrom } from './patient-keys/from-settings';
import type { PatientKeys } from './patient-keys/patient-keys';
import { workflowBundleFor } from './workflow-bundle';
import { withWorkflowStackFrames } from './workflow-stack-frames';

export function activityDeps(
  config: Config,
  connection: NativeConnection,
  patientKeys?: PatientKeys,
): ActivityDeps & { init(): Promise<void>; close(): Promise<void> } {
  const clients = examServiceClients(config);
  // The same trail as the API's (AUDIT_STORE): the attachments' deletions go on it.
  const audit = auditLogFrom(config.audit, { applicationName: 'journey-worker audit' });
  const checkpointer = audit
    ? checkpointerFor(audit, config.audit, {
        warn: (message, meta) => console.warn(JSON.stringify({ level: 'warn', msg: message, ...meta })),
      })
    : undefined;
  return {
    ...(audit ? { audit: (event: AuditEvent) => audit.append(event) } : {}),
    examServiceFor: (clinicId) => clients.forClinic(clinicId),
    webhookUrlFor: (journeyId) => webhookUrl(config.api.publicBaseUrl, journeyId, config.api.webhookSecret),
    // Attachments are PHI: sealed at rest with the payload key ring (the same keys the API seals with), or for their
    // patient (the API seals a journey's documents under the patient's data key; the worker only opens them).
    attachments: createAttachmentStore(config, new RecordSealer(sealerKeys(config)), patientKeys),
    notificationSecretFor: (clinicId) => clinicById(config, clinicId)?.notificationSecret,
    catalogTtlMs: config.examService.catalogCacheTtlMs,
    recordHeartbeat: heartbeatRecorder(connection, config.temporal.namespace, dataConverterOf(config, patientKeys)),
    listWorkflowIds: workflowIdLister(connection, config.temporal.namespace),
    init: async () => {
      await audit?.init();
      await checkpointer?.start();
    },
    close: async () => {
      await clients.close();
      await checkpointer?.stop();
      await audit?.close();
    },
  };
}

/** The span sink of a bundle's tracing interceptors when tracing is off (a bundle built with them by an earlier release). */
const NO_TRACING_SINKS = { exporter: { export: { fn: () => undefined, callDuringReplay: false } } };

export interface WorkerOverrides {
  connection?: NativeConnection;
  deps?: Partial<ActivityDeps>;
  options?: Partial<WorkerOptions>;
  /** Traces workflows and activities (interceptors, the workflow span sink) when given. */
  tracing?: Tracing;
  /** Per-patient keys (open); by default the ones the configuration names, read-only (the worker makes none). */
  patientKeys?: PatientKeys;
}

export async function createWorker(config: Config, overrides: WorkerOverrides = {}) {
  // A journey's payloads sealed for its patient: read-only, since the API makes each patient's key at the start and
  // an erasure is the API's; a patient whose key is gone stops the journey's tasks rather than get a new one.
  const ownKeys = overrides.patientKeys
    ? undefined
    : patientKeysFrom(config.patientKeys, {
        ring: config.codec.keys,
        writer: false,
        applicationName: 'journey-worker patient keys',
      });
  await ownKeys?.init();
  const patientKeys = overrides.patientKeys ?? ownKeys;
  const dataConverter = dataConverterOf(config, patientKeys);
  const connection = overrides.connection ?? (await connectWorkerConnection(config.temporal));
  // Production: the bundle built ahead, the one that matches the worker's tracing; development: webpack at start (it
  // follows the sources).
  const bundle = config.worker.workflowBundlePath
    ? workflowBundleFor(config.worker.workflowBundlePath, Boolean(overrides.tracing))
    : undefined;
  // A journey writes every one of them: one missing fails its workflow tasks, so a worker refuses to start without them.
  await requireSearchAttributes(connection, config.temporal.namespace, SEARCH_ATTRIBUTE_KEYS);
  const deps = activityDeps(config, connection, patientKeys);
  await deps.init();
  // The workflow threads start here: their contexts keep the configured stack frames (workflow-stack-frames.ts).
  const worker = await withWorkflowStackFrames(config.worker.workflowStackFrames, () =>
    Worker.create({
      connection,
      namespace: config.temporal.namespace,
      taskQueue: config.temporal.taskQueue,
      ...(bundle ? { workflowBundle: { code: bundle.code } } : { workflowsPath: require.resolve('./workflows') }),
      ...(dataConverter ? { dataConverter } : {}),
      activities: createActivities({ ...deps, ...overrides.deps }),
      maxCachedWorkflows: config.worker.maxCachedWorkflows,
      maxConcurrentActivityTaskExecutions: config.worker.maxConcurrentActivities,
      maxConcurrentWorkflowTaskExecutions: config.worker.maxConcurrentWorkflowTasks,
      // Graceful first; past this, run() rejects and the process exits rather than wait on a server that is gone.
      shutdownForceTime: config.worker.shutdownForceMs,
      ...deploymentOptions(config),
      ...tracingWorkerOptions(overrides.tracing),
      ...(bundle?.traced && !overrides.tracing ? { sinks: NO_TRACING_SINKS } : {}),
      ...overrides.options,
    }),
  );
  return {
    worker,
    connection,
    /** The bundle the worker runs (built ahead), and whether it carries the tracing interceptors. */
    bundle: bundle && { file: bundle.file, traced: bundle.traced },
    async close() {
      await deps.close();
      if (!overrides.connection) await connection.close();
      await ownKeys?.close();
    },
  };
}

/**
 * A versioned worker polls as one version of the engine's Worker Deployment. Journeys auto-upgrade (the worker's
 * default, not an annotation on the workflow: an unversioned worker refuses one): each moves to the current version at
 * its next workflow task, so a change must replay every wait state's history (the replay gate) and reaches journeys
 * parked for weeks (docs/deploy.md#deploying-a-workflow-change).
 */
export function deploymentOptions(config: Config): Pick<WorkerOptions, 'workerDeploymentOptions'> {
  const d = config.worker.deployment;
  if (!d) return {};
  return {
    workerDeploymentOptions: {
      version: { deploymentName: d.name, buildId: d.buildId },
      useWorkerVersioning: true,
      defaultVersioningBehavior: 'AUTO_UPGRADE',
    },
  };
}

/** Prometheus naming conventions: `_total` counters, durations in seconds with the unit in the name. */
export function prometheusExporter(bindAddress: string) {
  return { bindAddress, countersTotalSuffix: true, unitSuffix: true, useSecondsForDurations: true };
}

async function main() {
  const config = loadConfig();
  const levels = { trace: 'TRACE', debug: 'DEBUG', info: 'INFO', warn: 'WARN' } as const;
  const { metricsAddress } = config.worker;
  const format = logFormatOf(config.logFormat, process.stdout);
  const out = (line: string) => process.stdout.write(format === 'pretty' ? `${prettyLine(line.trimEnd())}\n` : line);
  // Once per process: the SDK's own series (slots, sticky cache, schedule-to-start, task latencies) for Prometheus.
  Runtime.install({
    logger: jsonLogger(
      config.logLevel in levels ? levels[config.logLevel as keyof typeof levels] : 'ERROR',
      WORKER_SERVICE_NAME,
      out,
    ),
    telemetryOptions: {
      // The SDK core's own warnings (a failing workflow task, a poller error) through the same JSON log, not as
      // coloured text on stderr.
      logging: { filter: { core: 'WARN', other: 'ERROR' }, forward: {} },
      ...(metricsAddress ? { metrics: { prometheus: prometheusExporter(metricsAddress) } } : {}),
    },
  });
  // The start-up lines are written whatever LOG_LEVEL says: supervisors, the stacks and people wait for them.
  const lifecycle = (message: string, meta: Record<string, unknown> = {}) =>
    out(
      jsonLogLine(
        { level: 'INFO', message, meta, timestampNanos: BigInt(Date.now()) * 1_000_000n },
        { service: WORKER_SERVICE_NAME },
      ),
    );
  const version = config.worker.deployment;
  // The SDK's own force time first; this is the backstop for a stop that still waits (a server that went first).
  asStackPart(config.worker.shutdownForceMs + 2_000, (message) => lifecycle(message));
  const tracing = startTracing(WORKER_SERVICE_NAME);
  const running = await createWorker(config, tracing ? { tracing } : {});
  const { taskQueue, address, namespace } = config.temporal;
  lifecycle(
    `worker polling task queue "${taskQueue}" on ${address} (namespace ${namespace}; ${
      version ? `deployment ${version.name}, build ${version.buildId}` : 'unversioned'
    })`,
    { taskQueue, namespace, tracing: Boolean(tracing), buildId: version?.buildId, bundle: running.bundle?.file },
  );
  if (running.bundle?.traced && !tracing) {
    lifecycle(
      `workflow bundle ${running.bundle.file} carries the tracing interceptors, with tracing off: each cached journey ` +
        'pays for them (build the bundles again: npm run build:workflows writes one without)',
      { bundle: running.bundle.file },
    );
  }
  if (metricsAddress) lifecycle(`worker metrics on http://${metricsAddress}/metrics`, { metricsAddress });
  // Worker.run resolves after SIGINT/SIGTERM once running activities and workflow tasks have finished.
  const run = running.worker.run();
  const { deployment } = config.worker;
  if (deployment?.bootstrapCurrent) {
    // The first deploy: no version is current yet, so no versioned worker would get a task. Later versions wait for
    // an operator's ramp or set-current.
    const version = { deploymentName: deployment.name, buildId: deployment.buildId };
    // A moment for the pollers to register the version with the server.
    sleep(1_000)
      .then(() => makeCurrentVersion(running.connection.workflowService, namespace, version, { onlyIfNone: true }))
      .then(
        ({ changed, current }) =>
          lifecycle(
            changed
              ? `worker deployment ${deployment.name}: version ${current} made current (the deployment had none)`
              : current === deployment.buildId
                ? `worker deployment ${deployment.name}: version ${current} is current`
                : `worker deployment ${deployment.name}: version ${deployment.buildId} polls; ${current} stays current until a ramp or set-current`,
            { deploymentName: deployment.name, buildId: deployment.buildId, currentBuildId: current },
          ),
        (err: unknown) =>
          lifecycle(`worker deployment ${deployment.name}: ${err instanceof Error ? err.message : String(err)}`, {
            deploymentName: deployment.name,
            buildId: deployment.buildId,
          }),
      );
  }
  await run;
  await running.close();
  await tracing?.shutdown();
}

if (require.main === module) {
  main().catch((err: unknown) => {
    console.error(err instanceof Error ? err.message : err);
    process.exit(1);
  });
}
