// One contract, two stores: every test below runs against the folder store and the S3 store (MinIO, a real server).
// Each clinic's quota on stored attachments and bytes, held before any byte is written, also by uploads racing from
// two replicas; an upload that fails leaves nothing; uploads no journey took are swept after their grace.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import {
  DeleteObjectsCommand,
  GetObjectCommand,
  ListObjectVersionsCommand,
  ListObjectsV2Command,
  S3Client,
} from '@aws-sdk/client-s3';
import { freePort } from '../../scripts/lib/postgres-server';
import { startObjectStore, type ObjectStoreServer } from '../../scripts/lib/object-store';
import type { DeletedOrphan } from '../../src/attachments/ledger';
import { S3AttachmentStore } from '../../src/attachments/s3';
import type { EncodedAttachment } from '../../src/attachments/base';
import { LocalFolderAttachmentStore } from '../../src/attachments/files';
import {
  AttachmentOfAnotherPatientError,
  AttachmentQuotaExceededError,
  type AttachmentMeta,
  type AttachmentPatientKeys,
  type AttachmentStore,
} from '../../src/attachments/types';
import { storeUnavailableProblem } from '../../src/api/problem';
import { StoreUnavailableError } from '../../src/audit/store-unavailable';
import { RecordSealer } from '../../src/codec/at-rest';
import type { EncryptionKey } from '../../src/encryption-keys';
import type { PatientKeys } from '../../src/patient-keys';
import { openFilePatientKeys } from '../support/patient-keys';

const K1: EncryptionKey = { id: 'k1', key: randomBytes(32) };
const K2: EncryptionKey = { id: 'k2', key: randomBytes(32) };
const META: AttachmentMeta = {
  kind: 'Lab',
  fileName: 'Wolstenholme-Achebe thyroid panel.pdf',
  contentType: 'application/pdf',
  clinicId: 'clinic-a',
};
const bytes = (n: number) => Buffer.alloc(n, 7);

interface StoreHarness {
  /**
   * A store on the test's data; `failWrites`: its record writes fail after writing (a disk or a bucket that fails);
   * `patientKeys`: documents sealed for their patients.
   */
  make(o?: { keys?: EncryptionKey[]; failWrites?: boolean; patientKeys?: AttachmentPatientKeys }): AttachmentStore;
  /** Every stored version of a record's two parts, as the store's medium holds them (the bucket keeps earlier ones). */
  stored(ref: string): Promise<Buffer[]>;
  /** The refs whose records (either part) are stored. */
  records(): Promise<string[]> | string[];
  /** Removes a record's parts behind the store's back (an upload that died between its reservation and its bytes). */
  removeRecordOnly(ref: string): Promise<void> | void;
  /** A fresh, empty store for the next test. */
  reset(): void;
  teardown(): Promise<void> | void;
}

const refOf = (name: string) => /^(att_[A-Za-z0-9_-]+?)(\.json)?$/.exec(name)?.[1];

function folderHarness(): Promise<StoreHarness> {
  const root = mkdtempSync(path.join(tmpdir(), 'attachments-contract-'));
  let dir = '';
  let n = 0;
  return Promise.resolve({
    make({ keys = [K1], failWrites = false, patientKeys } = {}) {
      const sealer = new RecordSealer(keys);
      if (!failWrites) return new LocalFolderAttachmentStore(dir, sealer, patientKeys);
      return new (class extends LocalFolderAttachmentStore {
        protected override async writeRecord(encoded: EncodedAttachment) {
          await super.writeRecord(encoded);
          throw new Error('no space left on device');
        }
      })(dir, sealer);
    },
    records() {
      let names: string[] = [];
      try {
        names = readdirSync(dir);
      } catch {
        // nothing stored yet
      }
      return [...new Set(names.map(refOf).filter((r): r is string => r !== undefined))].sort();
    },
    stored(ref) {
      return Promise.resolve(
        readdirSync(dir)
          .filter((name) => name.startsWith(ref))
          .map((name) => readFileSync(path.join(dir, name))),
      );
    },
    removeRecordOnly(ref) {
      rmSync(path.join(dir, ref));
      rmSync(path.join(dir, `${ref}.json`));
    },
    reset() {
      dir = path.join(root, `t${n++}`);
    },
    teardown() {
      rmSync(root, { recursive: true, force: true });
    },
  });
}

async function s3Harness(): Promise<StoreHarness> {
  const root = mkdtempSync(path.join(tmpdir(), 'attachments-contract-minio-'));
  const minio: ObjectStoreServer = await startObjectStore({
    dataDir: path.join(root, 'data'),
    port: await freePort(),
    consolePort: await freePort(),
    accessKeyId: 'attachments-contract',
    secretAccessKey: randomBytes(18).toString('base64url'),
  });
  const credentials = { accessKeyId: minio.accessKeyId, secretAccessKey: minio.secretAccessKey };
  const raw = new S3Client({ region: 'us-east-1', endpoint: minio.endpoint, forcePathStyle: true, credentials });
  const bucket = 'contract';
  const opened: S3AttachmentStore[] = [];
  let prefix = '';
  let n = 0;
  const keysUnder = async (p: string) =>
    ((await raw.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: p }))).Contents ?? []).map((o) => o.Key!);
  const first = new S3AttachmentStore({ bucket, endpoint: minio.endpoint, credentials });
  // Versioned, as the production stack's bucket is: a record written again keeps the one before.
  await first.ensureBucket({ keepDeletedDays: 1 });
  first.close();
  return {
    make({ keys = [K1], failWrites = false, patientKeys } = {}) {
      const options = {
        bucket,
        prefix,
        endpoint: minio.endpoint,
        credentials,
        sealer: new RecordSealer(keys),
        ...(patientKeys ? { patientKeys } : {}),
      };
      const store = failWrites
        ? new (class extends S3AttachmentStore {
            protected override async writeRecord(encoded: EncodedAttachment) {
              await super.writeRecord(encoded);
              throw new Error('the bucket refused the write');
            }
          })(options)
        : new S3AttachmentStore(options);
      opened.push(store);
      return store;
    },
    async records() {
      const names = (await keysUnder(prefix)).map((k) => k.slice(prefix.length)).filter((k) => !k.includes('/'));
      return [...new Set(names.map(refOf).filter((r): r is string => r !== undefined))].sort();
    },
    async stored(ref) {
      const found: Buffer[] = [];
      const page = await raw.send(new ListObjectVersionsCommand({ Bucket: bucket, Prefix: `${prefix}${ref}` }));
      for (const v of page.Versions ?? []) {
        const out = await raw.send(new GetObjectCommand({ Bucket: bucket, Key: v.Key!, VersionId: v.VersionId! }));
        found.push(Buffer.from(await out.Body!.transformToByteArray()));
      }
      return found;
    },
    async removeRecordOnly(ref) {
      await raw.send(
        new DeleteObjectsCommand({
          Bucket: bucket,
          Delete: { Objects: [{ Key: `${prefix}${ref}` }, { Key: `${prefix}${ref}.json` }] },
        }),
      );
    },
    reset() {
      prefix = `t${n++}/`;
    },
    async teardown() {
      for (const s of opened) s.close();
      raw.destroy();
      await minio.stop();
      rmSync(root, { recursive: true, force: true });
    },
  };
}

const stores: [string, () => Promise<StoreHarness>][] = [
  ['folder', folderHarness],
  ['s3', s3Harness],
];

describe.each(stores)('attachment store (%s): quotas and orphans', (_kind, makeHarness) => {
  let h: StoreHarness;

  beforeAll(async () => {
    h = await makeHarness();
  }, 60_000);
  afterAll(async () => h?.teardown());
  beforeEach(() => h.reset());

  async function refusal(p: Promise<unknown>): Promise<AttachmentQuotaExceededError> {
    const err = await p.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(AttachmentQuotaExceededError);
    return err as AttachmentQuotaExceededError;
  }

  it("refuses an upload past the clinic's count before storing it, and counts each clinic on its own", async () => {
    const store = h.make();
    const quota = { bytes: 0, count: 3 };
    const kept = [];
    for (let i = 0; i < 3; i++) kept.push((await store.put(bytes(10), META, { quota })).ref);
    const err = await refusal(store.put(bytes(10), META, { quota }));
    expect(err).toMatchObject({ clinicId: 'clinic-a', quota, usage: { count: 3, bytes: 30 }, size: 10 });
    expect(err.message).not.toContain(META.fileName);
    expect(await h.records()).toEqual([...kept].sort());
    expect(await store.usage('clinic-a')).toEqual({ count: 3, bytes: 30 });

    // Another clinic has its own quota; a deletion makes room again.
    const other = await store.put(bytes(10), { ...META, clinicId: 'clinic-b' }, { quota });
    expect(await store.usage('clinic-b')).toEqual({ count: 1, bytes: 10 });
    await store.delete(kept[0]!);
    expect(await store.usage('clinic-a')).toEqual({ count: 2, bytes: 20 });
    const again = await store.put(bytes(10), META, { quota });
    expect(await h.records()).toEqual([kept[1], kept[2], other.ref, again.ref].sort());
  });

  it("refuses an upload past the clinic's bytes, the upload's own size counted", async () => {
    const store = h.make();
    const quota = { bytes: 100, count: 0 };
    const first = await store.put(bytes(60), META, { quota });
    const err = await refusal(store.put(bytes(50), META, { quota }));
    expect(err).toMatchObject({ usage: { count: 1, bytes: 60 }, size: 50 });
    const exact = await store.put(bytes(40), META, { quota });
    await refusal(store.put(bytes(1), META, { quota }));
    await refusal(store.put(bytes(101), { ...META, clinicId: 'clinic-b' }, { quota }));
    expect(await h.records()).toEqual([first.ref, exact.ref].sort());
    expect(await store.usage('clinic-a')).toEqual({ count: 2, bytes: 100 });
    expect(await store.usage('clinic-b')).toEqual({ count: 0, bytes: 0 });
  });

  it('never stores past the quota when uploads race, from one replica or from two', async () => {
    const quota = { bytes: 0, count: 5 };
    const one = h.make();
    const outcomes = await Promise.allSettled(Array.from({ length: 8 }, () => one.put(bytes(10), META, { quota })));
    // One replica's uploads take turns at the check: exactly the quota is stored, none refused wrongly.
    expect(outcomes.filter((o) => o.status === 'fulfilled')).toHaveLength(5);
    for (const o of outcomes)
      if (o.status === 'rejected') expect(o.reason).toBeInstanceOf(AttachmentQuotaExceededError);
    expect(await h.records()).toHaveLength(5);

    const clinic = { ...META, clinicId: 'clinic-c' };
    const [a, b] = [h.make(), h.make()];
    const raced = await Promise.allSettled(
      Array.from({ length: 12 }, (_, i) => (i % 2 ? a : b).put(bytes(10), clinic, { quota })),
    );
    const stored = raced.filter((o) => o.status === 'fulfilled').length;
    // Two replicas see each other's reservations: at worst both are refused near the bound, never both stored past it.
    expect(stored).toBeGreaterThan(0);
    expect(stored).toBeLessThanOrEqual(5);
    expect(await a.usage('clinic-c')).toEqual({ count: stored, bytes: stored * 10 });
    expect(await h.records()).toHaveLength(5 + stored);
  });

  it('leaves nothing of an upload whose write failed, and gives its room back', async () => {
    const failing = h.make({ failWrites: true });
    await expect(failing.put(bytes(10), META, { quota: { bytes: 0, count: 1 } })).rejects.toThrow();
    expect(await h.records()).toEqual([]);
    expect(await failing.usage('clinic-a')).toEqual({ count: 0, bytes: 0 });
    await h.make().put(bytes(10), META, { quota: { bytes: 0, count: 1 } });
  });

  it('counts what was stored under an earlier key after a rotation, and deletes it with its usage', async () => {
    const before = await h.make({ keys: [K1] }).put(bytes(10), META);
    const rotated = h.make({ keys: [K2, K1] });
    const quota = { bytes: 0, count: 2 };
    expect(await rotated.usage('clinic-a')).toEqual({ count: 1, bytes: 10 });
    await rotated.put(bytes(10), META, { quota });
    await refusal(rotated.put(bytes(10), META, { quota }));
    await rotated.delete(before.ref);
    expect(await rotated.usage('clinic-a')).toEqual({ count: 1, bytes: 10 });
  });

  it('sweeps uploads no journey took once past the grace; claimed ones stay while their journey exists', async () => {
    const store = h.make();
    const notTaken = await store.put(bytes(11), META);
    const taken = await store.put(bytes(12), META);
    const neverStarted = await store.put(bytes(13), META);
    const otherClinic = await store.put(bytes(14), { ...META, clinicId: 'clinic-b' });
    const unfinished = await store.put(bytes(15), META);
    await store.claim({ ref: taken.ref, clinicId: 'clinic-a', size: 12 }, 'j-live');
    await store.claim({ ref: neverStarted.ref, clinicId: 'clinic-a', size: 13 }, 'j-never-started');
    // A second claim does not take it from the first journey.
    await store.claim({ ref: taken.ref, clinicId: 'clinic-a', size: 12 }, 'j-never-started');
    await h.removeRecordOnly(unfinished.ref);
    const journeyExists = (id: string) => Promise.resolve(id === 'j-live');

    // Within the grace nothing goes.
    const young = await store.sweepOrphans({ olderThan: new Date(Date.now() - 60_000), journeyExists });
    expect(young).toEqual({ deleted: 0, stale: 0 });

    // Temporal away: the claims are kept (only the unclaimed go).
    const away = await h.make().sweepOrphans({
      olderThan: new Date(Date.now() + 60_000),
      journeyExists: () => Promise.reject(new Error('temporal unavailable')),
    });
    expect(away).toEqual({ deleted: 2, stale: 1 });
    expect(await h.records()).toEqual([taken.ref, neverStarted.ref].sort());

    // Each deletion is on the record before it happens: a record that cannot be written keeps the upload.
    await expect(
      store.sweepOrphans({
        olderThan: new Date(Date.now() + 60_000),
        journeyExists,
        onDeleting: () => Promise.reject(new Error('the audit trail is down')),
      }),
    ).rejects.toThrow('the audit trail is down');
    expect(await store.get(neverStarted.ref)).toBeDefined();
    const deleted: DeletedOrphan[] = [];
    const past = await store.sweepOrphans({
      olderThan: new Date(Date.now() + 60_000),
      journeyExists,
      onDeleting: async (d) => {
        // Told before: the upload is still there.
        expect(await store.get(d.ref)).toBeDefined();
        deleted.push(d);
      },
    });
    expect(past).toEqual({ deleted: 1, stale: 0 });
    expect(deleted).toEqual([{ ref: neverStarted.ref, clinicId: 'clinic-a', size: 13, reason: 'journey_not_found' }]);
    expect(await h.records()).toEqual([taken.ref]);
    expect(await store.get(taken.ref)).toBeDefined();
    expect(await store.get(notTaken.ref)).toBeUndefined();
    expect(await store.get(otherClinic.ref)).toBeUndefined();
    expect(await store.usage('clinic-a')).toEqual({ count: 1, bytes: 12 });
    expect(await store.usage('clinic-b')).toEqual({ count: 0, bytes: 0 });

    // Without a way to ask after journeys, a claim is trusted; the journey's retention deletes the upload later.
    expect(await store.sweepOrphans({ olderThan: new Date(Date.now() + 60_000) })).toEqual({ deleted: 0, stale: 0 });
    await store.delete(taken.ref);
    expect(await h.records()).toEqual([]);
    expect(await store.usage('clinic-a')).toEqual({ count: 0, bytes: 0 });
  });
});

describe.each(stores)('attachment store (%s): documents sealed for their patient', (_kind, makeHarness) => {
  let h: StoreHarness;
  let keyDir: string;
  let keys: PatientKeys;
  const marker = Buffer.from('THYROID-PANEL-MARKER-7781');
  const clear = (parts: Buffer[]) =>
    parts.filter((b) => b.includes(marker) || b.includes(Buffer.from(META.fileName)) || b.includes(Buffer.from('Lab')));

  beforeAll(async () => {
    h = await makeHarness();
  }, 60_000);
  afterAll(async () => h?.teardown());
  beforeEach(async () => {
    h.reset();
    keyDir = mkdtempSync(path.join(tmpdir(), 'attachments-patient-keys-'));
    keys = await openFilePatientKeys(keyDir, { ring: [K1] });
  });
  afterEach(async () => {
    await keys.close();
    rmSync(keyDir, { recursive: true, force: true });
  });

  it('seals an upload a journey takes for its patient, leaving no earlier version under the payload keys', async () => {
    const store = h.make({ patientKeys: keys });
    const ada = keys.patientRef('clinic-a', 'ada@example.com');
    await keys.bindJourney('journey-ada', ada);
    const content = Buffer.concat([Buffer.from('%PDF '), marker]);
    const { ref } = await store.put(content, META);
    const before = await store.get(ref);
    expect(before?.patient).toBeUndefined();

    await store.sealForPatient(ref, ada);
    const after = await store.get(ref);
    expect(after?.bytes.equals(content)).toBe(true);
    expect(after?.meta).toEqual(before?.meta);
    expect(after?.patient).toBe(ada);
    // One version of each part, neither holding the content or the file name in the clear.
    const parts = await h.stored(ref);
    expect(parts).toHaveLength(2);
    expect(clear(parts)).toEqual([]);
    // The payload keys alone no longer open it: a store without the patient keys says why.
    await expect(h.make().get(ref)).rejects.toThrow(/sealed for a patient, and this process has no patient keys/);

    // Taken again for the same patient (a retried start): nothing changes; for another patient: refused.
    await store.sealForPatient(ref, ada);
    expect((await store.get(ref))?.bytes.equals(content)).toBe(true);
    const bob = keys.patientRef('clinic-a', 'bob@example.com');
    await keys.bindJourney('journey-bob', bob);
    await expect(store.sealForPatient(ref, bob)).rejects.toBeInstanceOf(AttachmentOfAnotherPatientError);
  });

  it('says a patient key store away is that, not a document that cannot be opened (a start answers 503, not 500)', async () => {
    const store = h.make({ patientKeys: keys });
    const ada = keys.patientRef('clinic-a', 'ada@example.com');
    await keys.bindJourney('journey-ada', ada);
    const { ref } = await store.put(Buffer.concat([Buffer.from('%PDF '), marker]), META, { patient: ada });
    const away = [
      new StoreUnavailableError('patient-keys'),
      Object.assign(new Error('terminating connection due to administrator command'), { code: '57P01' }),
    ];
    for (const err of away) {
      const opening = h.make({
        patientKeys: { sealBytes: (...a) => keys.sealBytes(...a), openBytes: () => Promise.reject(err) },
      });
      const thrown = await opening.get(ref).catch((e: unknown) => e);
      expect(thrown).toBe(err);
      expect(storeUnavailableProblem(thrown)?.status).toBe(503);
    }
    // Anything else is still the record's fault, named by its ref, and no store's.
    const altered = h.make({
      patientKeys: { sealBytes: (...a) => keys.sealBytes(...a), openBytes: () => Promise.reject(new Error('altered')) },
    });
    const thrown = await altered.get(ref).catch((e: unknown) => e);
    expect(thrown).toEqual(new Error(`attachment ${ref} cannot be opened: altered`));
    expect(storeUnavailableProblem(thrown)).toBeUndefined();
  });

  it("reads an erased patient's document as gone, and still releases its clinic's usage when it is deleted", async () => {
    const store = h.make({ patientKeys: keys });
    const ada = keys.patientRef('clinic-a', 'ada@example.com');
    const bob = keys.patientRef('clinic-a', 'bob@example.com');
    await keys.bindJourney('journey-ada', ada);
    await keys.bindJourney('journey-bob', bob);
    // Uploaded to a running journey: sealed for the patient from the first write.
    const hers = await store.put(Buffer.concat([marker, Buffer.from(' ada')]), META, { patient: ada });
    const his = await store.put(Buffer.concat([marker, Buffer.from(' bob')]), META, { patient: bob });
    expect(clear(await h.stored(hers.ref))).toEqual([]);
    expect((await store.get(hers.ref))?.patient).toBe(ada);
    expect(await store.usage('clinic-a')).toEqual({ count: 2, bytes: hers.size + his.size });

    await keys.erase(ada);
    expect(await store.get(hers.ref)).toBeUndefined();
    expect((await store.get(his.ref))?.bytes.toString()).toContain(' bob');
    await expect(store.sealForPatient(his.ref, bob)).resolves.toBeUndefined();
    // Nothing is sealed for her again.
    await expect(store.put(marker, META, { patient: ada })).rejects.toThrow(/no data key/);
    await store.delete(hers.ref);
    expect(await h.records()).toEqual([his.ref]);
    expect(await store.usage('clinic-a')).toEqual({ count: 1, bytes: his.size });
  });
});
