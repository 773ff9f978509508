// One contract, two key stores: every test below runs against the file store and the PostgreSQL tables (a real server,
// the engine's role allowed SELECT, INSERT, UPDATE and DELETE only). The first writer's key and settings win, a
// destroyed key is deleted (not flagged) beside its tombstone, a rewrap moves only what it read; and through them, an
// erasure outlives a restore of the store from a backup taken before it (the erasure log re-applied at start, on the
// record). PostgreSQL alone: processes that share the store, and the role's privileges checked at start.
import { randomBytes } from 'node:crypto';
import { copyFileSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { CreateBucketCommand, DeleteObjectCommand, ListObjectVersionsCommand, type S3Client } from '@aws-sdk/client-s3';
import { Client } from 'pg';
import type { AuditEvent } from '../../src/audit/types';
import type { EncryptionKey } from '../../src/encryption-keys';
import {
  FileErasureLog,
  FilePatientKeyStore,
  PATIENT_KEY_TABLES_SQL,
  PatientKeys,
  PatientKeyStoreError,
  PostgresPatientKeyStore,
  S3ErasureLog,
  type ErasureLog,
  type PatientKeyStore,
  type PatientRef,
  type WrappedKey,
} from '../../src/patient-keys';
import { PatientErasures } from '../../src/api/patient-erasure';
import { startTestObjectStore, type TestObjectStore } from '../support/object-store';
import { startTestPostgres, type TestPostgres } from '../support/postgres';

/** Ports of this suite: 26040-26049. */
const PG_PORT = 26040;
const TABLES = [
  'patient_keys',
  'patient_key_erasures',
  'patient_key_settings',
  'patient_journeys',
  'patient_erasure_requests',
];

interface Harness {
  kind: 'files' | 'postgres';
  /** A store on the one shared place (a new file store each time, after the last one closed). */
  store(): PatientKeyStore;
  /** A copy of what the store holds now, and how to put it back: a backup and its restore. */
  backup(): Promise<() => Promise<void>>;
  reset(): Promise<void>;
  teardown(): Promise<void>;
}

function fileHarness(): Promise<Harness> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'patient-key-store-'));
  const file = path.join(dir, 'patient-keys.json');
  return Promise.resolve({
    kind: 'files',
    store: () => new FilePatientKeyStore(file),
    // The key file with its journal of new keys (keys made since its last rewrite are there alone).
    backup: () => {
      const copy = `${file}.backup-${randomBytes(4).toString('hex')}`;
      copyFileSync(file, copy);
      const journal = existsSync(`${file}.keys`);
      if (journal) copyFileSync(`${file}.keys`, `${copy}.keys`);
      return Promise.resolve(() => {
        copyFileSync(copy, file);
        if (journal) copyFileSync(`${copy}.keys`, `${file}.keys`);
        else rmSync(`${file}.keys`, { force: true });
        return Promise.resolve();
      });
    },
    reset: () => {
      rmSync(file, { force: true });
      rmSync(`${file}.keys`, { force: true });
      rmSync(`${file}.journeys`, { force: true });
      return Promise.resolve();
    },
    teardown: () => {
      rmSync(dir, { recursive: true, force: true });
      return Promise.resolve();
    },
  });
}

let pg: TestPostgres | undefined;
let owner: Client | undefined;
const rolePassword = randomBytes(18).toString('base64url');

/** The engine's role: the four privileges on tables its owner made. */
async function engineUrl(role: string, privileges: string): Promise<string> {
  await owner!.query(PATIENT_KEY_TABLES_SQL);
  await owner!.query(`DROP ROLE IF EXISTS ${role}`).catch(() => undefined);
  await owner!.query(`CREATE ROLE ${role} LOGIN PASSWORD '${rolePassword}'`);
  for (const t of TABLES) await owner!.query(`GRANT ${privileges} ON public.${t} TO ${role}`);
  const url = new URL(pg!.url);
  url.username = role;
  url.password = rolePassword;
  return url.toString();
}

async function postgresHarness(): Promise<Harness> {
  pg = await startTestPostgres({ port: PG_PORT, database: 'patient_keys' });
  owner = new Client({ connectionString: pg.url });
  await owner.connect();
  const url = await engineUrl('journey_patient_keys', 'SELECT, INSERT, UPDATE, DELETE');
  const stores: PatientKeyStore[] = [];
  return {
    kind: 'postgres',
    store: () => {
      const s = new PostgresPatientKeyStore({ connectionString: url });
      stores.push(s);
      return s;
    },
    backup: async () => {
      const rows = new Map<string, unknown[]>();
      for (const t of TABLES) rows.set(t, (await owner!.query(`SELECT * FROM public.${t}`)).rows);
      return async () => {
        await owner!.query('BEGIN');
        for (const t of TABLES) {
          await owner!.query(`DELETE FROM public.${t}`);
          for (const row of rows.get(t) as Record<string, unknown>[]) {
            const cols = Object.keys(row);
            await owner!.query(
              `INSERT INTO public.${t} (${cols.join(', ')}) VALUES (${cols.map((_, i) => `$${i + 1}`).join(', ')})`,
              cols.map((c) => row[c]),
            );
          }
        }
        await owner!.query('COMMIT');
      };
    },
    reset: async () => {
      for (const t of TABLES) await owner!.query(`DELETE FROM public.${t}`);
    },
    teardown: async () => {
      for (const s of stores.splice(0)) await s.close().catch(() => undefined);
      await owner?.end();
      await pg?.cleanup();
    },
  };
}

const stores: [string, () => Promise<Harness>][] = [
  ['files', fileHarness],
  ['postgres', postgresHarness],
];

/** Waits until `check` answers true, looking every 50 ms; fails after `withinMs`. */
async function eventuallyTrue(check: () => Promise<boolean>, withinMs: number): Promise<void> {
  const until = Date.now() + withinMs;
  while (!(await check())) {
    if (Date.now() > until) throw new Error(`not so within ${withinMs} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

const ref = (n: number): PatientRef => `pt_${String(n).padStart(22, '0')}`;
const dek = (n: number) => `dk_${String(n).padStart(22, '0')}`;
const wrappedKey = (n: number, wrapKeyId = 'k1'): WrappedKey => ({
  patientRef: ref(n),
  dekId: dek(n),
  wrapKeyId,
  wrapped: randomBytes(60),
  createdAt: new Date(Date.UTC(2026, 10, 26, 10, 0, n)).toISOString(),
});

describe.each(stores)('patient key store (%s)', (_kind, makeHarness) => {
  let h: Harness;
  const open: PatientKeyStore[] = [];
  let dir: string;

  beforeAll(async () => {
    h = await makeHarness();
  }, 60_000);
  afterAll(async () => h?.teardown());
  beforeEach(async () => {
    await h.reset();
    dir = mkdtempSync(path.join(os.tmpdir(), 'patient-key-log-'));
  });
  afterEach(async () => {
    for (const s of open.splice(0)) await s.close().catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
  });

  const store = async () => {
    const s = h.store();
    await s.init();
    open.push(s);
    return s;
  };
  const closeAll = async () => {
    for (const s of open.splice(0)) await s.close();
  };

  it("keeps the first writer's key and settings", async () => {
    const s = await store();
    const first = wrappedKey(1);
    expect(await s.insert(first)).toEqual(first);
    const second = { ...wrappedKey(2), patientRef: ref(1) };
    expect(await s.insert(second)).toEqual(first);
    expect(await s.get(ref(1))).toEqual(first);
    expect(await s.get(ref(9))).toBeUndefined();
    expect(await s.settleSetting('patient-ref-key-id', 'k1')).toBe('k1');
    expect(await s.settleSetting('patient-ref-key-id', 'k2')).toBe('k1');
    await closeAll();
    const again = await store();
    expect(await again.get(ref(1))).toEqual(first);
    expect(await again.setting('patient-ref-key-id')).toBe('k1');
  });

  it('keeps one key per patient when many new patients start at once (the key file: new keys share a sync of its journal)', async () => {
    const s = await store();
    const writesBefore = s instanceof FilePatientKeyStore ? s.keyJournalSyncs : 0;
    // Twenty patients, each asked for twice at once with two different keys: one of the two holds for both.
    const asked = Array.from({ length: 20 }, (_x, i) => [
      wrappedKey(100 + i),
      { ...wrappedKey(200 + i), patientRef: ref(100 + i) },
    ]);
    const got = await Promise.all(asked.flat().map((k) => s.insert(k)));
    for (let i = 0; i < 20; i++) {
      const [a, b] = [got[2 * i]!, got[2 * i + 1]!];
      expect(a).toEqual(b);
      expect([dek(100 + i), dek(200 + i)]).toContain(a.dekId);
    }
    // The journal is synced once for the first key and once for all that came while it was (not forty times).
    if (s instanceof FilePatientKeyStore) {
      expect(s.keyJournalSyncs - writesBefore).toBeGreaterThan(0);
      expect(s.keyJournalSyncs - writesBefore).toBeLessThanOrEqual(3);
    }
    await closeAll();
    const again = await store();
    for (let i = 0; i < 20; i++) expect(await again.get(ref(100 + i))).toEqual(got[2 * i]);
  });

  it("binds a journey to its patient's key once: the first binding holds, and a patient's journeys are listed", async () => {
    const s = await store();
    for (const n of [1, 2]) await s.insert(wrappedKey(n));
    const at = (n: number) => new Date(Date.UTC(2026, 10, 27, 9, 0, n)).toISOString();
    const bind = (w: string, n: number, t: number) =>
      s.bind({ workflowId: w, patientRef: ref(n), dekId: dek(n), boundAt: at(t) });
    const bound = (w: string, n: number, t: number) => ({
      state: 'bound',
      binding: { workflowId: w, patientRef: ref(n), dekId: dek(n), boundAt: at(t) },
    });
    expect(await bind('journey-a', 1, 1)).toEqual(bound('journey-a', 1, 1));
    expect(await bind('journey-a', 2, 2)).toEqual(bound('journey-a', 1, 1));
    expect(await bind('journey-b', 2, 3)).toEqual(bound('journey-b', 2, 3));
    expect(await bind('journey-c', 1, 4)).toEqual(bound('journey-c', 1, 4));
    // A key that is not the patient's (destroyed since it was read, or never theirs) binds nothing.
    expect(await s.bind({ workflowId: 'journey-d', patientRef: ref(1), dekId: dek(9), boundAt: at(5) })).toEqual({
      state: 'stale-key',
    });
    expect(await s.bindingOf('journey-a')).toEqual(bound('journey-a', 1, 1).binding);
    expect(await s.bindingOf('journey-d')).toBeUndefined();
    expect(await s.boundAmong(['journey-a', 'journey-d', 'journey-b'])).toEqual(new Set(['journey-a', 'journey-b']));
    await closeAll();
    const again = await store();
    expect(await again.bindingOf('journey-b')).toEqual(bound('journey-b', 2, 3).binding);
    expect(await again.journeysOf(ref(1))).toEqual([
      bound('journey-a', 1, 1).binding,
      bound('journey-c', 1, 4).binding,
    ]);
    expect(await again.journeysOf(ref(7))).toEqual([]);
  });

  it('binds many journeys started at once, each once (the journal: binds that come together share its sync)', async () => {
    const s = await store();
    for (const n of [1, 2]) await s.insert(wrappedKey(n));
    const syncsBefore = s instanceof FilePatientKeyStore ? s.journalSyncs : 0;
    const at = new Date(Date.UTC(2026, 10, 27, 9, 0, 0)).toISOString();
    // Forty journeys of two patients, each journey asked for twice at once (a start retried): one binding each.
    const asks = Array.from({ length: 40 }, (_x, i) => ({
      workflowId: `journey-m${i}`,
      patientRef: ref(1 + (i % 2)),
      dekId: dek(1 + (i % 2)),
      boundAt: at,
    }));
    const got = await Promise.all([...asks, ...asks].map((b) => s.bind(b)));
    got.forEach((r, i) => expect(r).toEqual({ state: 'bound', binding: asks[i % 40] }));
    if (s instanceof FilePatientKeyStore) {
      expect(s.journalSyncs - syncsBefore).toBeGreaterThan(0);
      expect(s.journalSyncs - syncsBefore).toBeLessThanOrEqual(3);
    }
    await closeAll();
    const again = await store();
    expect((await again.journeysOf(ref(1))).map((b) => b.workflowId).sort()).toEqual(
      asks
        .filter((_b, i) => i % 2 === 0)
        .map((b) => b.workflowId)
        .sort(),
    );
    expect(await again.boundAmong(asks.map((b) => b.workflowId))).toEqual(new Set(asks.map((b) => b.workflowId)));
  });

  it('binds nothing to a patient while an erasure of theirs is pending: bindings and requests never overlap', async () => {
    const s = await store();
    await s.insert(wrappedKey(1));
    await s.insert(wrappedKey(2));
    const request = (n: number, id: string) => ({
      erasureId: id,
      clinicId: 'clinic-a',
      patientRef: ref(n),
      requestKey: `rk-${id}`,
      requestedBy: 'ops',
      requestedRoles: ['clinic'],
      requestedAt: new Date().toISOString(),
      status: 'pending' as const,
      journeys: [],
    });
    // Binds and the request sent together: each bind is either in the list read after the request, or refused.
    const binds = Array.from({ length: 40 }, (_, i) =>
      s.bind({ workflowId: `journey-r${i}`, patientRef: ref(1), dekId: dek(1), boundAt: new Date().toISOString() }),
    );
    const kept = s.addErasureRequest(request(1, 'er_fence'));
    const results = await Promise.all(binds);
    await kept;
    const listed = new Set((await s.journeysOf(ref(1))).map((b) => b.workflowId));
    results.forEach((r, i) => {
      if (r.state === 'bound') expect(listed.has(`journey-r${i}`)).toBe(true);
      else expect(r).toEqual({ state: 'fenced', erasureId: 'er_fence' });
    });
    // Once it is kept, nothing more: another patient binds as before; a bound journey still answers its binding.
    const late = await s.bind({
      workflowId: 'journey-late',
      patientRef: ref(1),
      dekId: dek(1),
      boundAt: new Date().toISOString(),
    });
    expect(late).toEqual({ state: 'fenced', erasureId: 'er_fence' });
    expect(
      (await s.bind({ workflowId: 'journey-o', patientRef: ref(2), dekId: dek(2), boundAt: new Date().toISOString() }))
        .state,
    ).toBe('bound');
    await s.completeErasureRequest('er_fence', [], new Date().toISOString());
    expect(
      (
        await s.bind({
          workflowId: 'journey-late',
          patientRef: ref(1),
          dekId: dek(1),
          boundAt: new Date().toISOString(),
        })
      ).state,
    ).toBe('bound');
  });

  it('leases a pending erasure request to one holder at a time, until it lapses, is given up or the request is done', async () => {
    const s = await store();
    await s.addErasureRequest({
      erasureId: 'er_lease',
      clinicId: 'clinic-a',
      patientRef: ref(1),
      requestKey: 'rk-lease',
      requestedBy: 'ops',
      requestedRoles: ['clinic'],
      requestedAt: new Date().toISOString(),
      status: 'pending',
      journeys: [],
    });
    // Ten runners ask at once: one holds it.
    const asks = await Promise.all(
      Array.from({ length: 10 }, (_, i) => s.claimErasureRequest('er_lease', `runner-${i}`, 60_000)),
    );
    expect(asks.filter(Boolean)).toHaveLength(1);
    const holder = `runner-${asks.indexOf(true)}`;
    const other = holder === 'runner-0' ? 'runner-1' : 'runner-0';
    // Its holder renews it; another is refused while it runs, and releasing someone else's lease does nothing.
    expect(await s.claimErasureRequest('er_lease', holder, 60_000)).toBe(true);
    await s.releaseErasureRequest('er_lease', other);
    expect(await s.claimErasureRequest('er_lease', other, 60_000)).toBe(false);
    // Given up: the next runner takes it.
    await s.releaseErasureRequest('er_lease', holder);
    expect(await s.claimErasureRequest('er_lease', other, 200)).toBe(true);
    expect(await s.claimErasureRequest('er_lease', holder, 60_000)).toBe(false);
    // Not renewed: it lapses, and another takes it.
    await new Promise((r) => setTimeout(r, 400));
    expect(await s.claimErasureRequest('er_lease', holder, 60_000)).toBe(true);
    // Done, or unknown: no one holds it.
    await s.completeErasureRequest('er_lease', [], new Date().toISOString());
    expect(await s.claimErasureRequest('er_lease', holder, 60_000)).toBe(false);
    expect(await s.claimErasureRequest('er_nowhere', holder, 60_000)).toBe(false);
  });

  it("keeps a start's lease on its binding until it is settled, and reads an older binding with the key of its time", async () => {
    const s = await store();
    await s.insert(wrappedKey(1));
    const until = new Date(Date.now() + 60_000).toISOString();
    await s.bind({
      workflowId: 'journey-s',
      patientRef: ref(1),
      dekId: dek(1),
      boundAt: new Date().toISOString(),
      startingUntil: until,
    });
    expect((await s.bindingOf('journey-s'))?.startingUntil).toBe(until);
    await s.settleStart('journey-s');
    expect((await s.bindingOf('journey-s'))?.startingUntil).toBeUndefined();
    // Destroyed and the patient keyed again: a binding made before the destruction keeps the destroyed key.
    await s.destroy({
      patientRef: ref(1),
      dekId: dek(1),
      erasureId: 'er_x',
      erasedAt: new Date(Date.now() + 1_000).toISOString(),
    });
    await s.insert({ ...wrappedKey(5), patientRef: ref(1) });
    expect((await s.bindingOf('journey-s'))?.dekId).toBe(dek(1));
    expect(await s.erasedAmong([dek(1), dek(5), dek(8)])).toEqual([
      expect.objectContaining({ dekId: dek(1), patientRef: ref(1), erasureId: 'er_x' }),
    ]);
  });

  it('deletes a destroyed key and keeps its tombstone, again without harm', async () => {
    const s = await store();
    await s.insert(wrappedKey(1));
    await s.insert(wrappedKey(2));
    const erasure = { patientRef: ref(1), dekId: dek(1), erasureId: 'er_1', erasedAt: '2026-11-26T11:00:00.000Z' };
    expect(await s.destroy(erasure)).toBe(true);
    expect(await s.destroy(erasure)).toBe(false);
    expect(await s.get(ref(1))).toBeUndefined();
    expect(await s.erased(dek(1))).toEqual(erasure);
    expect(await s.erased(dek(2))).toBeUndefined();
    expect(await s.counts()).toEqual({ keys: 1, erased: 1 });
    // A tombstone alone (no key held): put in, nothing deleted.
    const other = { ...erasure, patientRef: ref(2), dekId: dek(7) };
    expect(await s.destroy(other)).toBe(false);
    expect(await s.get(ref(2))).toBeDefined();
  });

  it('rewraps only a key still wrapped as it was read, page by page in key id order', async () => {
    const s = await store();
    for (let i = 1; i <= 5; i++) await s.insert(wrappedKey(i, i === 3 ? 'k2' : 'k1'));
    const first = await s.wrappedByOther('k2', 2);
    expect(first.map((k) => k.dekId)).toEqual([dek(1), dek(2)]);
    const rest = await s.wrappedByOther('k2', 10, first.at(-1)!.dekId);
    expect(rest.map((k) => k.dekId)).toEqual([dek(4), dek(5)]);
    const next = { wrapKeyId: 'k2', wrapped: randomBytes(60) };
    expect(await s.rewrap(dek(1), 'k1', next)).toBe(true);
    expect(await s.rewrap(dek(1), 'k1', next)).toBe(false);
    expect(await s.get(ref(1))).toMatchObject(next);
  });

  describe('under per-patient keys', () => {
    const ring: EncryptionKey[] = [{ id: '2026-11', key: randomBytes(32) }];
    let events: AuditEvent[];
    let keysOpen: PatientKeys[];
    beforeEach(() => {
      events = [];
      keysOpen = [];
    });
    afterEach(async () => {
      for (const k of keysOpen.splice(0)) await k.close().catch(() => undefined);
    });
    const keys = async (o: { erasureLog?: ErasureLog; ttlMs?: number; checkMs?: number } = {}) => {
      const k = new PatientKeys({
        ring,
        store: h.store(),
        erasureLog: o.erasureLog ?? new FileErasureLog(path.join(dir, 'erasures.jsonl')),
        audit: (e) => {
          events.push(e);
          return Promise.resolve();
        },
        cache: { ttlMs: o.ttlMs ?? 30_000, ...(o.checkMs ? { checkMs: o.checkMs } : {}) },
      });
      keysOpen.push(k);
      return { keys: k, reapplied: await k.init() };
    };
    const closeKeys = async () => {
      for (const k of keysOpen.splice(0)) await k.close();
    };

    it('keeps an erasure through a restore of the store from a backup taken before it', async () => {
      const { keys: k } = await keys();
      const ann = k.patientRef('clinic-a', 'ann@example.com');
      const bob = k.patientRef('clinic-a', 'bob@example.com');
      const annValue = await k.sealForPatient(ann, 'journey-input', { lastName: 'Lee' });
      const bobValue = await k.sealForPatient(bob, 'journey-input', { lastName: 'Ray' });
      const restore = await h.backup();
      await k.erase(ann, { erasureId: 'er_restore' });
      expect((await k.openSealed(annValue, 'journey-input')).state).toBe('erased');
      await closeKeys();

      await restore();
      const { keys: after, reapplied } = await keys();
      expect(reapplied.reDestroyed).toEqual([
        { patientRef: ann, dekId: annValue.k, erasureId: 'er_restore', erasedAt: expect.any(String) },
      ]);
      expect(events.map((e) => e.action)).toEqual([
        'patient-key.create',
        'patient-key.create',
        'patient-key.erase',
        'patient-key.re-destroy',
      ]);
      expect(JSON.stringify(events)).not.toMatch(/example\.com|Lee|Ray/);
      expect(await after.openSealed(annValue, 'journey-input')).toMatchObject({
        state: 'erased',
        erasureId: 'er_restore',
      });
      expect(await after.openSealed(bobValue, 'journey-input')).toEqual({ state: 'open', value: { lastName: 'Ray' } });
    });

    it('puts back a tombstone a restore lost when the key had been gone already', async () => {
      const { keys: k } = await keys();
      const restore = await h.backup().catch(() => undefined);
      const ann = k.patientRef('clinic-a', 'ann@example.com');
      const value = await k.sealForPatient(ann, 'journey-input', 1);
      await k.erase(ann, { erasureId: 'er_gone' });
      await closeKeys();
      // The backup was taken before the key existed: neither the key nor its tombstone is in it.
      await restore?.();
      const { keys: after, reapplied } = await keys();
      expect(reapplied).toEqual({ reDestroyed: [], tombstonesRestored: 1 });
      expect(await after.openSealed(value, 'journey-input')).toMatchObject({ state: 'erased', erasureId: 'er_gone' });
    });

    if (_kind === 'postgres') {
      it("shares keys between processes; an erasure in one reaches another's cache within its check's time", async () => {
        // Cached for 30 s, checked against the tombstones every 200 ms: the check, not the cache's time, bounds it.
        const { keys: a } = await keys({ checkMs: 200 });
        const { keys: b } = await keys({ checkMs: 200 });
        const ann = a.patientRef('clinic-a', 'ann@example.com');
        expect(b.patientRef('clinic-a', 'ann@example.com')).toBe(ann);
        const [x, y] = await Promise.all([
          a.sealForPatient(ann, 'journey-input', 'from a'),
          b.sealForPatient(ann, 'journey-input', 'from b'),
        ]);
        // One key for the patient whoever made it first; the other's attempt is on the record as superseded.
        expect(x.k).toBe(y.k);
        const creates = events.filter((e) => e.action === 'patient-key.create');
        const made = creates.filter((e) => e.outcome === 'ok').length;
        expect(made - creates.filter((e) => e.outcome === 'superseded').length).toBe(1);
        expect(await b.openSealed(x, 'journey-input')).toEqual({ state: 'open', value: 'from a' });
        expect((await b.sealForPatient(ann, 'journey-input', 'cached', { create: false })).k).toBe(x.k);
        await a.erase(ann);
        await new Promise((r) => setTimeout(r, a.destroyedEverywhereAfterMs));
        expect((await b.openSealed(x, 'journey-input')).state).toBe('erased');
        // Nothing is sealed under it again there, and a journey bound to it is refused rather than given a new key.
        await expect(b.sealForPatient(ann, 'journey-input', 'late', { create: false })).rejects.toThrow(/no data key/);
        await expect(b.sealBytes(ann, 'temporal-payload', Buffer.from('late'), x.k)).rejects.toThrow(/no data key/);
      });

      it("carries out each erasure once across three replicas' sweeps, and takes over one whose holder stopped", async () => {
        // Three API replicas, each its own pool on the shared tables, sweeping every 100 ms. Temporal, the documents
        // and the dead letters stand in: each request's look for its clinic's journeys is counted (its first step).
        const looked = new Map<string, number>();
        const temporal = {
          workflow: {
            list: ({ query }: { query: string }) => {
              const clinic = /ClinicId = ['"]([^'"]+)['"]/.exec(query)![1]!;
              looked.set(clinic, (looked.get(clinic) ?? 0) + 1);
              return (async function* () {})();
            },
            getHandle: () => ({ describe: () => Promise.reject(new Error('absent')) }),
          },
        };
        const runners: PatientErasures[] = [];
        const warnings: string[] = [];
        const silent = {
          info: () => undefined,
          warn: (meta: object, msg: string) => void warnings.push(`${msg} ${JSON.stringify(meta)}`),
        };
        for (let i = 0; i < 3; i++) {
          const { keys: k } = await keys({ checkMs: 100 });
          runners.push(
            new PatientErasures({
              keys: k,
              temporal: temporal as never,
              attachments: { takenBy: () => Promise.resolve([]) } as never,
              deadLetters: { list: () => Promise.resolve({ letters: [] }) } as never,
              log: silent,
              pollMs: 100,
              leaseMs: 1_500,
            }),
          );
        }
        try {
          const { keys: asker } = await keys();
          const actor = { subject: 'ops', roles: ['clinic'] };
          const ids: string[] = [];
          for (let n = 0; n < 8; n++) {
            const patientRef = asker.patientRef(`clinic-${n}`, `p${n}@example.com`);
            await asker.sealForPatient(patientRef, 'journey-input', 'x');
            ids.push(
              (await asker.requestErasure({ clinicId: `clinic-${n}`, patientRef, idempotencyKey: `k${n}`, actor }))
                .request.erasureId,
            );
          }
          // One more, taken by a replica that then stopped: its lease runs out before anyone carries it out.
          const stoppedRef = asker.patientRef('clinic-stopped', 'gone@example.com');
          const stopped = (
            await asker.requestErasure({
              clinicId: 'clinic-stopped',
              patientRef: stoppedRef,
              idempotencyKey: 'ks',
              actor,
            })
          ).request.erasureId;
          expect(await h.store().claimErasureRequest(stopped, 'a-stopped-replica', 1_000)).toBe(true);
          const leased = Date.now();
          for (const r of runners) r.start();
          await eventuallyTrue(async () => (await asker.pendingErasureRequests()).length === 0, 20_000).catch(
            (e: unknown) => {
              throw new Error(`${String(e)}: ${warnings.slice(0, 5).join('; ')}`);
            },
          );
          const done = events.filter((e) => e.action === 'patient-erasure.done');
          expect(done.map((e) => e.details?.erasureId).sort()).toEqual([...ids, stopped].sort());
          for (let n = 0; n < 8; n++) expect(looked.get(`clinic-${n}`)).toBe(1);
          expect(looked.get('clinic-stopped')).toBe(1);
          const taken = Date.parse((await asker.erasureRequest(stopped))!.completedAt!);
          expect(taken - leased).toBeGreaterThanOrEqual(900);
        } finally {
          for (const r of runners) await r.close();
        }
      }, 60_000);
    }
  });
});

describe('the patient key tables and the engine role', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await postgresHarness();
  }, 60_000);
  afterAll(async () => h?.teardown());

  it('refuses at start a role without one of the four privileges, naming it', async () => {
    const url = await engineUrl('journey_keys_no_delete', 'SELECT, INSERT, UPDATE');
    const s = new PostgresPatientKeyStore({ connectionString: url });
    try {
      const err = await s.init().catch((e: unknown) => e);
      expect(err).toBeInstanceOf(PatientKeyStoreError);
      expect((err as Error).message).toContain('may not DELETE on public.patient_keys');
      expect((err as Error).message).not.toContain(rolePassword);
    } finally {
      await s.close();
    }
  });

  it('upgrades tables made before bindings named their key, and reads their bindings with the key of their time', async () => {
    await owner!.query(`DROP TABLE ${TABLES.map((t) => `public.${t}`).join(', ')}`);
    // The tables as they were: bindings without a data key or a start's lease, requests without a holder.
    await owner!.query(
      PATIENT_KEY_TABLES_SQL.replace(/,\s*dek_id text,.*?starting_until timestamptz/s, '')
        .replace(/\s*-- Which replica carries.*?claimed_until timestamptz,/s, '')
        .replace(/CREATE INDEX IF NOT EXISTS patient_erasure_requests_patient_pending[^;]*;/s, ''),
    );
    const columns = async () =>
      (
        await owner!.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM information_schema.columns
             WHERE (table_name = 'patient_journeys' AND column_name IN ('dek_id', 'starting_until'))
                OR (table_name = 'patient_erasure_requests' AND column_name IN ('claimed_by', 'claimed_until'))`,
        )
      ).rows[0]!.n;
    expect(await columns()).toBe(0);
    await owner!.query(
      `INSERT INTO public.patient_journeys (workflow_id, patient_ref, bound_at) VALUES
         ('journey-old', $1, '2026-11-20T10:00:00Z'), ('journey-older', $2, '2026-11-20T10:00:00Z')`,
      [ref(1), ref(2)],
    );
    // Patient 1 erased after her binding and keyed again; patient 2 still on his first key.
    await owner!.query(`INSERT INTO public.patient_key_erasures VALUES ($1, $2, 'er_old', '2026-11-21T10:00:00Z')`, [
      dek(1),
      ref(1),
    ]);
    for (const [p, k] of [
      [1, 5],
      [2, 2],
    ]) {
      await owner!.query(`INSERT INTO public.patient_keys VALUES ($1, $2, 'k1', $3, '2026-11-22T10:00:00Z')`, [
        ref(p!),
        dek(k!),
        randomBytes(60),
      ]);
    }
    // The engine's role may not alter them: refused, naming what to run.
    const engine = new PostgresPatientKeyStore({
      connectionString: await engineUrl('journey_keys_old', 'SELECT, INSERT, UPDATE, DELETE'),
    });
    const err = await engine.init().catch((e: unknown) => e);
    await engine.close();
    expect((err as Error).message).toMatch(/PATIENT_KEY_TABLES_UPGRADE_SQL/);
    // Their owner's start upgrades them.
    const s = new PostgresPatientKeyStore({ connectionString: pg!.url });
    try {
      await s.init();
      expect(await columns()).toBe(4);
      expect((await s.bindingOf('journey-old'))?.dekId).toBe(dek(1));
      expect((await s.bindingOf('journey-older'))?.dekId).toBe(dek(2));
    } finally {
      await s.close();
    }
  });

  it('creates its tables at start when they are missing', async () => {
    await owner!.query(`DROP TABLE ${TABLES.map((t) => `public.${t}`).join(', ')}`);
    const s = new PostgresPatientKeyStore({ connectionString: pg!.url });
    try {
      await s.init();
      await s.init();
      expect(await s.counts()).toEqual({ keys: 0, erased: 0 });
    } finally {
      await s.close();
    }
  });
});

describe('the erasure log in a bucket with Object Lock', () => {
  let objects: TestObjectStore;
  let s3: S3Client;
  const BUCKET = 'audit-checkpoints';
  const erasure = { patientRef: ref(1), dekId: dek(1), erasureId: 'er_s3', erasedAt: '2026-11-26T12:00:00.000Z' };

  beforeAll(async () => {
    objects = await startTestObjectStore('patient-erasures');
    s3 = objects.s3;
    await s3.send(new CreateBucketCommand({ Bucket: BUCKET, ObjectLockEnabledForBucket: true }));
    await s3.send(new CreateBucketCommand({ Bucket: 'no-lock' }));
  }, 60_000);
  afterAll(async () => objects?.stop());

  it('refuses a bucket without Object Lock, naming it', async () => {
    const log = new S3ErasureLog({ client: s3, bucket: 'no-lock', retentionDays: 1 });
    await expect(log.init()).rejects.toThrow("the erasure log's bucket no-lock has no Object Lock");
  });

  it('keeps each erasure locked: it cannot be deleted, and a delete marker hides none', async () => {
    const log = new S3ErasureLog({ client: s3, bucket: BUCKET, prefix: 'patient-erasures/', retentionDays: 1 });
    await log.init();
    await log.append(erasure);
    await log.append({ ...erasure, dekId: dek(2), patientRef: ref(2) });
    const versions = await s3.send(new ListObjectVersionsCommand({ Bucket: BUCKET, Prefix: 'patient-erasures/' }));
    const first = versions.Versions!.find((v) => v.Key === `patient-erasures/${dek(1)}.json`)!;
    await expect(
      s3.send(new DeleteObjectCommand({ Bucket: BUCKET, Key: first.Key!, VersionId: first.VersionId! })),
    ).rejects.toThrow();
    await s3.send(new DeleteObjectCommand({ Bucket: BUCKET, Key: first.Key! }));
    expect((await log.list()).map((e) => e.dekId).sort()).toEqual([dek(1), dek(2)]);
    expect(await log.list()).toContainEqual(erasure);
  });
});
