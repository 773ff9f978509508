// A patient erased on request, over real HTTP, with the project's worker and the sandbox: Ada has a journey that
// completed (its Lab document carrying a marker) and one still waiting for its consultation; Bob has one waiting too.
// POST /v1/patients/erasure answers 202 at once; then the erasure is done (its time is measured by
// npm run bench:patient-keys, not here): Ada's waiting journey ended
// (its invite cancelled at the exam service), her document deleted, her data key destroyed. Every payload of her
// journeys' histories is sealed for her and no longer decodes; her name, e-mail and the document's marker are
// nowhere readable in Temporal's histories or the data folder; the clinic API answers her journeys without patient
// data, and Bob's journey still decodes. The trail holds who asked, the key's destruction and the journeys covered.
// A journey from before per-patient keys that names the erased patient is ended and deleted from Temporal.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { WorkflowNotFoundError } from '@temporalio/client';
import { PatientErasures } from '../../src/api/patient-erasure';
import type { AuditRecord } from '../../src/audit/types';
import { EncryptionCodec } from '../../src/codec/encryption-codec';
import { PATIENT_SEALED_ENCODING, PatientCodec, PayloadErasedError } from '../../src/codec/patient-codec';
import { journeyWorkflowId } from '../../src/contract/definitions';
import { resolveTimings, type JourneyInput } from '../../src/contract/journey-request';
import { FilePatientKeyStore } from '../../src/patient-keys';
import { KEYS_SINCE_SETTING } from '../../src/patient-keys/patient-keys';
import { parseOptions, runOps } from '../../scripts/ops';
import { useApiHarness } from '../support/api-harness';
import { encodingOf, historyPayloads } from '../support/history-payloads';
import { event1, eventually, TOKENS, webhookPath } from './support';
import { openFilePatientKeys } from '../support/patient-keys';

const MARKER = `ADA-LAB-MARKER-${randomBytes(4).toString('hex')}`;
const AUDIT_FILE = path.join(
  os.tmpdir(),
  `patient-erasure-audit-${process.pid}-${randomBytes(4).toString('hex')}.jsonl`,
);
const ADA = { firstName: 'Test', lastName: 'Approve', email: 'ada.lovelace@example.com' };
const ADA_WAITING = { ...ADA, lastName: 'Waitsforconsult' };
const BOB = { firstName: 'Test', lastName: 'Waitsforconsult', email: 'bob.babbage@example.com' };
const CAROL = { firstName: 'Test', lastName: 'Waitsforconsult', email: 'carol.shaw@example.com' };
const DAVE = { firstName: 'Test', lastName: 'Waitsforconsult', email: 'dave.cutler@example.com' };

/** Every file under a folder, as bytes. */
function filesUnder(dir: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir)) {
    const p = path.join(dir, entry);
    if (statSync(p).isDirectory()) out.push(...filesUnder(p));
    else out.push(p);
  }
  return out;
}

afterAll(() => {
  for (const f of [AUDIT_FILE, AUDIT_FILE.replace(/\.jsonl$/, '-worker.jsonl')])
    for (const x of [f, `${f}.lock`, `${f}.checkpoints`]) rmSync(x, { force: true });
});

describe('erasing a patient: POST /v1/patients/erasure', () => {
  const stack = useApiHarness({
    taskQueue: 'patient-erasure',
    worker: 'project',
    examService: 'sandbox',
    sandbox: { providerDelayMs: 2_000, prescriptionDelayMs: 300, shipmentDelayMs: 300, callbackRetries: 0 },
    listen: true,
    patientKeys: true,
    env: {
      PAYLOAD_ENCRYPTION_KEYS: `erasure-test:${randomBytes(32).toString('base64')}`,
      PAYLOAD_ENCRYPTION_DISABLED: 'false',
      AUDIT_FILE,
    },
  });
  const headers = { authorization: `Bearer ${TOKENS.a}` };
  /** Bob's journey, still waiting after Ada's erasure; the next test erases him. */
  let bobJourney = '';
  const basePatient = { dob: '1990-01-01', phoneNumber: '4155550100', teleState: 'TE' as const };

  async function start(key: string, body: object): Promise<string> {
    const res = await fetch(`${stack.url}/v1/journeys`, {
      method: 'POST',
      headers: { ...headers, 'content-type': 'application/json', 'idempotency-key': key },
      body: JSON.stringify(body),
    });
    expect(res.status).toBe(201);
    return ((await res.json()) as { journeyId: string }).journeyId;
  }
  const view = async (journeyId: string) =>
    (await (await fetch(`${stack.url}/v1/journeys/${journeyId}`, { headers })).json()) as any;
  const stage = (journeyId: string, want: string) =>
    eventually(
      () => view(journeyId),
      (j) => j.journey?.stage === want && j.source === 'query',
      { timeoutMs: 60_000, intervalMs: 250 },
    );
  const erasure = (body: object, key: string) =>
    fetch(`${stack.url}/v1/patients/erasure`, {
      method: 'POST',
      headers: { ...headers, 'content-type': 'application/json', 'idempotency-key': key },
      body: JSON.stringify(body),
    });

  it("ends the patient's journeys, deletes her document and destroys her key; others are untouched", async () => {
    const form = new FormData();
    form.append('kind', 'Lab');
    form.append('file', new Blob([`%PDF-1.4 lab results ${MARKER}`], { type: 'application/pdf' }), 'ada-lab.pdf');
    const upload = await fetch(`${stack.url}/v1/attachments`, { method: 'POST', headers, body: form });
    expect(upload.status).toBe(201);
    const { attachment } = (await upload.json()) as { attachment: { ref: string } };

    const done = await start('ada-partner', {
      patient: { ...basePatient, ...ADA },
      exams: [201],
      scenario: { type: 'partner_pharmacy', pharmacyId: 501, orderSetId: '8101' },
      attachments: [{ examId: 201, attachment }],
    });
    const waiting = await start('ada-gfe', {
      patient: { ...basePatient, ...ADA_WAITING },
      exams: [101],
      scenario: { type: 'gfe' },
    });
    const bobs = await start('bob-gfe', {
      patient: { ...basePatient, ...BOB },
      exams: [101],
      scenario: { type: 'gfe' },
    });
    bobJourney = bobs;
    await stage(done, 'completed');
    const waitingView = await stage(waiting, 'awaiting_consultation');
    await stage(bobs, 'awaiting_consultation');
    const waitingExam = waitingView.journey.exams[0].patientExamId as number;

    // Every payload of Ada's histories is sealed for her (the start's input, activities, callbacks, queries).
    const codec = new PatientCodec(stack.app.patientKeys!, new EncryptionCodec(stack.config.codec.keys));
    const payloadsOf = async (journeyId: string) => {
      const history = await stack.client.workflow.getHandle(journeyWorkflowId(journeyId)).fetchHistory();
      return { history, payloads: historyPayloads(history).own.map((f) => f.payload) };
    };
    const before = await payloadsOf(done);
    expect(new Set(before.payloads.map(encodingOf))).toEqual(new Set([PATIENT_SEALED_ENCODING]));
    expect(await codec.decode(before.payloads.slice(0, 1))).toHaveLength(1);
    // Her document too, since her journey took it (the worker opened it to upload it): nothing of it in the clear,
    // and no other copy under the payload keys.
    const ada = stack.app.patientKeys!.patientRef('clinic-a', ADA.email);
    expect((await stack.app.attachments.get(attachment.ref))?.patient).toBe(ada);
    const documents = readdirSync(stack.config.attachmentsDir)
      .filter((name) => name.startsWith(attachment.ref))
      .map((name) => path.join(stack.config.attachmentsDir, name));
    expect(documents).toHaveLength(2);
    for (const f of documents) expect(readFileSync(f).includes(MARKER)).toBe(false);
    // Another patient's start cannot name it.
    const taken = await fetch(`${stack.url}/v1/journeys`, {
      method: 'POST',
      headers: { ...headers, 'content-type': 'application/json', 'idempotency-key': 'bob-takes-adas-document' },
      body: JSON.stringify({
        patient: { ...basePatient, ...BOB },
        exams: [201],
        scenario: { type: 'partner_pharmacy', pharmacyId: 501, orderSetId: '8101' },
        attachments: [{ examId: 201, attachment }],
      }),
    });
    expect(taken.status).toBe(400);
    expect(((await taken.json()) as any).errors).toEqual([
      expect.objectContaining({ field: 'attachments.0.attachment.ref', rule: 'attachment-of-patient' }),
    ]);

    const res = await erasure({ email: 'Ada.Lovelace@Example.com' }, 'erase-ada');
    expect(res.status).toBe(202);
    const accepted = (await res.json()) as any;
    expect(accepted).toMatchObject({
      status: 'pending',
      journeys: [],
      completedAt: null,
      unreadableEverywhereAt: null,
    });
    expect(res.headers.get('location')).toBe(`/v1/patients/erasure/${accepted.erasureId}`);
    // The same Idempotency-Key answers the same erasure.
    const again = await erasure({ email: 'ada.lovelace@example.com' }, 'erase-ada');
    expect(again.status).toBe(200);
    expect(((await again.json()) as any).erasureId).toBe(accepted.erasureId);

    const finished = await eventually(
      async () =>
        (await (await fetch(`${stack.url}/v1/patients/erasure/${accepted.erasureId}`, { headers })).json()) as any,
      (e) => e.status === 'done',
      { timeoutMs: 120_000, intervalMs: 200 },
    );
    expect(finished.journeys.sort()).toEqual([done, waiting].sort());
    expect(finished.completedAt).toEqual(expect.any(String));
    expect(finished.unreadableEverywhereAt).toBe(finished.completedAt);

    // Her waiting journey ended, its invite cancelled at the exam service first.
    const desc = await stack.client.workflow.getHandle(journeyWorkflowId(waiting)).describe();
    expect(desc.status.name).not.toBe('RUNNING');
    expect(stack.sandbox.store.patientExam(waitingExam)?.status).toBe('cancelled');
    // Her document is gone.
    expect(await stack.app.attachments.get(attachment.ref)).toBeUndefined();

    // Her histories: still there, sealed for her, no longer readable; nothing of her in the clear.
    for (const j of [done, waiting]) {
      const { history, payloads } = await payloadsOf(j);
      await expect(codec.decode(payloads.slice(0, 1))).rejects.toBeInstanceOf(PayloadErasedError);
      const raw = JSON.stringify(history);
      for (const secret of [ADA.email, ADA.lastName, ADA_WAITING.lastName, MARKER]) expect(raw).not.toContain(secret);
    }
    // The data folder (inbox, key file, erasure log, audit trail, documents): nothing of her readable.
    for (const file of filesUnder(stack.dirs.dataDir)) {
      const text = readFileSync(file).toString('latin1');
      for (const secret of [ADA.email, 'Lovelace', MARKER])
        expect({ file, found: text.includes(secret) }).toEqual({ file, found: false });
    }

    // The clinic API answers her journeys without patient data; Bob's journey still decodes and runs.
    const erasedView = await view(done);
    expect(JSON.stringify(erasedView)).not.toContain(ADA.email);
    expect(erasedView).toMatchObject({ journeyId: done, source: 'visibility', journey: { stage: 'completed' } });
    const bobView = await view(bobs);
    expect(bobView).toMatchObject({ source: 'query', journey: { stage: 'awaiting_consultation' } });

    // A reset of an erased journey (one, or a bulk `ops reset` over a query) is refused: its new run could not read its
    // own start. Nothing runs again.
    const reset = await fetch(`${stack.url}/admin/journeys/${done}/reset`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKENS.admin}`, 'content-type': 'application/json' },
      body: JSON.stringify({ actor: 'oncall-test', note: 'INC-1 reset after a bad deploy' }),
    });
    expect(reset.status).toBe(409);
    expect(((await reset.json()) as any).type).toMatch(/journey-erased$/);
    expect((await stack.client.workflow.getHandle(journeyWorkflowId(done)).describe()).status.name).toBe('COMPLETED');

    // On the record: who asked, the key's destruction, the journeys covered (ids, no patient data).
    const trail = readFileSync(AUDIT_FILE, 'utf8');
    const records = trail
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as AuditRecord)
      .filter((r) => r.action.startsWith('patient-'));
    expect(records.map((r) => r.action)).toEqual(
      expect.arrayContaining(['patient-erasure.request', 'patient-key.erase', 'patient-erasure.done']),
    );
    const doneRecord = records.find((r) => r.action === 'patient-erasure.done')!;
    expect(doneRecord.details).toMatchObject({ erasureId: accepted.erasureId, journeyCount: 2 });
    expect(String(doneRecord.details!.journeys).split(' ').sort()).toEqual([done, waiting].sort());
    expect(trail).not.toContain(ADA.email);
  }, 180_000);

  it("erases through npm run ops as an admin: Bob's waiting journey ends, his erasure is done", async () => {
    const out: string[] = [];
    const opts = parseOptions(
      [
        'erase-patient',
        '--clinic',
        'clinic-a',
        '--email',
        BOB.email,
        '--actor',
        'oncall-test',
        '--api',
        stack.url,
        '--admin-token',
        TOKENS.admin,
        '--wait',
        '120',
      ],
      {},
    )!;
    const summary = await runOps(opts, {
      out: (t) => void out.push(t),
      err: () => undefined,
      isTTY: false,
      interactive: false,
    });
    expect(summary).toMatchObject({ command: 'erase-patient', done: 1, failed: 0 });
    const text = out.join('');
    expect(text).toMatch(/done at .*: 1 journeys ended and made unreadable/);
    expect(text).not.toContain(BOB.email);
    const desc = await stack.client.workflow.getHandle(journeyWorkflowId(bobJourney)).describe();
    expect(desc.status.name).not.toBe('RUNNING');
  });

  it("ends and deletes the journeys a patient had before per-patient keys; another patient's stays", async () => {
    // A key store whose first start is still to come (keys-since ahead of now): the journeys started here are, to it,
    // from before per-patient keys, bound to no patient and sealed under the payload keys alone.
    const dir = mkdtempSync(path.join(os.tmpdir(), 'erasure-legacy-'));
    const store = new FilePatientKeyStore(path.join(dir, 'patient-keys.json'), { readOnly: false });
    await store.init();
    await store.settleSetting(KEYS_SINCE_SETTING, new Date(Date.now() + 3_600_000).toISOString());
    const keys = await openFilePatientKeys(dir, { ring: stack.config.codec.keys, store });
    try {
      const legacy = async (who: typeof CAROL) => {
        const journeyId = `legacy-${randomBytes(6).toString('hex')}`;
        const input: JourneyInput = {
          patient: { ...basePatient, ...who },
          exams: [101],
          scenario: { type: 'gfe' },
          clinicId: 'clinic-a',
          journeyId,
          timings: resolveTimings(stack.config.timings, undefined),
          callbackFloodLimit: stack.config.callbackFloodLimit,
        };
        await stack.app.journeys.start(input, 'f'.repeat(64));
        return journeyId;
      };
      const carols = await legacy(CAROL);
      const daves = await legacy(DAVE);
      const carolView = await stage(carols, 'awaiting_consultation');
      await stage(daves, 'awaiting_consultation');
      // Sealed under the payload keys, not for a patient.
      const { payloads } = await (async () => {
        const history = await stack.client.workflow.getHandle(journeyWorkflowId(carols)).fetchHistory();
        return { payloads: historyPayloads(history).own.map((f) => f.payload) };
      })();
      expect(payloads.map(encodingOf)).not.toContain(PATIENT_SEALED_ENCODING);

      const { request } = await keys.requestErasure({
        clinicId: 'clinic-a',
        patientRef: keys.patientRef('clinic-a', CAROL.email.toUpperCase()),
        idempotencyKey: 'erase-carol',
        actor: { subject: 'oncall-test', roles: [] },
      });
      const erasures = new PatientErasures({
        keys,
        temporal: stack.client,
        attachments: stack.app.attachments,
        deadLetters: stack.app.callbacks.inbox.deadLetters,
        log: { info: () => undefined, warn: () => undefined },
      });
      await erasures.run(request);
      await erasures.close();
      expect(await keys.erasureRequest(request.erasureId)).toMatchObject({ status: 'done', journeys: [carols] });
      // Her invite cancelled at the exam service first, then her history deleted from Temporal.
      const carolExam = carolView.journey.exams[0].patientExamId as number;
      expect(stack.sandbox.store.patientExam(carolExam)?.status).toBe('cancelled');
      await eventually(
        () =>
          stack.client.workflow
            .getHandle(journeyWorkflowId(carols))
            .describe()
            .then(
              (d) => `present ${d.status.name}`,
              (err: unknown) => (err instanceof WorkflowNotFoundError ? 'gone' : 'error'),
            ),
        (state) => state === 'gone',
        // The server deletes a closed execution once its close is acknowledged in its task queue (up to 30 s and more).
        { timeoutMs: 120_000, intervalMs: 1_000 },
      );
      const davesNow = await stack.client.workflow.getHandle(journeyWorkflowId(daves)).describe();
      expect(davesNow.status.name).toBe('RUNNING');
    } finally {
      await keys.close();
      rmSync(dir, { recursive: true, force: true });
    }
  }, 200_000);

  it('refuses, erases or (after done) keys anew every start racing her erasure; a late callback after a new invite is dropped', async () => {
    const EVE = { firstName: 'Test', lastName: 'Waitsforconsult', email: 'eve.racer@example.com' };
    const body = { patient: { ...basePatient, ...EVE }, exams: [101], scenario: { type: 'gfe' } };
    const keys = stack.app.patientKeys!;
    const first = await start('eve-first', body);
    const firstView = await stage(first, 'awaiting_consultation');
    const erasedKey = (await keys.journeyKey(journeyWorkflowId(first)))!.dekId;

    // Starts for her every 10 ms from just before her erasure is asked for until a moment after it is done.
    type Answer = { key: string; status: number; slug?: string; journeyId?: string; sentAfterDone: boolean };
    const answers: Promise<Answer>[] = [];
    let doneAt: number | undefined;
    let n = 0;
    const send = () => {
      const key = `eve-race-${n++}`;
      const sentAfterDone = doneAt !== undefined;
      answers.push(
        fetch(`${stack.url}/v1/journeys`, {
          method: 'POST',
          headers: { ...headers, 'content-type': 'application/json', 'idempotency-key': key },
          body: JSON.stringify(body),
        }).then(async (res) => {
          const json = (await res.json()) as { journeyId?: string; type?: string };
          return {
            key,
            status: res.status,
            slug: json.type?.split(':').pop(),
            journeyId: json.journeyId,
            sentAfterDone,
          };
        }),
      );
    };
    const ticker = setInterval(send, 10);
    let finished: any;
    try {
      await new Promise((r) => setTimeout(r, 30));
      const res = await erasure({ email: EVE.email }, 'erase-eve');
      expect(res.status).toBe(202);
      const { erasureId } = (await res.json()) as { erasureId: string };
      finished = await eventually(
        async () => (await (await fetch(`${stack.url}/v1/patients/erasure/${erasureId}`, { headers })).json()) as any,
        (e) => e.status === 'done',
        { timeoutMs: 120_000, intervalMs: 20 },
      );
      doneAt = Date.now();
      await new Promise((r) => setTimeout(r, 300));
    } finally {
      clearInterval(ticker);
    }
    const all = await Promise.all(answers);
    // Each is refused while the erasure runs, or started: none fails otherwise.
    for (const a of all) {
      expect([a.status, a.slug]).toEqual(a.status === 409 ? [409, 'patient-erasure-in-progress'] : [201, undefined]);
    }
    expect(all.filter((a) => a.status === 409).length).toBeGreaterThan(0);
    expect(all.filter((a) => a.status === 201 && a.sentAfterDone).length).toBeGreaterThan(0);
    // Every journey started is either one the erasure covered (ended, its key destroyed) or runs under a new key,
    // readable and moving: none left running under the destroyed key with failing workflow tasks.
    const started = all.filter((a) => a.status === 201).map((a) => a.journeyId!);
    for (const j of started) {
      const key = (await keys.journeyKey(journeyWorkflowId(j)))!.dekId;
      if (key === erasedKey) {
        expect(finished.journeys).toContain(j);
        const status = (await stack.client.workflow.getHandle(journeyWorkflowId(j)).describe()).status.name;
        expect({ j, status }).not.toEqual({ j, status: 'RUNNING' });
      } else {
        await stage(j, 'awaiting_consultation');
      }
    }
    expect(finished.journeys).toContain(first);
    // A start refused during the erasure, sent again with its key, starts under her new key.
    const refusedKey = all.find((a) => a.status === 409)!.key;
    const retried = await start(refusedKey, body);
    const retriedKey = (await keys.journeyKey(journeyWorkflowId(retried)))!.dekId;
    expect(retriedKey).not.toBe(erasedKey);
    await stage(retried, 'awaiting_consultation');

    // She is invited again (above); a late callback comes on the erased journey's URL: acknowledged, kept nowhere
    // readable, not a dead letter in the clear.
    const lettersBefore = (await stack.app.callbacks.inbox.deadLetters.list({ limit: 500 })).letters.length;
    const late = await fetch(`${stack.url}${webhookPath(first)}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        ...event1(firstView.journey.exams[0].patientExamId as number),
        patient_email: EVE.email,
      }),
    });
    expect(late.status).toBe(200);
    await new Promise((r) => setTimeout(r, 1_500));
    const letters = (await stack.app.callbacks.inbox.deadLetters.list({ limit: 500 })).letters;
    expect(letters.length).toBe(lettersBefore);
    expect(JSON.stringify(letters)).not.toContain(EVE.email);
    for (const file of filesUnder(stack.dirs.dataDir)) {
      expect({ file, found: readFileSync(file).toString('latin1').includes(EVE.email) }).toEqual({
        file,
        found: false,
      });
    }
  }, 240_000);

  it("answers another clinic's erasure id as absent, and refuses a body without an e-mail", async () => {
    const res = await erasure({ email: 'nobody@example.com' }, 'erase-nobody');
    expect(res.status).toBe(202);
    const { erasureId } = (await res.json()) as { erasureId: string };
    const other = await fetch(`${stack.url}/v1/patients/erasure/${erasureId}`, {
      headers: { authorization: `Bearer ${TOKENS.b}` },
    });
    expect(other.status).toBe(404);
    const bad = await erasure({ mail: 'x@example.com' }, 'erase-bad');
    expect(bad.status).toBe(400);
  });
});
