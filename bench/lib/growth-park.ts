// `npm run bench:growth`'s parking: many GFE journeys started straight through the Temporal client as the API starts
// them (bench/lib/journeys.ts: gfeInput, startJourney), each first bound to its patient's data key as the API binds
// it (the key made and put on the audit trail), so that every payload of the journey is sealed for its patient and
// PostgreSQL holds what a journey started through the API leaves there. Starts run at most a window ahead of the
// journeys parked, as bench/scale.ts and bench/phases/waiting.ts run them: thousands started at once all slow down.
import type { Client } from '@temporalio/client';
import type { Config } from '../../src/config';
import { journeyWorkflowId } from '../../src/contract/definitions';
import { PostgresAuditLog } from '../../src/audit/postgres';
import type { PatientKeys } from '../../src/patient-keys';
import { connectClient } from '../../src/temporal';
import type { ProductionStack } from '../../scripts/lib/production-stack';
import { sleep } from '../../scripts/lib/processes';
import { countWorkflows, gfeInput, pool, startJourney } from './journeys';

/** A client that starts journeys as the API does: the patient keys as a writer, key changes on the audit trail. */
export interface ParkingClient {
  client: Client;
  keys: PatientKeys;
  close(): Promise<void>;
}

/**
 * The parking client of a started production stack: its patient keys (PostgreSQL, the erasure log in the checkpoints'
 * bucket) as a writer whose new keys go on the stack's audit trail, and a Temporal client sealing under them.
 */
export async function parkingClient(stack: ProductionStack, config: Config): Promise<ParkingClient> {
  const trail = new PostgresAuditLog({ connectionString: stack.auditDatabaseUrl, applicationName: 'bench growth' });
  await trail.init();
  const keys = stack.patientKeysAt(stack.patientKeysDatabaseUrl, {
    readOnly: false,
    audit: (event) => trail.append(event),
    subject: 'bench-growth',
  });
  await keys.init();
  const client = await connectClient(config, { patientKeys: keys });
  return {
    client,
    keys,
    close: async () => {
      await client.connection.close().catch(() => undefined);
      await keys.close().catch(() => undefined);
      await trail.close().catch(() => undefined);
    },
  };
}

/**
 * One journey started as the API starts it: bound to its patient's key, started, the binding settled. With
 * `remindAt` (epoch ms), its one reminder is due about then (its offset counts from the invite, made just after).
 */
export async function startBound(
  p: ParkingClient,
  config: Config,
  clinicId: string,
  journeyId: string,
  remindAt?: number,
) {
  const input = gfeInput(config, clinicId, journeyId, 'Waiting');
  if (remindAt !== undefined) {
    input.timings = { ...input.timings, remindersMs: [Math.max(5_000, Math.round(remindAt - Date.now()))] };
  }
  const workflowId = journeyWorkflowId(journeyId);
  const patientRef = p.keys.patientRef(clinicId, input.patient.email);
  await p.keys.bindJourney(workflowId, patientRef, { startingUntil: new Date(Date.now() + 60_000) });
  try {
    await startJourney(p.client, config, input);
  } finally {
    await p.keys.settleStart(workflowId).catch(() => undefined);
  }
}

export interface ParkOptions {
  /** The journey ids to park (each a patient of its own). */
  ids: string[];
  clinicId: string;
  /** A visibility count of the journeys parked (all of them, not only these). */
  parkedQuery: string;
  /** Starts in flight. */
  concurrency: number;
  /** Journeys started ahead of those parked, at most. */
  window: number;
  /** Each journey's one reminder due about then (epoch ms): a wave of reminders (bench/lib/growth-wave.ts). */
  remindAt?: number;
  log: (line: string) => void;
}

/**
 * Parks the journeys; resolves once every start was made (not once all are parked: waitParked does that), with the
 * starts that failed (counted, never their patients).
 */
export async function parkThroughClient(
  p: ParkingClient,
  config: Config,
  o: ParkOptions,
): Promise<{ started: number; failed: number; firstError?: string }> {
  const before = await countWorkflows(p.client, o.parkedQuery);
  let parked = 0;
  let started = 0;
  let failed = 0;
  let firstError: string | undefined;
  let last = performance.now();
  const t0 = performance.now();
  const poll = setInterval(() => {
    void countWorkflows(p.client, o.parkedQuery).then(
      (c) => (parked = c - before),
      () => undefined,
    );
  }, 1_000);
  try {
    await pool(o.ids, o.concurrency, async (id) => {
      while (started - parked > o.window) await sleep(250);
      started++;
      try {
        await startBound(p, config, o.clinicId, id, o.remindAt);
      } catch (err) {
        failed++;
        // The error's class and message only: they name the workflow id at most, never the patient.
        firstError ??= err instanceof Error ? `${err.name}: ${err.message}`.slice(0, 300) : 'unknown error';
      }
      if (performance.now() - last > 15_000) {
        last = performance.now();
        const s = (performance.now() - t0) / 1000;
        o.log(`  parking: ${started} started, ${parked} parked (${(parked / s).toFixed(1)}/s)`);
      }
    });
  } finally {
    clearInterval(poll);
  }
  return { started, failed, ...(firstError ? { firstError } : {}) };
}
