// A patient erased on the production topology (ProductionStack on its PostgreSQL cluster, the WAL archived and full
// backups taken by pgBackRest, documents in MinIO, the patient keys in a database and role of their own), then every
// store searched. Ada has a completed journey (her Lab document carrying a marker) and one waiting for its
// consultation; Bob has one waiting. A full backup is taken before the erasure. After it:
// - Temporal's histories (read from the server) no longer decode for Ada, Bob's do;
// - a dump of every database of the cluster, the object store's objects (every version) and every file of the stack's
//   data folder hold neither her name, nor her e-mail, nor the marker in the clear;
// - the backup taken before, restored into a new data folder, holds nothing of her in the clear either, and although
//   its key table still has her wrapped key, the engine opening it re-applies the erasure log first: her payloads read
//   as erased through it, Bob's open.
// The exam service's own stand-in (the sandbox) is the third party: its log is not ours to search.
import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { GetObjectCommand, ListObjectVersionsCommand, S3Client } from '@aws-sdk/client-s3';
import { Client as TemporalClient, Connection } from '@temporalio/client';
import type { Payload } from '@temporalio/common';
import { findPostgresBin, freePort } from '../../scripts/lib/postgres-server';
import { ATTACHMENTS_BUCKET, freeProductionPorts, ProductionStack } from '../../scripts/lib/production-stack';
import { DEMO_CLINIC_TOKEN, stackSecrets } from '../../scripts/lib/stack-secrets';
import { EncryptionCodec } from '../../src/codec/encryption-codec';
import { PatientCodec, PayloadErasedError } from '../../src/codec/patient-codec';
import { journeyWorkflowId } from '../../src/contract/definitions';
import { parseEncryptionKeys } from '../../src/encryption-keys';
import { historyPayloads } from '../support/history-payloads';

const execFileAsync = promisify(execFile);
const MARKER = `ADA-LAB-MARKER-${Date.now().toString(36)}`;
const ADA = { email: 'ada.lovelace.erasure@example.com', name: 'Lovelace' };
const SECRETS = [ADA.email, ADA.name, MARKER];
const headers = { authorization: `Bearer ${DEMO_CLINIC_TOKEN}` };

/** Which of the secrets a text holds (in the clear). */
const found = (text: string) => SECRETS.filter((s) => text.includes(s));

/** Every file under a folder (the sandbox's log left out: the exam service is the third party). */
function filesUnder(dir: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir)) {
    const p = path.join(dir, entry);
    const st = statSync(p, { throwIfNoEntry: false });
    if (!st) continue;
    if (st.isDirectory()) out.push(...filesUnder(p));
    else if (st.isFile() && !/sandbox/.test(entry)) out.push(p);
  }
  return out;
}

describe('erasing a patient on the production topology, every store searched after', () => {
  let root: string;
  let stack: ProductionStack;
  let ports: Awaited<ReturnType<typeof freeProductionPorts>>;
  const steps: string[] = [];
  const t0 = Date.now();
  const step = (what: string) => steps.push(`${((Date.now() - t0) / 1000).toFixed(1)} s: ${what}`);
  afterAll(() => console.log(`erasure on the production topology:\n${steps.join('\n')}`));

  beforeAll(async () => {
    step('starting the stack');
    root = mkdtempSync(path.join(tmpdir(), 'erasure-'));
    ports = await freeProductionPorts(27_400, 31_000, { cluster: true });
    stack = new ProductionStack({
      dataDir: root,
      ports,
      workers: 1,
      database: 'cluster',
      supervise: false,
      engineEnv: { API_RATE_LIMIT_PER_MINUTE: '100000' },
      sandboxEnv: { SANDBOX_PROVIDER_DELAY_MS: '1000' },
    });
    await stack.start();
    step('stack up');
  }, 420_000);

  afterAll(async () => {
    await stack?.stop();
    if (root && process.env.KEEP_RUN !== '1') rmSync(root, { recursive: true, force: true });
  }, 180_000);

  const api = (route: string, init: RequestInit = {}) =>
    fetch(`${stack.apiUrl}${route}`, { ...init, headers: { ...headers, ...(init.headers ?? {}) } });
  const start = async (key: string, body: object) => {
    const res = await api('/v1/journeys', {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'idempotency-key': key },
      body: JSON.stringify(body),
    });
    expect(res.status).toBe(201);
    return ((await res.json()) as { journeyId: string }).journeyId;
  };
  const stage = async (journeyId: string, want: string) => {
    for (let i = 0; i < 600; i++) {
      const j = (await (await api(`/v1/journeys/${journeyId}`)).json()) as { journey?: { stage?: string } };
      if (j.journey?.stage === want) return;
      await new Promise((r) => setTimeout(r, 250));
    }
    throw new Error(`journey ${journeyId} never reached ${want}`);
  };
  const dumpAll = async (url: string) => {
    const bin = await findPostgresBin();
    const u = new URL(url);
    // The password from the environment (pg_dumpall connects to every database; never a prompt).
    const { stdout } = await execFileAsync(
      path.join(bin, 'pg_dumpall'),
      ['--no-password', '--host', u.hostname, '--port', u.port, '--username', decodeURIComponent(u.username)],
      {
        maxBuffer: 1024 * 1024 * 1024,
        timeout: 120_000,
        env: { ...process.env, PGPASSWORD: decodeURIComponent(u.password), PGDATABASE: 'postgres' },
      },
    );
    return stdout;
  };

  it("leaves nothing of her readable anywhere, the backup taken before included; another patient's journeys decode", async () => {
    const base = { firstName: 'Test', dob: '1980-01-01', phoneNumber: '4155550100', teleState: 'TE' };
    const form = new FormData();
    form.append('kind', 'Lab');
    form.append('file', new Blob([`%PDF-1.4 lab results ${MARKER}`], { type: 'application/pdf' }), 'lab.pdf');
    const upload = await api('/v1/attachments', { method: 'POST', body: form });
    expect(upload.status).toBe(201);
    const { attachment } = (await upload.json()) as { attachment: { ref: string } };
    const done = await start('erasure-ada-partner', {
      patient: { ...base, lastName: 'Approve', email: ADA.email },
      exams: [201],
      scenario: { type: 'partner_pharmacy', pharmacyId: 501, orderSetId: '8101' },
      attachments: [{ examId: 201, attachment }],
    });
    const waiting = await start('erasure-ada-gfe', {
      patient: { ...base, lastName: ADA.name, email: ADA.email },
      exams: [101],
      scenario: { type: 'gfe' },
    });
    const bobs = await start('erasure-bob-gfe', {
      patient: { ...base, lastName: 'Babbage', email: 'bob.babbage.erasure@example.com' },
      exams: [101],
      scenario: { type: 'gfe' },
    });
    step('journeys started');
    await Promise.all([
      stage(done, 'completed'),
      stage(waiting, 'awaiting_consultation'),
      stage(bobs, 'awaiting_consultation'),
    ]);
    step('journeys settled');

    // A full backup with all of it: the copy a restore after the erasure starts from.
    const backups = stack.backups!;
    await backups.backup('full');
    const beforeErasure = new Date();
    step('full backup taken');
    await new Promise((r) => setTimeout(r, 1_000));

    // Each API replica reads her completed journey (its snapshot or its result, through its own codec): each holds her
    // key now, and must not once her erasure reads done.
    const replicaView = async (port: number, journeyId: string) =>
      (
        (await (await fetch(`http://127.0.0.1:${port}/v1/journeys/${journeyId}`, { headers })).json()) as {
          source: string;
        }
      ).source;
    for (const port of ports.apiReplicas) expect(await replicaView(port, done)).not.toBe('visibility');

    const asked = await api('/v1/patients/erasure', {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'idempotency-key': 'erasure-ada' },
      body: JSON.stringify({ email: ADA.email }),
    });
    expect(asked.status).toBe(202);
    const { erasureId } = (await asked.json()) as { erasureId: string };
    let erasure: { status: string; journeys: string[] } = { status: 'pending', journeys: [] };
    for (let i = 0; i < 1200 && erasure.status !== 'done'; i++) {
      await new Promise((r) => setTimeout(r, 100));
      erasure = (await (await api(`/v1/patients/erasure/${erasureId}`)).json()) as typeof erasure;
    }
    step(`erasure ${erasure.status}`);
    expect(erasure.status).toBe('done');
    // Done means no process opens her data: neither replica (nor the worker answering their query) reads it any more.
    for (const port of ports.apiReplicas) expect(await replicaView(port, done)).toBe('visibility');
    // The WAL up to now (the erasure's commits, after the restore's target) in the archive.
    await backups.check();
    expect(erasure.journeys.sort()).toEqual([done, waiting].sort());

    // Temporal's histories, read from the server: hers sealed for her and no longer readable; Bob's still open.
    const ring = parseEncryptionKeys(stackSecrets(root).payloadEncryptionKeys);
    const live = stack.patientKeysReader();
    await live.init();
    const connection = await Connection.connect({ address: stack.temporalAddress });
    const temporal = new TemporalClient({ connection });
    const ownPayloads = async (journeyId: string): Promise<Payload[]> => {
      const history = await temporal.workflow.getHandle(journeyWorkflowId(journeyId)).fetchHistory();
      return historyPayloads(history).own.map((f) => f.payload);
    };
    const [adaDone, adaWaiting, bob] = await Promise.all([ownPayloads(done), ownPayloads(waiting), ownPayloads(bobs)]);
    await connection.close();
    const liveCodec = new PatientCodec(live, new EncryptionCodec(ring));
    // Past the other processes' key caches is not needed here: this reader opened after the erasure.
    for (const payloads of [adaDone, adaWaiting]) {
      await expect(liveCodec.decode(payloads.slice(0, 1))).rejects.toBeInstanceOf(PayloadErasedError);
    }
    expect(found(JSON.stringify(await liveCodec.decode(bob)))).toEqual([]);
    await live.close();
    step('histories read');

    // Every database of the cluster, dumped: nothing of her in the clear.
    expect(found(await dumpAll(stack.superuserUrl))).toEqual([]);
    step('cluster dumped');

    // The object store: her document gone with every version; no object holds the marker in the clear.
    const store = stack.objectStore!;
    const s3 = new S3Client({
      region: 'us-east-1',
      endpoint: store.endpoint,
      forcePathStyle: true,
      credentials: { accessKeyId: store.accessKeyId, secretAccessKey: store.secretAccessKey },
    });
    const versions = await s3.send(new ListObjectVersionsCommand({ Bucket: ATTACHMENTS_BUCKET }));
    const keys = [...(versions.Versions ?? [])];
    // The document's record (its bytes and metadata), every version; the usage ledger's entries for it (its ref,
    // size and journey id, no patient data) expire with the bucket's window for deleted versions.
    expect(keys.filter((v) => v.Key?.includes(attachment.ref) && !v.Key.startsWith('usage/'))).toEqual([]);
    for (const v of keys) {
      const obj = await s3.send(
        new GetObjectCommand({ Bucket: ATTACHMENTS_BUCKET, Key: v.Key!, VersionId: v.VersionId }),
      );
      expect(found(Buffer.from(await obj.Body!.transformToByteArray()).toString('latin1'))).toEqual([]);
    }
    s3.destroy();
    step(`object store read (${keys.length} versions)`);

    // Every file of the stack's folder (PostgreSQL's data and WAL, the archive's spool, MinIO's data, the logs).
    const hits = filesUnder(root).flatMap((f) => {
      const st = statSync(f, { throwIfNoEntry: false });
      if (!st || st.size > 256 * 1024 * 1024) return [];
      const text = readFileSync(f).toString('latin1');
      const which = found(text);
      return which.length ? [`${path.relative(root, f)}: ${which.join(', ')}`] : [];
    });
    expect(hits).toEqual([]);
    step('data folder read');

    // The backup taken before the erasure, restored into a new data folder: nothing of her in the clear; its key
    // table still holds her wrapped key, and the engine that opens it destroys it again first (the erasure log).
    const restored = await backups.restoreToTime({
      target: beforeErasure,
      dataDir: path.join(root, 'restored', 'data'),
      port: await freePort(),
      database: 'journeys',
    });
    step(`backup restored (${restored.restoreMs} ms, recovery ${restored.recoveryMs} ms)`);
    try {
      expect(found(await dumpAll(restored.server.url))).toEqual([]);
      const keyDb = new URL(restored.server.url);
      keyDb.pathname = '/journey_patient_keys';
      const fromBackup = stack.patientKeysAt(keyDb.toString(), { readOnly: false });
      const counted = await fromBackup.init();
      expect(counted.reDestroyed.map((e) => e.erasureId)).toEqual([erasureId]);
      const codec = new PatientCodec(fromBackup, new EncryptionCodec(ring));
      await expect(codec.decode(adaDone.slice(0, 1))).rejects.toBeInstanceOf(PayloadErasedError);
      expect(found(JSON.stringify(await codec.decode(bob)))).toEqual([]);
      await fromBackup.close();
    } finally {
      await restored.server.stop();
    }
  }, 600_000);
});
