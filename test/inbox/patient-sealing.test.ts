// The inbox with each callback sealed for its journey's patient: what the store keeps of a bound journey's callback is
// a sealed value (opened even with the payload keys, it holds no patient data), the forwarder gets it opened, and an
// erasure reaches it: a callback still waiting is dropped unread at its claim, a dead letter reads `[erased]`, and a
// callback that comes after the erasure is not kept at all. A journey bound to no patient is kept as before.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { RecordSealer } from '../../src/codec/at-rest';
import { journeyWorkflowId } from '../../src/contract/definitions';
import { FileInbox } from '../../src/inbox/files';
import { PatientSealedInbox } from '../../src/inbox/patient-sealing';
import { FileErasureLog, FilePatientKeyStore, PatientKeys } from '../../src/patient-keys';
import { KEY_A, PATIENT, signalFor } from './support';

describe('the inbox sealed per patient', () => {
  let root: string;
  let keys: PatientKeys;
  let inner: FileInbox;
  let inbox: PatientSealedInbox;
  const dropped: string[] = [];

  beforeEach(async () => {
    root = mkdtempSync(path.join(tmpdir(), 'patient-inbox-'));
    keys = new PatientKeys({
      ring: [KEY_A],
      store: new FilePatientKeyStore(path.join(root, 'patient-keys.json')),
      erasureLog: new FileErasureLog(path.join(root, 'patient-erasures.jsonl')),
      audit: () => Promise.resolve(),
    });
    await keys.init();
    inner = new FileInbox({
      dir: path.join(root, 'inbox'),
      deadLetterDir: path.join(root, 'dead-letters'),
      legacySpoolDir: path.join(root, 'spool'),
      sealer: new RecordSealer([KEY_A]),
    });
    dropped.length = 0;
    inbox = new PatientSealedInbox(inner, keys, { droppedErased: (j) => dropped.push(j) });
    await inbox.init();
  });
  afterEach(async () => {
    await inbox.close();
    await keys.close();
    rmSync(root, { recursive: true, force: true });
  });

  /** A callback for a journey that has finished, kept as a dead letter (its body names the patient). */
  const finishedLetter = (journeyId: string) => ({
    journeyId,
    reason: 'journey_finished' as const,
    detail: 'the journey has finished',
    receivedAt: new Date().toISOString(),
    rawBody: JSON.stringify({ event: 1, patient_email: PATIENT.email }),
  });

  const bind = (journeyId: string, email: string) =>
    keys.bindJourney(journeyWorkflowId(journeyId), keys.patientRef('clinic-a', email));

  it("keeps a bound journey's callback sealed for its patient, and hands it on opened", async () => {
    await bind('j-ada', PATIENT.email);
    const signal = signalFor();
    await inbox.append('j-ada', signal);
    await inbox.append('j-older', signalFor());

    // The store itself (opened with the payload keys) holds a sealed value, nothing of the patient.
    const raw = await inner.claim(10, 10);
    const stored = raw!.entries.find((e) => e.journeyId === 'j-ada')!.signal as unknown as Record<string, unknown>;
    expect(Object.keys(stored).sort()).toEqual(['deliveryId', 'receivedAt', 'sealed']);
    expect(JSON.stringify(stored)).not.toContain(PATIENT.name);
    expect(raw!.entries.find((e) => e.journeyId === 'j-older')!.signal.callback).toBeDefined();
    await raw!.settle([], []);

    const claim = await inbox.claim(10, 10);
    expect(claim!.entries.find((e) => e.journeyId === 'j-ada')!.signal).toEqual(signal);
    await claim!.settle(
      claim!.entries.map((e) => e.id),
      [],
    );
    expect((await inbox.stats()).depth).toBe(0);
  });

  it('drops a waiting callback of an erased patient unread, keeps none after, and reads its dead letters as erased', async () => {
    await bind('j-ada', PATIENT.email);
    await bind('j-bob', 'bob@example.org');
    await inbox.append('j-ada', signalFor());
    await inbox.append('j-bob', signalFor());
    const letter = await inbox.deadLetters.add(finishedLetter('j-ada'));
    expect(letter.rawBody).toContain(PATIENT.email);
    expect(JSON.stringify(await inner.deadLetters.get(letter.id))).not.toContain(PATIENT.email);

    await keys.erase(keys.patientRef('clinic-a', PATIENT.email));
    const claim = await inbox.claim(10, 10);
    expect(claim!.entries.map((e) => e.journeyId)).toEqual(['j-bob']);
    expect(dropped).toEqual(['j-ada']);
    await claim!.settle(
      claim!.entries.map((e) => e.id),
      [],
    );
    // Settled with the dropped entry: nothing of Ada waits.
    expect((await inbox.stats()).depth).toBe(0);

    expect((await inbox.deadLetters.get(letter.id))!.rawBody).toBe('[erased]');
    // A callback after the erasure is not kept (and no key is made for her again).
    await inbox.append('j-ada', signalFor());
    expect((await inbox.stats()).depth).toBe(0);
    expect(dropped).toEqual(['j-ada', 'j-ada']);
    const late = await inbox.deadLetters.add(finishedLetter('j-ada'));
    expect(JSON.stringify(await inner.deadLetters.get(late.id))).not.toContain(PATIENT.email);
  });

  it('drops a late callback of an erased journey after the patient is invited again, never sealed under her new key', async () => {
    await bind('j-ada', PATIENT.email);
    await keys.erase(keys.patientRef('clinic-a', PATIENT.email));
    // Invited again: a new journey, a new key for the same patient.
    await bind('j-ada-again', PATIENT.email);
    await inbox.append('j-ada-again', signalFor());
    // The erased journey's URL still answers: its callback is acknowledged, dropped unread and counted.
    await inbox.append('j-ada', signalFor());
    expect(dropped).toEqual(['j-ada']);
    const claim = await inbox.claim(10, 10);
    expect(claim!.entries.map((e) => e.journeyId)).toEqual(['j-ada-again']);
    await claim!.settle(
      claim!.entries.map((e) => e.id),
      [],
    );
    // Were it a dead letter, its body would read as erased to operators, not in the clear.
    const letter = await inbox.deadLetters.add(finishedLetter('j-ada'));
    expect(letter.rawBody).toBe('[erased]');
    expect(JSON.stringify(await inner.deadLetters.get(letter.id))).not.toContain(PATIENT.email);
    expect(JSON.stringify(await inbox.deadLetters.get(letter.id))).not.toContain(PATIENT.email);
  });
});
