// After a master key rotation (a new first key in PAYLOAD_ENCRYPTION_KEYS), the API wraps every patient's data key
// again by the new key when it starts, in the background, each on the record; before it, an old key could not leave
// the ring without making every patient's payloads unreadable.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { buildApp, type ApiApp } from '../../src/api/app';
import type { AuditEvent } from '../../src/audit/types';
import type { EncryptionKey } from '../../src/encryption-keys';
import { FilePatientKeyStore, type PatientKeys } from '../../src/patient-keys';
import { eventually, fakeExamService, tempDataDir, testConfig, unreachableTemporal } from './support';
import { openFilePatientKeys } from '../support/patient-keys';

const OLD: EncryptionKey = { id: '2026-05', key: randomBytes(32) };
const NEW: EncryptionKey = { id: '2026-11', key: randomBytes(32) };

describe('the API after a master key rotation', () => {
  let dir: string;
  let app: ApiApp | undefined;
  const dirs = tempDataDir();
  const opened: PatientKeys[] = [];
  const events: AuditEvent[] = [];
  const open = async (ring: EncryptionKey[]) => {
    const keys = await openFilePatientKeys(dir, { ring, audit: (e) => events.push(e) });
    opened.push(keys);
    return keys;
  };

  beforeAll(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'patient-key-rotation-'));
  });
  afterAll(async () => {
    await app?.close();
    for (const k of opened) await k.close();
    rmSync(dir, { recursive: true, force: true });
    dirs.cleanup();
  });

  it("wraps every patient's data key again by the new first key at its start, on the record", async () => {
    const before = await open([OLD]);
    const refs = ['ada', 'bob', 'cy'].map((n) => before.patientRef('clinic-a', `${n}@example.com`));
    const sealed = [];
    for (const ref of refs) sealed.push(await before.sealForPatient(ref, 'journey-input', ref));
    await before.close();

    // What the key file holds, read afresh.
    const wrappedByOld = async () => {
      const store = new FilePatientKeyStore(path.join(dir, 'patient-keys.json'), { readOnly: true });
      await store.init();
      try {
        return (await store.wrappedByOther(NEW.id, 10)).map((k) => k.wrapKeyId);
      } finally {
        await store.close();
      }
    };
    expect(await wrappedByOld()).toEqual([OLD.id, OLD.id, OLD.id]);

    const rotated = await open([NEW, OLD]);
    app = await buildApp({
      config: testConfig(dirs.dataDir),
      temporal: await unreachableTemporal(),
      examServiceFor: () => fakeExamService(),
      startForwarder: false,
      patientKeys: rotated,
    });
    await app.ready();
    await eventually(
      () => wrappedByOld(),
      (left) => left.length === 0,
      { timeoutMs: 10_000, intervalMs: 100 },
    );
    expect(events.filter((e) => e.action === 'patient-key.rewrap').map((e) => e.details?.to)).toEqual([
      NEW.id,
      NEW.id,
      NEW.id,
    ]);
    // Every value sealed before still opens.
    for (const [i, s] of sealed.entries()) {
      expect(await rotated.openSealed(s, 'journey-input')).toEqual({ state: 'open', value: refs[i] });
    }
  });
});
