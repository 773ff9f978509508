// Per-patient keys on a key file and an erasure log in a folder of the test's, opened (init done): what the tests that
// need real keys beside a component (a store, the API, the codec) share.
import path from 'node:path';
import type { AuditEvent } from '../../src/audit/types';
import type { EncryptionKey } from '../../src/encryption-keys';
import { FileErasureLog, FilePatientKeyStore, PatientKeys } from '../../src/patient-keys';

export async function openFilePatientKeys(
  dir: string,
  o: {
    ring: EncryptionKey[];
    readOnly?: boolean;
    ttlMs?: number;
    /** How often the keys held are checked against the tombstones (1 s by default). */
    checkMs?: number;
    /** Where each change to the keys is recorded (nowhere by default). */
    audit?: (e: AuditEvent) => void;
    /** A key file opened beforehand (a setting put in it first); by default `<dir>/patient-keys.json`. */
    store?: FilePatientKeyStore;
  },
): Promise<PatientKeys> {
  const readOnly = o.readOnly ?? false;
  const keys = new PatientKeys({
    ring: o.ring,
    store: o.store ?? new FilePatientKeyStore(path.join(dir, 'patient-keys.json'), { readOnly }),
    erasureLog: new FileErasureLog(path.join(dir, 'patient-erasures.jsonl')),
    readOnly,
    cache: { ttlMs: o.ttlMs ?? 30_000, ...(o.checkMs ? { checkMs: o.checkMs } : {}) },
    audit: (e) => {
      o.audit?.(e);
      return Promise.resolve();
    },
  });
  await keys.init();
  return keys;
}
