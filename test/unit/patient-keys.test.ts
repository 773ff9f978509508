// Per-patient data keys on the local stores (a file, an erasure log beside it): patients named by a keyed hash, values
// sealed for one patient and one purpose, an erased patient's values read as `erased` (never as an error) while other
// patients' still open, every key change on the trail before it happens (and none without it), the cache bounded, a
// master key rotation carried by a rewrap. The same promises against PostgreSQL: test/patient-keys/.
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { AuditEvent } from '../../src/audit/types';
import type { EncryptionKey } from '../../src/encryption-keys';
import { KeyCache } from '../../src/patient-keys/cache';
import { cipherKey } from '../../src/patient-keys/crypto';
import {
  FileErasureLog,
  FilePatientKeyStore,
  isSealedEnvelope,
  PatientKeys,
  SealedValueError,
  type PatientKeysOptions,
  type SealedEnvelope,
} from '../../src/patient-keys';

const key = (id: string): EncryptionKey => ({ id, key: randomBytes(32) });

describe('per-patient data keys (file store)', () => {
  let dir: string;
  const ring = [key('2026-11')];
  let events: AuditEvent[];
  let opened: PatientKeys[];

  beforeEach(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'patient-keys-'));
    events = [];
    opened = [];
  });
  afterEach(async () => {
    for (const k of opened) await k.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const open = async (o: Partial<PatientKeysOptions> = {}) => {
    const keys = new PatientKeys({
      ring,
      store: new FilePatientKeyStore(path.join(dir, 'patient-keys.json')),
      erasureLog: new FileErasureLog(path.join(dir, 'patient-keys.erasures')),
      audit: (e) => {
        events.push(e);
        return Promise.resolve();
      },
      ...o,
    });
    opened.push(keys);
    const reapplied = await keys.init();
    return { keys, reapplied };
  };
  const closeAll = async () => {
    for (const k of opened.splice(0)) await k.close();
  };

  it('names a patient by a keyed hash of the clinic and the normalized e-mail', async () => {
    const { keys } = await open();
    const ref = keys.patientRef('clinic-a', 'Ann.Lee@Example.com');
    expect(ref).toMatch(/^pt_[A-Za-z0-9_-]{22}$/);
    expect(keys.patientRef('clinic-a', '  ann.lee@example.COM ')).toBe(ref);
    expect(keys.patientRef('clinic-b', 'ann.lee@example.com')).not.toBe(ref);
    // Under another master key ring the same patient is another ref: nobody without the key can try e-mails.
    await closeAll();
    rmSync(dir, { recursive: true, force: true });
    const { keys: other } = await open({ ring: [key('2026-11')] });
    expect(other.patientRef('clinic-a', 'ann.lee@example.com')).not.toBe(ref);
  });

  it('seals a value for one patient and one purpose, and opens it', async () => {
    const { keys } = await open();
    const ref = keys.patientRef('clinic-a', 'ann@example.com');
    const value = { firstName: 'Ann', answers: [1, 'two', null] };
    const envelope = await keys.sealForPatient(ref, 'journey-input', value);
    expect(isSealedEnvelope(envelope)).toBe(true);
    expect(Object.keys(envelope).sort()).toEqual(['$sealed', 'd', 'k', 'p']);
    expect(JSON.stringify(envelope)).not.toContain('Ann');
    // Through JSON and back, as it will travel in a workflow's input.
    const travelled = JSON.parse(JSON.stringify(envelope)) as unknown;
    expect(await keys.openSealed(travelled, 'journey-input')).toEqual({ state: 'open', value });
    // Bound to its purpose: it does not open as another.
    await expect(keys.openSealed(envelope, 'callback')).rejects.toMatchObject({ reason: 'altered' });
    // Altered: refused as such, never read as erased.
    const d = Buffer.from(envelope.d, 'base64');
    d[20] = d[20]! ^ 1;
    await expect(keys.openSealed({ ...envelope, d: d.toString('base64') }, 'journey-input')).rejects.toThrow(
      SealedValueError,
    );
    await expect(keys.openSealed({ ...envelope, extra: 1 }, 'journey-input')).rejects.toMatchObject({
      reason: 'malformed',
    });
    // Another patient's key does not open it (the envelope's patient changed).
    const other = keys.patientRef('clinic-a', 'bob@example.com');
    await keys.sealForPatient(other, 'journey-input', 1);
    await expect(keys.openSealed({ ...envelope, p: other }, 'journey-input')).rejects.toThrow(SealedValueError);
  });

  it('makes one key per patient, on the record before it is stored, and keeps it across restarts', async () => {
    const { keys } = await open();
    const ref = keys.patientRef('clinic-a', 'ann@example.com');
    const [a, b] = await Promise.all([
      keys.sealForPatient(ref, 'journey-input', 'a'),
      keys.sealForPatient(ref, 'journey-input', 'b'),
    ]);
    expect(a.k).toBe(b.k);
    expect(events).toEqual([
      {
        action: 'patient-key.create',
        subject: 'patient-keys',
        roles: [],
        outcome: 'ok',
        details: { patientRef: ref, dekId: a.k, wrapKeyId: '2026-11' },
      },
    ]);
    await closeAll();
    const file = path.join(dir, 'patient-keys.json');
    expect(statSync(file).mode & 0o777).toBe(0o600);
    // The key is stored wrapped: its file holds no key in clear, nothing of the value.
    expect(readFileSync(file, 'utf8')).not.toContain('"a"');
    const { keys: again } = await open();
    expect(await again.openSealed(a, 'journey-input')).toEqual({ state: 'open', value: 'a' });
    expect(events).toHaveLength(1);
  });

  it('refuses a second writer of the key file', async () => {
    await open();
    await expect(open()).rejects.toThrow(/is written by another store in this process/);
  });

  it('creates nothing when the trail cannot record it', async () => {
    const { keys } = await open({ audit: () => Promise.reject(new Error('trail down')) });
    const ref = keys.patientRef('clinic-a', 'ann@example.com');
    await expect(keys.sealForPatient(ref, 'journey-input', 1)).rejects.toThrow('trail down');
    await closeAll();
    const { keys: again } = await open();
    await again.sealForPatient(ref, 'journey-input', 1);
    // The key made now is the first one stored.
    expect(events.map((e) => e.action)).toEqual(['patient-key.create']);
  });

  it("erases one patient: their values read as erased, others' still open, nothing erased without its record", async () => {
    const { keys } = await open();
    const ann = keys.patientRef('clinic-a', 'ann@example.com');
    const bob = keys.patientRef('clinic-a', 'bob@example.com');
    const annValue = await keys.sealForPatient(ann, 'journey-input', { email: 'ann@example.com' });
    const bobValue = await keys.sealForPatient(bob, 'journey-input', { email: 'bob@example.com' });

    const failing = await open({
      store: new FilePatientKeyStore(path.join(dir, 'other.json')),
      erasureLog: new FileErasureLog(path.join(dir, 'other.erasures')),
      audit: () => Promise.reject(new Error('trail down')),
    });
    await expect(failing.keys.erase(ann)).resolves.toEqual({ state: 'no-key', patientRef: ann });

    const result = await keys.erase(ann, {
      erasureId: 'er_1',
      actor: { subject: 'clinic:clinic-a', roles: ['clinic'] },
    });
    expect(result).toEqual({
      state: 'erased',
      erasure: { patientRef: ann, dekId: annValue.k, erasureId: 'er_1', erasedAt: expect.any(String) },
    });
    expect(events.at(-1)).toEqual({
      action: 'patient-key.erase',
      subject: 'clinic:clinic-a',
      roles: ['clinic'],
      outcome: 'ok',
      details: { patientRef: ann, dekId: annValue.k, erasureId: 'er_1' },
    });
    expect(await keys.openSealed(annValue, 'journey-input')).toEqual({
      state: 'erased',
      patientRef: ann,
      erasureId: 'er_1',
      erasedAt: expect.any(String),
    });
    expect(await keys.openSealed(bobValue, 'journey-input')).toEqual({
      state: 'open',
      value: { email: 'bob@example.com' },
    });
    // The key is gone from the file, not flagged; the log and the tombstone hold no patient data.
    for (const file of ['patient-keys.json', 'patient-keys.erasures']) {
      const text = readFileSync(path.join(dir, file), 'utf8');
      expect(text).not.toContain('ann@example.com');
    }
    const stored = JSON.parse(readFileSync(path.join(dir, 'patient-keys.json'), 'utf8'));
    expect(Object.keys(stored.keys)).toEqual([bob]);
    expect(Object.keys(stored.erased)).toEqual([annValue.k]);

    // After a restart, still erased; a patient who comes back gets a new key, and the old values stay erased.
    await closeAll();
    const { keys: again } = await open();
    expect((await again.openSealed(annValue, 'journey-input')).state).toBe('erased');
    const fresh = await again.sealForPatient(ann, 'journey-input', 'new consent');
    expect(fresh.k).not.toBe(annValue.k);
    expect(await again.openSealed(fresh, 'journey-input')).toEqual({ state: 'open', value: 'new consent' });
    expect((await again.openSealed(annValue, 'journey-input')).state).toBe('erased');
  });

  it('leaves the key a patient got after her erasure was done, when a second runner of the same request erases late', async () => {
    const { keys } = await open();
    const ann = keys.patientRef('clinic-a', 'ann@example.com');
    const before = await keys.sealForPatient(ann, 'journey-input', { email: 'ann@example.com' });
    const actor = { subject: 'clinic:clinic-a', roles: ['clinic'] };
    const { request } = await keys.requestErasure({
      clinicId: 'clinic-a',
      patientRef: ann,
      idempotencyKey: 'k1',
      actor,
    });
    // The first runner (one replica) destroys her key and marks the request done.
    expect((await keys.erase(ann, { erasureId: request.erasureId, actor })).state).toBe('erased');
    await keys.completeErasureRequest(request, []);
    // She is invited again: a new key, sealing her new journey.
    const after = await keys.sealForPatient(ann, 'journey-input', { email: 'ann@example.com' });
    expect(after.k).not.toBe(before.k);
    // A second runner of the same request (another replica took it up while it was pending) comes to its erase now.
    const trail = events.length;
    await expect(keys.erase(ann, { erasureId: request.erasureId, actor })).resolves.toEqual({
      state: 'already-done',
      erasureId: request.erasureId,
    });
    expect(events.length).toBe(trail);
    expect(await keys.openSealed(after, 'journey-input')).toEqual({
      state: 'open',
      value: { email: 'ann@example.com' },
    });
    expect((await keys.openSealed(before, 'journey-input')).state).toBe('erased');
  });

  it('does not erase when the trail cannot record it', async () => {
    let down = false;
    const { keys } = await open({
      audit: (e) => {
        if (down) return Promise.reject(new Error('trail down'));
        events.push(e);
        return Promise.resolve();
      },
    });
    const ann = keys.patientRef('clinic-a', 'ann@example.com');
    const value = await keys.sealForPatient(ann, 'journey-input', 1);
    down = true;
    await expect(keys.erase(ann)).rejects.toThrow('trail down');
    expect(await keys.openSealed(value, 'journey-input')).toEqual({ state: 'open', value: 1 });
    expect(existsSync(path.join(dir, 'patient-keys.erasures'))).toBe(false);
  });

  it('finishes at the next start an erasure cut short after its log entry; meanwhile the key neither seals nor opens', async () => {
    const store = new FilePatientKeyStore(path.join(dir, 'patient-keys.json'));
    store.destroy = () => Promise.reject(new Error('disk full'));
    const { keys } = await open({ store });
    const ann = keys.patientRef('clinic-a', 'ann@example.com');
    const value = await keys.sealForPatient(ann, 'journey-input', 1);
    await expect(keys.erase(ann, { erasureId: 'er_cut' })).rejects.toThrow('disk full');
    expect(await keys.openSealed(value, 'journey-input')).toMatchObject({ state: 'erased', erasureId: 'er_cut' });
    await expect(keys.sealForPatient(ann, 'journey-input', 2)).rejects.toThrow(
      /erasure of this patient \(er_cut\) is under way/,
    );
    await closeAll();
    const { keys: again, reapplied } = await open();
    expect(reapplied.reDestroyed.map((e) => e.erasureId)).toEqual(['er_cut']);
    expect(await again.openSealed(value, 'journey-input')).toMatchObject({ state: 'erased', erasureId: 'er_cut' });
  });

  it('destroys again, on the record, a key that a restore of an older key file brought back', async () => {
    const file = path.join(dir, 'patient-keys.json');
    const { keys } = await open();
    const ann = keys.patientRef('clinic-a', 'ann@example.com');
    const value = await keys.sealForPatient(ann, 'journey-input', 'secret answer');
    await closeAll();
    const backup = readFileSync(file);
    const { keys: before } = await open();
    await before.erase(ann, { erasureId: 'er_2' });
    await closeAll();

    writeFileSync(file, backup);
    const { keys: restored, reapplied } = await open();
    expect(reapplied).toEqual({
      reDestroyed: [{ patientRef: ann, dekId: value.k, erasureId: 'er_2', erasedAt: expect.any(String) }],
      tombstonesRestored: 0,
    });
    expect(events.at(-1)).toMatchObject({
      action: 'patient-key.re-destroy',
      details: { patientRef: ann, dekId: value.k, erasureId: 'er_2' },
    });
    expect(await restored.openSealed(value, 'journey-input')).toMatchObject({ state: 'erased', erasureId: 'er_2' });
    await closeAll();
    // Once applied, nothing to do at the next start.
    expect((await open()).reapplied).toEqual({ reDestroyed: [], tombstonesRestored: 0 });
  });

  it('moves every key to the active master key (rewrap), on the record; the older key may then go', async () => {
    const old = key('2026-05');
    const { keys } = await open({ ring: [old] });
    const refs = ['a', 'b', 'c'].map((n) => keys.patientRef('clinic-a', `${n}@example.com`));
    const sealed: SealedEnvelope[] = [];
    for (const ref of refs) sealed.push(await keys.sealForPatient(ref, 'journey-input', ref));
    await closeAll();

    const active = key('2026-11');
    const { keys: rotated } = await open({ ring: [active, old] });
    // Patient refs stay derived under the key of the first start, wherever it is in the ring.
    expect(rotated.patientRef('clinic-a', 'a@example.com')).toBe(refs[0]);
    const before = events.length;
    expect(await rotated.rewrap({ batch: 2 })).toEqual({ rewrapped: 3, unreadable: 0 });
    expect(events.slice(before).map((e) => [e.action, e.details?.from, e.details?.to])).toEqual(
      Array.from({ length: 3 }, () => ['patient-key.rewrap', '2026-05', '2026-11']),
    );
    expect(await rotated.rewrap()).toEqual({ rewrapped: 0, unreadable: 0 });
    await closeAll();

    // Without the old key the values still open (their keys are wrapped by the new one), but the refs' key is gone.
    await expect(open({ ring: [active] })).rejects.toThrow(/derived under master key "2026-05"/);
    await closeAll();
    const { keys: after } = await open({ ring: [active, { id: '2026-05', key: old.key }] });
    for (const [i, s] of sealed.entries()) {
      expect(await after.openSealed(s, 'journey-input')).toEqual({ state: 'open', value: refs[i] });
    }
  });

  it('tells a key the store does not have from an erased one', async () => {
    const { keys } = await open();
    const ann = keys.patientRef('clinic-a', 'ann@example.com');
    const value = await keys.sealForPatient(ann, 'journey-input', 1);
    await expect(keys.openSealed({ ...value, k: 'dk_AAAAAAAAAAAAAAAAAAAAAA' }, 'journey-input')).rejects.toMatchObject({
      reason: 'unknown-key',
    });
  });
});

describe('the key cache', () => {
  const entry = (id: string) => ({ dekId: id, dek: cipherKey(Buffer.alloc(32)) });

  it('keeps at most its number of keys, dropping the least recently used', () => {
    const cache = new KeyCache(2, 60_000);
    cache.set('a', entry('1'));
    cache.set('b', entry('2'));
    cache.get('a');
    cache.set('c', entry('3'));
    expect([cache.get('a')?.dekId, cache.get('b'), cache.get('c')?.dekId]).toEqual(['1', undefined, '3']);
    expect(cache.size).toBe(2);
  });

  it('forgets a key after its time', () => {
    let now = 0;
    const cache = new KeyCache(10, 1_000, () => now);
    cache.set('a', entry('1'));
    now = 999;
    expect(cache.get('a')?.dekId).toBe('1');
    now = 1_000;
    expect(cache.get('a')).toBeUndefined();
    expect(cache.size).toBe(0);
  });
});
