// Per-patient data keys and crypto-shredding: what the rest of the engine takes from here. The stores a deployment's
// settings name (a file locally, PostgreSQL in production) and where its erasure log goes are chosen by the caller;
// nothing here reads the environment.
export * from './envelope';
export * from './types';
export { normalizeEmail } from './crypto';
export { FilePatientKeyStore } from './file-store';
export {
  PATIENT_KEYS_TABLE,
  PATIENT_KEY_ERASURES_TABLE,
  PATIENT_KEY_SETTINGS_TABLE,
  PATIENT_JOURNEYS_TABLE,
  PATIENT_ERASURE_REQUESTS_TABLE,
  PATIENT_KEY_TABLES_SQL,
  PostgresPatientKeyStore,
  type PostgresPatientKeyStoreOptions,
} from './postgres-store';
export { FileErasureLog, S3ErasureLog, type S3ErasureLogOptions } from './erasure-log';
export {
  PatientKeys,
  REF_KEY_SETTING,
  type Actor,
  type JourneyKey,
  type EraseResult,
  type ErasureReapplied,
  type PatientKeysOptions,
} from './patient-keys';
