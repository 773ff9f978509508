// The replay gate, built from the real system:
//   npm run histories:capture -- --query "<visibility query>" [--out DIR] [--per-state N]
//     exports the histories of chosen journeys (running and closed; payloads left as the server holds them,
//     encrypted) into a folder, one per wait state: invited, reminded, deferred to the medical director, awaiting
//     the prescription, awaiting tracking, parked for an operator, completed, cancelled, expired.
//   npm run replay -- <folder> [--workflows PATH]
//     replays every history of a folder against the working tree's workflows (PAYLOAD_ENCRYPTION_KEYS decrypts them)
//     and fails naming each history that does not replay and its first mismatching command.
// The Temporal connection comes from TEMPORAL_* and the CLI's temporal.toml profile, as for the worker.
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { historyFromJSON, historyToJSON } from '@temporalio/common/lib/proto-utils';
import { temporal } from '@temporalio/proto';
import { DefaultLogger, Runtime, Worker } from '@temporalio/worker';
import { ENCRYPTED_ENCODING, EncryptionCodec } from '../src/codec/encryption-codec';
import {
  METADATA_DATA_KEY_ID,
  METADATA_PATIENT_REF,
  PATIENT_SEALED_ENCODING,
  PAYLOAD_PURPOSE,
  PatientCodec,
  type PayloadPatientKeys,
} from '../src/codec/patient-codec';
import { loadPatientKeyConfig, loadTemporalConfig } from '../src/config';
import { patientKeysFrom } from '../src/patient-keys/from-settings';
import type { PatientRef } from '../src/patient-keys/envelope';
import { parseEncryptionKeys } from '../src/encryption-keys';
import { connectionOptions } from '../src/temporal';
import { exitWith, parseCommandLine, table, UsageError } from './lib/cli';

const ROOT = path.resolve(__dirname, '..');

/** Where a journey can wait, as the replay gate covers them. */
export const WAIT_STATES = [
  'invited',
  'reminded',
  'deferred',
  'awaiting_prescription',
  'awaiting_tracking',
  'parked',
  'completed',
  'cancelled',
  'expired',
] as const;
export type WaitState = (typeof WAIT_STATES)[number];

/** What visibility and the history tell of a journey, none of it patient data. */
export interface JourneyFacts {
  running: boolean;
  stage: string | undefined;
  examStatuses: readonly string[];
  needsAttention: boolean;
  /** The history schedules a reminder (resendInvite). */
  reminded: boolean;
}

/** The wait state a journey is in; undefined for a passing stage (validating, inviting...) or an abandoned one. */
export function waitStateOf(f: JourneyFacts): WaitState | undefined {
  if (!f.running) {
    if (f.examStatuses.includes('expired')) return 'expired';
    if (f.stage === 'completed') return 'completed';
    if (f.stage === 'cancelled') return 'cancelled';
    return undefined;
  }
  if (f.needsAttention || f.stage === 'needs_attention') return 'parked';
  switch (f.stage) {
    case 'awaiting_consultation':
      return f.reminded ? 'reminded' : 'invited';
    case 'awaiting_final_verdict':
      return f.examStatuses.includes('Deferred to Medical Director') ? 'deferred' : undefined;
    case 'awaiting_prescription':
      return 'awaiting_prescription';
    case 'awaiting_tracking':
      return 'awaiting_tracking';
    default:
      return undefined;
  }
}

function remindedIn(history: temporal.api.history.v1.IHistory): boolean {
  return (history.events ?? []).some(
    (e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'resendInvite',
  );
}

export interface CapturedHistory {
  file: string;
  state: WaitState;
  workflowId: string;
  runId: string;
  capturedAt: string;
}

/** Exports up to `perState` histories of each wait state among the journeys the query matches. */
export async function captureHistories(
  client: Client,
  o: { query: string; out: string; perState: number; scanLimit: number },
): Promise<{ captured: CapturedHistory[]; scanned: number }> {
  mkdirSync(o.out, { recursive: true });
  const counts = new Map<WaitState, number>();
  const captured: CapturedHistory[] = [];
  let scanned = 0;
  const full = () => WAIT_STATES.every((s) => (counts.get(s) ?? 0) >= o.perState);
  for await (const w of listRaw(client, `WorkflowType = 'patientJourney' AND (${o.query})`)) {
    if (full() || scanned >= o.scanLimit) break;
    scanned++;
    const statuses = w.searchAttributes.ExamStatus;
    const handle = client.workflow.getHandle(w.workflowId, w.runId);
    const facts: Omit<JourneyFacts, 'reminded'> = {
      running: w.running,
      stage: typeof w.searchAttributes.JourneyStage === 'string' ? w.searchAttributes.JourneyStage : undefined,
      examStatuses: Array.isArray(statuses) ? statuses.map(String) : [],
      needsAttention: w.searchAttributes.NeedsAttention === true,
    };
    // A reminder shows only in the history: fetched for a journey waiting for its consultation, or one we keep.
    const early = waitStateOf({ ...facts, reminded: false });
    if (early === undefined || (counts.get(early) ?? 0) >= o.perState) {
      if (early !== 'invited' || (counts.get('reminded') ?? 0) >= o.perState) continue;
    }
    const history = await handle.fetchHistory();
    const state = waitStateOf({ ...facts, reminded: remindedIn(history) });
    if (state === undefined || (counts.get(state) ?? 0) >= o.perState) continue;
    const n = (counts.get(state) ?? 0) + 1;
    counts.set(state, n);
    const file = n === 1 ? `${state}.json` : `${state}-${n}.json`;
    writeFileSync(path.join(o.out, file), historyToJSON(history));
    captured.push({ file, state, workflowId: w.workflowId, runId: w.runId, capturedAt: new Date().toISOString() });
  }
  writeFileSync(
    path.join(o.out, 'index.json'),
    `${JSON.stringify({ query: o.query, histories: captured }, null, 2)}\n`,
  );
  return { captured, scanned };
}

/**
 * The executions a query matches, read as the server holds them: the client's own list would decode each memo, which
 * the payload codec encrypted; search attributes are never encrypted and hold no patient data.
 */
async function* listRaw(client: Client, query: string) {
  let nextPageToken: Uint8Array | undefined;
  do {
    const page = await client.workflowService.listWorkflowExecutions({
      namespace: client.options.namespace,
      query,
      pageSize: 100,
      nextPageToken,
    });
    for (const e of page.executions ?? []) {
      const searchAttributes: Record<string, unknown> = {};
      for (const [key, payload] of Object.entries(e.searchAttributes?.indexedFields ?? {})) {
        try {
          searchAttributes[key] = JSON.parse(Buffer.from(payload.data ?? new Uint8Array()).toString('utf8'));
        } catch {
          // Not JSON: not one of the journey's attributes.
        }
      }
      yield {
        workflowId: e.execution?.workflowId ?? '',
        runId: e.execution?.runId ?? '',
        running: e.status === temporal.api.enums.v1.WorkflowExecutionStatus.WORKFLOW_EXECUTION_STATUS_RUNNING,
        searchAttributes,
      };
    }
    nextPageToken = page.nextPageToken?.length ? page.nextPageToken : undefined;
  } while (nextPageToken);
}

export interface ReplayResult {
  file: string;
  workflowId: string;
  /** The first mismatch, as the SDK names it; undefined when the history replays. */
  error?: string;
  /** The erasure of the journey's patient: its payloads cannot be read, so it is not replayed (nor a failure). */
  erased?: string;
}

/** A patient-sealed payload's fields, as a history's JSON holds them (base64). */
interface SealedJson {
  metadata: Record<string, string>;
  data?: string;
}

const SEALED_BASE64 = Buffer.from(PATIENT_SEALED_ENCODING).toString('base64');

/** The first payload of a history's JSON sealed for a patient, if any. */
function firstPatientSealed(value: unknown): SealedJson | undefined {
  if (Array.isArray(value)) {
    for (const v of value) {
      const found = firstPatientSealed(v);
      if (found) return found;
    }
    return undefined;
  }
  if (value === null || typeof value !== 'object') return undefined;
  const o = value as Record<string, unknown>;
  const metadata = o.metadata as Record<string, string> | undefined;
  if (metadata && typeof metadata === 'object' && metadata.encoding === SEALED_BASE64)
    return o as unknown as SealedJson;
  for (const v of Object.values(o)) {
    const found = firstPatientSealed(v);
    if (found) return found;
  }
  return undefined;
}

/** The erasure id when the history's patient was erased (its payloads unreadable); undefined otherwise. */
async function erasureOf(json: unknown, keys: PayloadPatientKeys | undefined): Promise<string | undefined> {
  const sealed = firstPatientSealed(json);
  if (!sealed) return undefined;
  if (!keys) {
    throw new UsageError(
      "the histories' payloads are sealed for their patients: set the patient key store (PATIENT_KEY_STORE and its " +
        'settings) to replay them',
    );
  }
  const text = (b64: string | undefined) => Buffer.from(b64 ?? '', 'base64').toString('utf8');
  const opened = await keys.openBytes(
    text(sealed.metadata[METADATA_PATIENT_REF]) as PatientRef,
    text(sealed.metadata[METADATA_DATA_KEY_ID]),
    PAYLOAD_PURPOSE,
    Buffer.from(sealed.data ?? '', 'base64'),
  );
  return opened.state === 'erased' ? opened.erasureId : undefined;
}

/** Replays every history of a folder against the workflows at `workflowsPath`. */
export async function replayFolder(
  folder: string,
  o: { workflowsPath: string; keys: string; patientKeys?: PayloadPatientKeys },
): Promise<ReplayResult[]> {
  const all = readdirSync(folder)
    .filter((f) => f.endsWith('.json') && f !== 'index.json')
    .sort();
  if (all.length === 0) throw new UsageError(`${folder}: no histories (*.json) to replay`);
  const index = readIndex(folder);
  const workflowIdOf = (file: string) => index.get(file) ?? file.replace(/\.json$/, '');
  // A history whose patient was erased cannot be read, so cannot be replayed: named, and left out.
  const results: ReplayResult[] = [];
  const files: string[] = [];
  const parsed = new Map<string, unknown>();
  for (const file of all) {
    const json: unknown = JSON.parse(readFileSync(path.join(folder, file), 'utf8'));
    const erased = await erasureOf(json, o.patientKeys);
    if (erased) results.push({ file, workflowId: workflowIdOf(file), erased });
    else {
      files.push(file);
      parsed.set(file, json);
    }
  }
  const histories = files.map((file) => ({
    workflowId: workflowIdOf(file),
    history: historyFromJSON(parsed.get(file)),
  }));
  const keys = parseEncryptionKeys(o.keys);
  if (keys.length === 0 && files.some((f) => readFileSync(path.join(folder, f), 'utf8').includes(ENCRYPTED_BASE64))) {
    throw new UsageError(
      `${folder}: the histories' payloads are encrypted: set PAYLOAD_ENCRYPTION_KEYS to replay them`,
    );
  }
  if (histories.length === 0) return results;
  const master = keys.length > 0 ? new EncryptionCodec(keys) : undefined;
  const codec = master && o.patientKeys ? new PatientCodec(o.patientKeys, master) : master;
  let i = 0;
  for await (const r of Worker.runReplayHistories(
    {
      workflowsPath: o.workflowsPath,
      ...(codec ? { dataConverter: { payloadCodecs: [codec] } } : {}),
    },
    histories,
  )) {
    results.push({ file: files[i++]!, workflowId: r.workflowId, ...(r.error ? { error: firstLine(r.error) } : {}) });
  }
  return results.sort((a, b) => (a.file < b.file ? -1 : 1));
}

/** `binary/encrypted`, the codec's payload encoding, as it appears in a history's JSON. */
const ENCRYPTED_BASE64 = Buffer.from(ENCRYPTED_ENCODING).toString('base64');

function readIndex(folder: string): Map<string, string> {
  try {
    const index = JSON.parse(readFileSync(path.join(folder, 'index.json'), 'utf8')) as {
      histories?: { file: string; workflowId: string }[];
    };
    return new Map((index.histories ?? []).map((h) => [h.file, h.workflowId]));
  } catch {
    return new Map();
  }
}

function firstLine(err: Error): string {
  return `${err.name}: ${err.message.split('\n')[0]}`;
}

const USAGE = `Usage:
  npm run histories:capture -- --query "<visibility query>" [--out DIR] [--per-state N] [--scan N]
  npm run replay -- <folder> [--workflows PATH]

capture   exports the histories of the journeys the query matches (e.g. "StartTime > '2026-11-01T00:00:00Z'"),
          running and closed, up to N per wait state (default 1): ${WAIT_STATES.join(', ')}.
          Payloads stay as the server holds them (encrypted). --out: default .data/histories/<time>. --scan: look at
          no more than this many journeys (default 5000).
replay    replays every history of the folder against the workflows of this working tree (--workflows: another
          folder of workflow code); PAYLOAD_ENCRYPTION_KEYS decrypts their payloads. Exit status 1 names each
          history that does not replay and its first mismatching command.`;

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  try {
    if (command === 'capture') return await captureCommand(rest);
    if (command === 'replay') return await replayCommand(rest);
    throw new UsageError(command ? `unknown command ${command}` : 'a command is required');
  } catch (err) {
    if (err instanceof UsageError) {
      console.error(`${err.message}\n\n${USAGE}`);
      return 2;
    }
    console.error(err instanceof Error ? err.message : String(err));
    return 1;
  }
}

async function captureCommand(args: string[]): Promise<number> {
  const { values } = parseCommandLine(args, {
    query: { type: 'string' },
    out: { type: 'string' },
    'per-state': { type: 'string' },
    scan: { type: 'string' },
  });
  if (!values.query) throw new UsageError('--query is required');
  const count = (name: string, v: string | undefined, fallback: number) => {
    const n = v === undefined ? fallback : Number(v);
    if (!Number.isInteger(n) || n < 1) throw new UsageError(`--${name} must be a whole number above 0`);
    return n;
  };
  const out = path.resolve(
    values.out ?? path.join(ROOT, '.data', 'histories', new Date().toISOString().replace(/[:.]/g, '-')),
  );
  const { temporal: t } = loadTemporalConfig();
  const connection = await Connection.connect(connectionOptions(t));
  try {
    const client = new Client({ connection, namespace: t.namespace });
    const { captured, scanned } = await captureHistories(client, {
      query: values.query,
      out,
      perState: count('per-state', values['per-state'], 1),
      scanLimit: count('scan', values.scan, 5_000),
    });
    console.log(
      table([['state', 'file', 'workflow'], ...captured.map((c) => [c.state, c.file, c.workflowId])], { rule: true }),
    );
    const missing = WAIT_STATES.filter((s) => !captured.some((c) => c.state === s));
    console.log(`\n${captured.length} histories of ${scanned} journeys looked at, into ${out}`);
    if (missing.length > 0) console.log(`no journey in: ${missing.join(', ')}`);
    return 0;
  } finally {
    await connection.close();
  }
}

async function replayCommand(args: string[]): Promise<number> {
  const { values, positionals } = parseCommandLine(args, { workflows: { type: 'string' } }, { positionals: true });
  if (positionals.length !== 1) throw new UsageError('one folder of histories is required');
  const folder = path.resolve(positionals[0]!);
  const workflowsPath = path.resolve(values.workflows ?? path.join(ROOT, 'src', 'workflows'));
  // The replay worker's own lines (the bundle, its states) are not what the gate reports. The SDK core writes its own
  // warnings (a workflow task failing, as an unguarded change makes it) to stdout, coloured in its default format
  // whatever stdout is: on a terminal that takes colour they stay so, in a pipe or a CI log they are JSON lines.
  Runtime.install({
    logger: new DefaultLogger('WARN'),
    telemetryOptions: {
      logging: {
        filter: { core: 'WARN', other: 'ERROR' },
        ...(process.stdout.isTTY && process.stdout.hasColors() ? {} : { console: { format: 'json' as const } }),
      },
    },
  });
  // The patient keys, read only, for histories sealed for their patients (the configuration's store).
  const keys = process.env.PAYLOAD_ENCRYPTION_KEYS ?? '';
  const patientKeys = keys.trim()
    ? patientKeysFrom(loadPatientKeyConfig().patientKeys, { ring: parseEncryptionKeys(keys), writer: false })
    : undefined;
  await patientKeys?.init();
  try {
    const results = await replayFolder(folder, {
      workflowsPath,
      keys,
      ...(patientKeys ? { patientKeys } : {}),
    });
    for (const r of results) {
      const status = r.error ? 'FAIL' : r.erased ? 'gone' : 'ok  ';
      const why = r.error
        ? `: ${r.error}`
        : r.erased
          ? `: its patient's data was erased (${r.erased}); not replayed`
          : '';
      console.log(`${status} ${r.file} (${r.workflowId})${why}`);
    }
    const failed = results.filter((r) => r.error);
    const erased = results.filter((r) => r.erased);
    const replayed = results.length - erased.length;
    console.log(
      `\n${replayed - failed.length} of ${replayed} histories replay against ${path.relative(ROOT, workflowsPath) || '.'}` +
        (erased.length ? `; ${erased.length} erased, not replayed` : ''),
    );
    return failed.length === 0 ? 0 : 1;
  } finally {
    await patientKeys?.close();
  }
}

if (require.main === module) exitWith(() => main(process.argv.slice(2)));
