// The worker: builds the activities' dependencies from configuration and runs the journey workflows.
// Scales out by running more of these against the same task queue.
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { DefaultLogger, Runtime, Worker, type NativeConnection, type WorkerOptions } from '@temporalio/worker';
import { createActivities, type ActivityDeps, type AttachmentReader } from './activities';
import { clinicById, loadConfig, type Config } from './config';
import { ExamServiceClient } from './exam-service/client';
import { connectWorkerConnection } from './temporal';
import { webhookUrl } from './webhook-url';

/** Reads claim-checked attachment bytes from the local attachment folder (`<dir>/<ref>`). */
export function folderAttachmentReader(dir: string): AttachmentReader {
  return {
    async get(ref) {
      if (!/^att_[A-Za-z0-9_-]+$/.test(ref)) return undefined;
      try {
        return { bytes: await readFile(path.join(dir, ref)) };
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
        throw err;
      }
    },
  };
}

export function activityDeps(config: Config): ActivityDeps & { close(): Promise<void> } {
  const clients = new Map<string, ExamServiceClient>();
  return {
    examServiceFor(clinicId) {
      const clinic = clinicById(config, clinicId);
      if (!clinic) return undefined;
      let client = clients.get(clinicId);
      if (!client) {
        client = new ExamServiceClient({
          baseUrl: clinic.examServiceBaseUrl ?? config.examService.baseUrl,
          apiKey: clinic.examServiceApiKey,
          connectTimeoutMs: config.examService.connectTimeoutMs,
          requestTimeoutMs: config.examService.requestTimeoutMs,
        });
        clients.set(clinicId, client);
      }
      return client;
    },
    webhookUrlFor: (journeyId) => webhookUrl(config.api.publicBaseUrl, journeyId, config.api.webhookSecret),
    attachments: folderAttachmentReader(config.attachmentsDir),
    notificationSecretFor: (clinicId) => clinicById(config, clinicId)?.notificationSecret,
    catalogTtlMs: config.examService.catalogCacheTtlMs,
    async close() {
      await Promise.all([...clients.values()].map((c) => c.close()));
    },
  };
}

export interface WorkerOverrides {
  connection?: NativeConnection;
  deps?: Partial<ActivityDeps>;
  options?: Partial<WorkerOptions>;
}

export async function createWorker(config: Config, overrides: WorkerOverrides = {}) {
  const deps = activityDeps(config);
  const connection = overrides.connection ?? (await connectWorkerConnection(config.temporal));
  const worker = await Worker.create({
    connection,
    namespace: config.temporal.namespace,
    taskQueue: config.temporal.taskQueue,
    workflowsPath: require.resolve('./workflows'),
    activities: createActivities({ ...deps, ...overrides.deps }),
    maxCachedWorkflows: config.worker.maxCachedWorkflows,
    maxConcurrentActivityTaskExecutions: config.worker.maxConcurrentActivities,
    maxConcurrentWorkflowTaskExecutions: config.worker.maxConcurrentWorkflowTasks,
    ...overrides.options,
  });
  return {
    worker,
    async close() {
      await deps.close();
      if (!overrides.connection) await connection.close();
    },
  };
}

async function main() {
  const config = loadConfig();
  Runtime.install({ logger: new DefaultLogger(config.logLevel === 'silent' ? 'ERROR' : 'INFO') });
  const running = await createWorker(config);
  console.log(
    `worker polling task queue "${config.temporal.taskQueue}" on ${config.temporal.address} (namespace ${config.temporal.namespace})`,
  );
  // Worker.run resolves after SIGINT/SIGTERM once running activities and workflow tasks have finished.
  await running.worker.run();
  await running.close();
}

if (require.main === module) {
  main().catch((err: unknown) => {
    console.error(err instanceof Error ? err.message : err);
    process.exit(1);
  });
}
