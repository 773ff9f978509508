// The patient keys a deployment's settings name (the configuration's `patientKeys` satisfies PatientKeySettings): the
// store, the erasure log, and whether this process writes them. Nothing here reads the environment. The API writes
// (it makes each patient's key as it binds a journey, and erases); every other process reads, the file on the API's
// host or the shared PostgreSQL tables.
import { S3Client } from '@aws-sdk/client-s3';
import type { AuditEvent } from '../audit/types';
import type { EncryptionKey } from '../encryption-keys';
import { FileErasureLog, S3ErasureLog } from './erasure-log';
import { FilePatientKeyStore } from './file-store';
import { PatientKeys } from './patient-keys';
import { PostgresPatientKeyStore } from './postgres-store';
import type { ErasureLog } from './types';

/** Where erasures are logged: a file, or a bucket with Object Lock. */
export type ErasureLogSettings =
  | { store: 'file'; file: string }
  | {
      store: 's3';
      bucket: string;
      prefix: string;
      endpoint?: string | undefined;
      region: string;
      retentionDays: number;
    };

/** Where the keys are kept: off, one file (one writer), or PostgreSQL (a secret URL: never logged). */
export type PatientKeySettings =
  | { store: 'off' }
  | { store: 'file'; file: string; erasureLog: ErasureLogSettings }
  | { store: 'postgres'; databaseUrl: string; erasureLog: ErasureLogSettings };

export interface PatientKeysFromOptions {
  /** The master key ring (PAYLOAD_ENCRYPTION_KEYS). */
  ring: readonly EncryptionKey[];
  /** Key changes go on this trail first (a writer's). */
  audit?: (event: AuditEvent) => Promise<unknown>;
  /**
   * The process that makes keys, binds journeys and erases (the API); the others (the worker, the codec server, the
   * signal thread) only read: they make nothing and leave the erasure log's re-application to the writer.
   */
  writer: boolean;
  /** PostgreSQL's application_name for this process's connections. */
  applicationName?: string;
}

/** The erasure log of the settings. */
export function erasureLogFrom(settings: ErasureLogSettings): ErasureLog {
  if (settings.store === 'file') return new FileErasureLog(settings.file);
  const client = new S3Client({
    region: settings.region,
    ...(settings.endpoint ? { endpoint: settings.endpoint, forcePathStyle: true } : {}),
  });
  return new S3ErasureLog({
    client,
    bucket: settings.bucket,
    prefix: settings.prefix,
    retentionDays: settings.retentionDays,
  });
}

/** The patient keys of the settings (not yet open: call init()); undefined when they are off. */
export function patientKeysFrom(settings: PatientKeySettings, o: PatientKeysFromOptions): PatientKeys | undefined {
  if (settings.store === 'off') return undefined;
  const readOnly = !o.writer;
  const store =
    settings.store === 'file'
      ? new FilePatientKeyStore(settings.file, { readOnly })
      : new PostgresPatientKeyStore({
          connectionString: settings.databaseUrl,
          ...(o.applicationName ? { applicationName: o.applicationName } : {}),
        });
  return new PatientKeys({
    ring: o.ring,
    store,
    erasureLog: erasureLogFrom(settings.erasureLog),
    readOnly,
    // A writer without a trail records nothing (as the rest of the API then); a reader never records.
    audit: o.audit ?? (() => Promise.resolve()),
  });
}
