// The patient key file's journal of new keys (`<file>.keys`): a new patient costs one appended line, not a rewrite of
// every key; the key file takes them all again at its next rewrite, at the writer's start and at its stop. A crash
// loses no acknowledged key, a line it cut short is dropped, a reader beside the writer finds every key across the
// writer's rewrites, and a destroyed key never comes back from a journal the key file already held.
import { randomBytes } from 'node:crypto';
import {
  appendFileSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { FilePatientKeyStore, type PatientRef, type WrappedKey } from '../../src/patient-keys';

const ref = (n: number): PatientRef => `pt_${String(n).padStart(22, '0')}`;
const dek = (n: number) => `dk_${String(n).padStart(22, '0')}`;
const key = (n: number): WrappedKey => ({
  patientRef: ref(n),
  dekId: dek(n),
  wrapKeyId: 'k1',
  wrapped: randomBytes(60),
  createdAt: new Date(Date.UTC(2026, 10, 29, 10, 0, n % 60)).toISOString(),
});

let dir: string;
const open: FilePatientKeyStore[] = [];
const store = async (file: string, readOnly = false) => {
  const s = new FilePatientKeyStore(file, { readOnly });
  await s.init();
  open.push(s);
  return s;
};
const lines = (file: string) =>
  existsSync(file)
    ? readFileSync(file, 'utf8')
        .split('\n')
        .filter((l) => l.trim()).length
    : 0;
const keysInFile = (file: string) =>
  Object.keys((JSON.parse(readFileSync(file, 'utf8')) as { keys: Record<string, unknown> }).keys).length;

beforeEach(() => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'patient-key-file-'));
});
afterEach(async () => {
  for (const s of open.splice(0).reverse()) await s.close().catch(() => undefined);
  rmSync(dir, { recursive: true, force: true });
});

describe('the patient key file: new keys in a journal', () => {
  it('appends new keys without rewriting the key file, which holds them all again after its next rewrite', async () => {
    const file = path.join(dir, 'patient-keys.json');
    const s = await store(file);
    const writesAtStart = s.writes;
    const made = await Promise.all(Array.from({ length: 30 }, (_, i) => s.insert(key(i))));
    expect(made.map((k) => k.dekId)).toEqual(Array.from({ length: 30 }, (_, i) => dek(i)));
    expect(s.writes).toBe(writesAtStart);
    expect(s.keyJournalSyncs).toBeGreaterThan(0);
    expect(s.keyJournalSyncs).toBeLessThanOrEqual(3);
    expect(lines(`${file}.keys`)).toBe(30);
    // A change that rewrites the file (a setting) takes the journal's keys into it; the journal starts empty.
    await s.settleSetting('patient-ref-key-id', 'k1');
    expect(keysInFile(file)).toBe(30);
    expect(statSync(`${file}.keys`).size).toBe(0);
    await s.insert(key(30));
    expect(lines(`${file}.keys`)).toBe(1);
    // A stop leaves the key file whole and the journal empty (what an earlier release reads).
    await s.close();
    expect(keysInFile(file)).toBe(31);
    expect(statSync(`${file}.keys`).size).toBe(0);
  });

  it('keeps every acknowledged key through a crash, and drops the line the crash cut short', async () => {
    const file = path.join(dir, 'patient-keys.json');
    const s = await store(file);
    await s.settleSetting('patient-ref-key-id', 'k1');
    await Promise.all(Array.from({ length: 5 }, (_, i) => s.insert(key(i))));
    // The process dies here: its files as they are, a half-written line at the journal's end.
    const crashed = path.join(dir, 'crashed');
    const copy = path.join(crashed, 'patient-keys.json');
    mkdirSync(crashed);
    copyFileSync(file, copy);
    copyFileSync(`${file}.keys`, `${copy}.keys`);
    appendFileSync(`${copy}.keys`, '{"p":"pt_0000000000000000000009","k":"dk_');
    const again = await store(copy);
    for (let i = 0; i < 5; i++) expect((await again.get(ref(i)))?.dekId).toBe(dek(i));
    expect(await again.get(ref(9))).toBeUndefined();
    // Its start took them into the key file and emptied the journal: the next line is whole.
    expect(keysInFile(copy)).toBe(5);
    expect(statSync(`${copy}.keys`).size).toBe(0);
    await again.insert(key(9));
    await again.close();
    const third = await store(copy);
    expect((await third.get(ref(9)))?.dekId).toBe(dek(9));
  });

  it('drops a torn line that is all a crash left in the journal, and journals the next key whole', async () => {
    const file = path.join(dir, 'patient-keys.json');
    const s = await store(file);
    await s.settleSetting('patient-ref-key-id', 'k1');
    await s.close();
    appendFileSync(`${file}.keys`, '{"p":"pt_0000000000000000000009","k":"dk_');
    const again = await store(file);
    await again.insert(key(1));
    const reader = await store(file, true);
    expect((await reader.get(ref(1)))?.dekId).toBe(dek(1));
    await again.close();
    const third = await store(file);
    expect((await third.get(ref(1)))?.dekId).toBe(dek(1));
    expect(await third.get(ref(9))).toBeUndefined();
  });

  it('never brings a destroyed key back from a journal the key file already held', async () => {
    const file = path.join(dir, 'patient-keys.json');
    const s = await store(file);
    await s.insert(key(1));
    await s.insert(key(2));
    const journal = readFileSync(`${file}.keys`);
    expect(
      await s.destroy({ patientRef: ref(1), dekId: dek(1), erasureId: 'er_1', erasedAt: new Date().toISOString() }),
    ).toBe(true);
    await s.close();
    // A crash between the key file's rewrite and the journal's emptying leaves the old journal beside it.
    appendFileSync(`${file}.keys`, journal);
    const again = await store(file);
    expect(await again.get(ref(1))).toBeUndefined();
    expect((await again.erased(dek(1)))?.erasureId).toBe('er_1');
    expect((await again.get(ref(2)))?.dekId).toBe(dek(2));
    // The patient comes back: a new key, kept.
    const back = { ...key(5), patientRef: ref(1) };
    expect(await again.insert(back)).toEqual(back);
  });

  it("lets a reader find every key the writer made, across the writer's rewrites of the key file", async () => {
    const file = path.join(dir, 'patient-keys.json');
    const writer = await store(file);
    const reader = await store(file, true);
    // New patients while the writer keeps rewriting the file (a setting each tenth key): every key the writer made
    // before the reader asks is found, whether it is in the journal, the file, or both.
    const found: (string | undefined)[] = [];
    for (let i = 0; i < 60; i++) {
      await writer.insert(key(i));
      const rewrite = i % 10 === 9 ? writer.settleSetting(`s${i}`, 'x') : Promise.resolve();
      found.push((await reader.get(ref(i)))?.dekId);
      await rewrite;
    }
    expect(found).toEqual(Array.from({ length: 60 }, (_, i) => dek(i)));
    await writer.destroy({ patientRef: ref(3), dekId: dek(3), erasureId: 'er_3', erasedAt: new Date().toISOString() });
    expect((await reader.erased(dek(3)))?.erasureId).toBe('er_3');
    expect(await reader.get(ref(3))).toBeUndefined();
    await expect(reader.insert(key(99))).rejects.toThrow(/open for reading here/);
  });
});
