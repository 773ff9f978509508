// The audit store the settings name: the JSON-lines file (one process, or a test) or the PostgreSQL table that every
// process of a deployment shares (API replicas, workers, the codec server). Each process calls auditLogFrom with its
// settings; nothing here reads the environment.
import { FileAuditLog } from './file';
import { PostgresAuditLog } from './postgres';
import type { AuditTrail } from './types';

export * from './types';
export * from './chain';
export { FileAuditLog } from './file';
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

/** Where the trail is kept: the configuration's `audit` section satisfies it. */
export type AuditStoreSettings =
  | { store: 'file'; /** No file: no trail. */ file?: string | undefined }
  | { store: 'postgres'; /** A secret: never logged. */ databaseUrl: string; poolSize?: number | undefined };

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
