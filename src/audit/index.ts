// The audit store the settings name: the JSON-lines file (one process, or a test) or the PostgreSQL table that every
// process of a deployment shares (API replicas, workers, the codec server). Each process calls auditLogFrom with its
// settings; nothing here reads the environment.
import path from 'node:path';
import { S3Client } from '@aws-sdk/client-s3';
import { Checkpointer, FileCheckpoints, S3Checkpoints, type CheckpointStore } from './checkpoints';
import { FileAuditLog } from './file';
import { PostgresAuditLog } from './postgres';
import type { AuditTrail } from './types';

export * from './types';
export * from './chain';
export { FileAuditLog, AuditTrailInUseError } from './file';
export * from './checkpoints';
export * from './store-unavailable';
export {
  AUDIT_TABLE,
  AuditStoreError,
  PostgresAuditLog,
  auditStoreSql,
  prepareAuditStore,
  verifyAuditTable,
  type PostgresAuditLogOptions,
  type PrepareAuditStoreOptions,
  type PreparedAuditStore,
} from './postgres';

/** Where its head is checkpointed (the configuration's `audit.checkpoints`). */
export type CheckpointSettings =
  | { store: 'file'; intervalMs: number }
  | { store: 'off'; intervalMs: number }
  | {
      store: 's3';
      intervalMs: number;
      bucket: string;
      prefix: string;
      endpoint?: string | undefined;
      region: string;
      retentionDays: number;
    };

/** Where the trail is kept: the configuration's `audit` section satisfies it. */
export type AuditStoreSettings = (
  | { store: 'file'; /** No file: no trail. */ file?: string | undefined }
  | { store: 'postgres'; /** A secret: never logged. */ databaseUrl: string; poolSize?: number | undefined }
) & { checkpoints?: CheckpointSettings };

/** The trail's name among its checkpoints: a file's own name (`api`, `worker`, `codec`), or `table`. */
export function trailName(settings: AuditStoreSettings): string {
  return settings.store === 'postgres' ? 'table' : path.basename(settings.file ?? 'audit', '.jsonl');
}

/** Where the settings put the checkpoints; undefined when off (or no trail). */
export function checkpointStoreFor(settings: AuditStoreSettings): CheckpointStore | undefined {
  const c = settings.checkpoints;
  if (!c || c.store === 'off') return undefined;
  if (c.store === 'file')
    return settings.store === 'file' && settings.file ? new FileCheckpoints(`${settings.file}.checkpoints`) : undefined;
  const client = new S3Client({
    region: c.region,
    ...(c.endpoint ? { endpoint: c.endpoint, forcePathStyle: true } : {}),
  });
  return new S3Checkpoints({ client, bucket: c.bucket, prefix: c.prefix, retentionDays: c.retentionDays });
}

/**
 * Checkpoints the trail's head every interval and at stop, to the store the settings name; undefined when they are
 * off. `start()` checks the store first (a bucket without Object Lock stops the start).
 */
export function checkpointerFor(
  trail: AuditTrail,
  settings: AuditStoreSettings,
  o: { warn?: (message: string, meta: Record<string, unknown>) => void } = {},
): Checkpointer | undefined {
  const store = checkpointStoreFor(settings);
  if (!store) return undefined;
  return new Checkpointer({
    trail: trailName(settings),
    head: trail,
    store,
    intervalMs: settings.checkpoints!.intervalMs,
    ...(o.warn ? { warn: o.warn } : {}),
  });
}

/** The trail of these settings; undefined for the file store without a file (no trail, as before). */
export function auditLogFrom(
  settings: AuditStoreSettings,
  o: { applicationName?: string } = {},
): AuditTrail | undefined {
  if (settings.store === 'postgres') {
    return new PostgresAuditLog({
      connectionString: settings.databaseUrl,
      ...(settings.poolSize !== undefined ? { poolSize: settings.poolSize } : {}),
      ...(o.applicationName ? { applicationName: o.applicationName } : {}),
    });
  }
  return settings.file ? new FileAuditLog(settings.file) : undefined;
}
