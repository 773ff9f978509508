// The payload codec under per-patient keys: a journey bound to a patient has every payload sealed under that patient's
// data key (the metadata names the patient's keyed hash and the key, never the patient), a workflow bound to none is
// sealed by the master key ring as before, and either decodes wherever it is met. After an erasure the worker and API
// side gets PayloadErasedError, the codec server's side the clear `[erased]` marker; nothing is sealed for the patient
// again (no new key behind the erasure's back); other patients' journeys still decode. A process beside the file
// store's writer reads it (the worker, the codec server) and sees the writer's keys, bindings and erasures.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { defaultPayloadConverter, type Payload, type SerializationContext } from '@temporalio/common';
import type { AuditEvent } from '../../src/audit/types';
import { EncryptionCodec } from '../../src/codec/encryption-codec';
import {
  PATIENT_SEALED_ENCODING,
  PatientCodec,
  PatientKeysWhenReady,
  PayloadErasedError,
  sealedPatientOf,
} from '../../src/codec/patient-codec';
import type { EncryptionKey } from '../../src/encryption-keys';
import { FilePatientKeyStore, type PatientKeys, PatientKeyStoreError } from '../../src/patient-keys';
import { PatientErasedError, PatientErasureInProgressError } from '../../src/patient-keys/types';
import { openFilePatientKeys } from '../support/patient-keys';

const ring: EncryptionKey[] = [{ id: '2026-11', key: randomBytes(32) }];
const text = (b: Uint8Array | null | undefined) => Buffer.from(b ?? []).toString('utf8');
const wf = (workflowId: string): SerializationContext => ({ type: 'workflow', namespace: 'default', workflowId });
const act = (workflowId: string): SerializationContext => ({
  type: 'activity',
  namespace: 'default',
  workflowId,
  activityId: '1',
  isLocal: false,
});
const payload = (value: unknown): Payload => defaultPayloadConverter.toPayload(value);
const valueOf = (p: Payload) => defaultPayloadConverter.fromPayload(p);

describe('the payload codec under per-patient keys', () => {
  let dir: string;
  let events: AuditEvent[];
  let opened: PatientKeys[];

  beforeEach(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'patient-codec-'));
    events = [];
    opened = [];
  });
  afterEach(async () => {
    for (const k of opened) await k.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const open = async (o: { readOnly?: boolean; ttlMs?: number; checkMs?: number } = {}) => {
    const keys = await openFilePatientKeys(dir, { ring, ...o, audit: (e) => events.push(e) });
    opened.push(keys);
    return keys;
  };

  it("seals a bound journey's payloads for its patient, and the rest under the master key ring", async () => {
    const keys = await open();
    const ada = keys.patientRef('clinic-a', 'Ada@Example.com');
    expect(await keys.bindJourney('journey-ada', ada)).toMatchObject({ patientRef: ada });
    const codec = new PatientCodec(keys, new EncryptionCodec(ring));
    const input = payload({ patient: { firstName: 'Ada', email: 'ada@example.com' } });

    const [sealed] = await codec.encode([input], wf('journey-ada'));
    expect(text(sealed!.metadata!.encoding)).toBe(PATIENT_SEALED_ENCODING);
    expect(sealedPatientOf(sealed!)).toBe(ada);
    expect(text(sealed!.metadata!['data-key-id'])).toMatch(/^dk_/);
    expect(JSON.stringify(sealed)).not.toContain('Ada');
    expect(valueOf((await codec.decode([sealed!], wf('journey-ada')))[0]!)).toEqual({
      patient: { firstName: 'Ada', email: 'ada@example.com' },
    });
    // An activity of the journey is the journey's too; a reader without context (the codec server) finds the key by
    // the metadata.
    const [fromActivity] = await codec.encode([payload({ answers: ['yes'] })], act('journey-ada'));
    expect(sealedPatientOf(fromActivity!)).toBe(ada);
    expect(valueOf((await codec.decode([fromActivity!]))[0]!)).toEqual({ answers: ['yes'] });

    // No binding, or no context: the master key ring, as before.
    for (const context of [wf('journey-older'), undefined]) {
      const [plain] = await codec.encode([input], context);
      expect(text(plain!.metadata!.encoding)).toBe('binary/encrypted');
      expect(valueOf((await codec.decode([plain!]))[0]!)).toEqual(valueOf(input));
    }
    // The key was made at the binding, on the record; a workflow id stays bound to its first patient.
    expect(events.map((e) => e.action)).toEqual(['patient-key.create']);
    const bob = keys.patientRef('clinic-a', 'bob@example.com');
    expect(await keys.bindJourney('journey-ada', bob)).toMatchObject({ patientRef: ada });
  });

  it("reads an erased patient's payloads as erased: an error for a worker, the marker for the codec server", async () => {
    const keys = await open();
    const ada = keys.patientRef('clinic-a', 'ada@example.com');
    const bob = keys.patientRef('clinic-a', 'bob@example.com');
    await keys.bindJourney('journey-ada', ada);
    await keys.bindJourney('journey-bob', bob);
    const worker = new PatientCodec(keys, new EncryptionCodec(ring));
    const server = new PatientCodec(keys, new EncryptionCodec(ring), { erased: 'marker' });
    const [adaSealed] = await worker.encode([payload({ firstName: 'Ada' })], wf('journey-ada'));
    const [bobSealed] = await worker.encode([payload({ firstName: 'Bob' })], wf('journey-bob'));

    const erased = await keys.erase(ada, { erasureId: 'er_test-1' });
    expect(erased.state).toBe('erased');

    const err = await worker.decode([adaSealed!]).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PayloadErasedError);
    expect((err as PayloadErasedError).erasureId).toBe('er_test-1');
    expect((err as Error).message).not.toContain('Ada');
    const [marker] = await server.decode([adaSealed!]);
    expect(valueOf(marker!)).toBe('[erased]');
    expect(text(marker!.metadata!['erasure-id'])).toBe('er_test-1');
    // Another patient's journey is untouched.
    expect(valueOf((await server.decode([bobSealed!]))[0]!)).toEqual({ firstName: 'Bob' });
    // Nothing is sealed for the erased patient again: no new key made behind the erasure.
    await expect(worker.encode([payload({ late: true })], wf('journey-ada'))).rejects.toBeInstanceOf(
      PatientErasedError,
    );
    expect(events.filter((e) => e.action === 'patient-key.create')).toHaveLength(2);
  });

  it("lets a reader beside the file's writer open its patients' payloads, and see an erasure within its cache time", async () => {
    const writer = await open();
    const reader = await open({ readOnly: true, ttlMs: 50 });
    const ada = writer.patientRef('clinic-a', 'ada@example.com');
    // Bound after the reader opened: it reads what the writer appended since.
    await writer.bindJourney('journey-ada', ada);
    const codec = new PatientCodec(reader, new EncryptionCodec(ring));
    const [sealed] = await codec.encode([payload({ firstName: 'Ada' })], wf('journey-ada'));
    expect(sealedPatientOf(sealed!)).toBe(ada);
    expect(valueOf((await new PatientCodec(writer, new EncryptionCodec(ring)).decode([sealed!]))[0]!)).toEqual({
      firstName: 'Ada',
    });

    await writer.erase(ada, { erasureId: 'er_test-2' });
    await new Promise((r) => setTimeout(r, 80));
    const err = await codec.decode([sealed!]).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PayloadErasedError);
    // A reader changes nothing: no key made, no binding, no erasure.
    await expect(reader.bindJourney('journey-new', writer.patientRef('clinic-a', 'new@example.com'))).rejects.toThrow(
      PatientKeyStoreError,
    );
    expect(readFileSync(path.join(dir, 'patient-keys.json.journeys'), 'utf8').trim().split('\n')).toHaveLength(1);
  });

  it('finds every key the writer made before it asks, while the writer keeps changing the file (starts in a burst)', async () => {
    const writer = await open();
    const reader = await open({ readOnly: true });
    const writerCodec = new PatientCodec(writer, new EncryptionCodec(ring));
    const readerCodec = new PatientCodec(reader, new EncryptionCodec(ring));
    // Journeys started 50 at a time: each one's key made and bound, then its input opened beside the file's writer
    // while the next ones' keys are being written (so the reader's reads of the file overlap).
    const start = async (i: number) => {
      const ref = writer.patientRef('clinic-a', `p${i}@example.com`);
      await writer.bindJourney(`journey-${i}`, ref);
      const [sealed] = await writerCodec.encode([payload({ i })], wf(`journey-${i}`));
      return valueOf((await readerCodec.decode([sealed!]))[0]!);
    };
    const opened = await Promise.all(Array.from({ length: 150 }, (_, i) => start(i)));
    expect(opened).toEqual(Array.from({ length: 150 }, (_, i) => ({ i })));
  });

  it('reads every binding the writer appends while it asks for several at once', async () => {
    const writerStore = new FilePatientKeyStore(path.join(dir, 'bindings.json'), { readOnly: false });
    const readerStore = new FilePatientKeyStore(path.join(dir, 'bindings.json'), { readOnly: true });
    await writerStore.init();
    await readerStore.init();
    try {
      const ref = (i: number) => `pt_${String(i).padStart(22, '0')}` as const;
      const asked: Promise<unknown>[] = [];
      for (let i = 0; i < 300; i++) {
        const dekId = `dk_${String(i).padStart(22, '0')}`;
        const at = new Date().toISOString();
        await writerStore.insert({
          patientRef: ref(i),
          dekId,
          wrapKeyId: 'k1',
          wrapped: Buffer.alloc(60),
          createdAt: at,
        });
        await writerStore.bind({ workflowId: `journey-${i}`, patientRef: ref(i), dekId, boundAt: at });
        // A worker's workflow tasks ask for the journeys they run, many at a time.
        for (let k = 0; k < 3; k++) asked.push(readerStore.bindingOf(`journey-${Math.floor(Math.random() * (i + 1))}`));
      }
      await Promise.all(asked);
      const seen = await Promise.all(
        Array.from({ length: 300 }, async (_, i) => (await readerStore.bindingOf(`journey-${i}`))?.patientRef),
      );
      expect(seen).toEqual(Array.from({ length: 300 }, (_, i) => ref(i)));
    } finally {
      await readerStore.close();
      await writerStore.close();
    }
  });

  it('remembers a journey bound to no patient for the cache time, and a binding made here at once', async () => {
    const keys = await open({ ttlMs: 60 });
    let reads = 0;
    const original = FilePatientKeyStore.prototype.bindingOf;
    const spy = jest.spyOn(FilePatientKeyStore.prototype, 'bindingOf').mockImplementation(function (
      this: FilePatientKeyStore,
      w,
    ) {
      reads++;
      return original.call(this, w);
    });
    try {
      expect(await keys.patientOfJourney('journey-old')).toBeUndefined();
      expect(await keys.patientOfJourney('journey-old')).toBeUndefined();
      expect(reads).toBe(1);
      await new Promise((r) => setTimeout(r, 80));
      expect(await keys.patientOfJourney('journey-old')).toBeUndefined();
      expect(reads).toBe(2);
      const ada = keys.patientRef('clinic-a', 'ada@example.com');
      await keys.bindJourney('journey-old', ada);
      expect(await keys.patientOfJourney('journey-old')).toBe(ada);
    } finally {
      spy.mockRestore();
    }
  });

  it('makes a client made before the keys wait for them, and refuses rather than seal without them', async () => {
    const keys = await open();
    const ada = keys.patientRef('clinic-a', 'ada@example.com');
    await keys.bindJourney('journey-ada', ada);
    const later = new PatientKeysWhenReady();
    const codec = new PatientCodec(later, new EncryptionCodec(ring));
    const pending = codec.encode([payload({ firstName: 'Ada' })], wf('journey-ada'));
    later.provide(keys);
    expect(sealedPatientOf((await pending)[0]!)).toBe(ada);

    const failed = new PatientKeysWhenReady();
    failed.fail(new Error('the key store is unreachable'));
    await expect(
      new PatientCodec(failed, new EncryptionCodec(ring)).encode([payload({})], wf('journey-ada')),
    ).rejects.toThrow('the key store is unreachable');
  });

  const erasureRequest = (keys: PatientKeys, email: string, key: string) =>
    keys.requestErasure({
      clinicId: 'clinic-a',
      patientRef: keys.patientRef('clinic-a', email),
      idempotencyKey: key,
      actor: { subject: 'ops', roles: ['clinic'] },
    });

  it('binds nothing to a patient while her erasure is pending; after it, a new journey gets a new key', async () => {
    const keys = await open();
    const ada = keys.patientRef('clinic-a', 'ada@example.com');
    const first = await keys.bindJourney('journey-1', ada);
    const { request } = await erasureRequest(keys, 'ada@example.com', 'erase-ada');
    await expect(keys.bindJourney('journey-2', ada)).rejects.toThrow(PatientErasureInProgressError);
    // A journey bound before the request still answers its binding (a start retried): the erasure lists it.
    expect(await keys.bindJourney('journey-1', ada)).toEqual(first);
    expect((await keys.journeysOf(ada)).map((b) => b.workflowId)).toEqual(['journey-1']);
    await keys.erase(ada, { erasureId: request.erasureId });
    await keys.completeErasureRequest(request, ['1']);
    const next = await keys.bindJourney('journey-2', ada);
    expect(next.patientRef).toBe(ada);
    expect(next.dekId).not.toBe(first.dekId);
  });

  it("seals nothing of an erased journey under the patient's later key: refused, never readable", async () => {
    const keys = await open();
    const ada = keys.patientRef('clinic-a', 'ada@example.com');
    const codec = new PatientCodec(keys, new EncryptionCodec(ring));
    const old = await keys.bindJourney('journey-old', ada);
    await keys.erase(ada, { erasureId: 'er_1' });
    // Invited again: a new key for the patient, bound to the new journey only.
    const fresh = await keys.bindJourney('journey-new', ada);
    expect(fresh.dekId).not.toBe(old.dekId);
    const [sealed] = await codec.encode([payload({ ok: 1 })], wf('journey-new'));
    expect(text(sealed!.metadata!['data-key-id'])).toBe(fresh.dekId);
    // A late payload of the erased journey (a callback, an activity's answer) is refused, not sealed under the new key.
    await expect(codec.encode([payload({ email: 'ada@example.com' })], wf('journey-old'))).rejects.toThrow(
      PatientErasedError,
    );
    expect(await keys.journeyKey('journey-old')).toEqual(old);
  });

  it("takes a key another process destroyed out of a reader's use within the check's time, not the cache's", async () => {
    const writer = await open();
    const reader = await open({ readOnly: true, ttlMs: 60_000, checkMs: 150 });
    const ada = writer.patientRef('clinic-a', 'ada@example.com');
    const bound = await writer.bindJourney('journey-ada', ada);
    const codec = new PatientCodec(reader, new EncryptionCodec(ring));
    const [sealed] = await codec.encode([payload({ email: 'ada@example.com' })], wf('journey-ada'));
    expect(valueOf((await codec.decode([sealed!]))[0]!)).toEqual({ email: 'ada@example.com' });
    expect(reader.cachedKeys).toBe(1);
    await writer.erase(ada, { erasureId: 'er_reader' });
    // The reader checks what it holds every 150 ms: 400 ms on, the key is out of its use (its cache keeps keys 60 s).
    await new Promise((r) => setTimeout(r, 400));
    await expect(codec.decode([sealed!])).rejects.toThrow(PayloadErasedError);
    await expect(reader.sealBytes(ada, 'temporal-payload', Buffer.from('x'), bound.dekId)).rejects.toThrow(
      PatientErasedError,
    );
    expect(reader.cachedKeys).toBe(0);
  });
});
