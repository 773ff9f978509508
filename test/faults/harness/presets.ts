// The sizes of the fault suite: the CI part that runs in `npm test` (about 2-3 minutes on 2 cores) and the full
// run of `npm run test:faults` (100+ journeys, under 15 minutes), which writes docs/reliability.md; and the same on the
// production topology (`--topology production`, its own section of docs/reliability.md; `--ci` a small one).
import type { SuiteOptions } from './suite';

/** The sandbox's test provider acts fast; its callbacks are retried long enough to outlast any API restart. */
export const SANDBOX_ENV: Record<string, string> = {
  // Long enough for callbacks to keep coming during an outage of the API or of Temporal, short enough for the run.
  SANDBOX_PROVIDER_DELAY_MS: '1500',
  SANDBOX_PRESCRIPTION_DELAY_MS: '1000',
  SANDBOX_SHIPMENT_DELAY_MS: '1000',
  // A refused connection (API down) is a failed attempt like a non-200: retried after 0.5, 1, 2, ... 256 s.
  SANDBOX_CALLBACK_RETRIES: '10',
  SANDBOX_CALLBACK_RETRY_BASE_MS: '500',
  SANDBOX_CALLBACK_TIMEOUT_MS: '5000',
};

export const SANDBOX_FAULTS: SuiteOptions['sandboxFaults'] = {
  errorRate: 0.08,
  latencyMs: 250,
  dropAfterInviteRate: 0.08,
  duplicateCallbacks: 3,
  outOfOrderCallbacks: true,
  callbackDelayMs: 1_000,
  // Each invite's callbacks in the next of the layouts public receivers were written for (docs/callback-layouts.md):
  // event numbers as strings, other verdict spellings, event 2 once per drug, event 3 as a tracking array without
  // ids, all of them at once. The judge keys callbacks by the sandbox's own ids, whatever the layout carried.
  callbackLayout: 'rotate',
};

export const CI_RUN = {
  name: 'ci',
  journeys: 24,
  // Faults end before the last journeys start: each one aims at a journey in flight.
  startWindowMs: 70_000,
  faultWindowMs: 60_000,
  processFaults: {
    workerKills: 2,
    temporalRestarts: 1,
    apiRestarts: 2,
    workerDownMs: [500, 2_000],
    workerKillAfterStartMs: 700,
    apiKillDuringTemporalOutage: true,
    callbacksDueAfterStartMs: [1_500, 3_000],
    temporalDownMs: [15_000, 17_000],
    apiDownMs: [1_000, 3_000],
  },
  sandboxFaults: SANDBOX_FAULTS,
  sandboxEnv: SANDBOX_ENV,
  settleTimeoutMs: 150_000,
  operatorRounds: 3,
  operatorSettleTimeoutMs: 90_000,
  deadlineMs: 450_000,
  seed: 20_240_501,
  ports: { temporal: 20_633, temporalHttp: 20_634, temporalMetrics: 20_635, sandbox: 20_610, api: 20_700 },
} satisfies SuiteOptions;

export const FULL_RUN = {
  name: 'full',
  journeys: 120,
  startWindowMs: 270_000,
  faultWindowMs: 250_000,
  processFaults: {
    workerKills: 6,
    temporalRestarts: 2,
    apiRestarts: 4,
    workerDownMs: [500, 3_000],
    workerKillAfterStartMs: 700,
    apiKillDuringTemporalOutage: true,
    callbacksDueAfterStartMs: [1_500, 3_000],
    temporalDownMs: [12_000, 25_000],
    apiDownMs: [1_000, 5_000],
  },
  sandboxFaults: SANDBOX_FAULTS,
  sandboxEnv: SANDBOX_ENV,
  settleTimeoutMs: 300_000,
  operatorRounds: 4,
  operatorSettleTimeoutMs: 120_000,
  deadlineMs: 840_000,
  seed: 20_240_501,
  ports: { temporal: 20_233, temporalHttp: 20_234, temporalMetrics: 20_235, sandbox: 20_010, api: 20_300 },
} satisfies SuiteOptions;

/**
 * The production topology (PostgreSQL, the Temporal server, two workers, two API replicas behind HAProxy, MinIO):
 * every kind of its faults at least twice, one at a time, while journeys of the four scenarios run, with the same
 * sandbox faults and medical director as the dev-server runs. Ports from 21000.
 */
export const PRODUCTION_RUN = {
  name: 'production',
  topology: 'production',
  journeys: 72,
  startWindowMs: 240_000,
  faultWindowMs: 220_000,
  production: {
    portBase: 21_000,
    faults: {
      workerKills: 3,
      apiReplicaKills: 3,
      postgresRestarts: 2,
      temporalRestarts: 2,
      workerKillAfterStartMs: 700,
      callbacksDueAfterStartMs: [1_500, 3_000],
      workerDownMs: [500, 3_000],
      apiDownMs: [1_000, 5_000],
      postgresDownMs: [3_000, 8_000],
      temporalDownMs: [5_000, 12_000],
    },
  },
  sandboxFaults: SANDBOX_FAULTS,
  sandboxEnv: SANDBOX_ENV,
  settleTimeoutMs: 420_000,
  operatorRounds: 4,
  operatorSettleTimeoutMs: 150_000,
  deadlineMs: 1_500_000,
  seed: 20_240_501,
} satisfies SuiteOptions;

/** A small run on the production topology: one fault of each kind, 16 journeys. Ports from 21500. */
export const PRODUCTION_CI_RUN = {
  ...PRODUCTION_RUN,
  name: 'production-ci',
  journeys: 16,
  startWindowMs: 80_000,
  faultWindowMs: 70_000,
  production: {
    portBase: 21_500,
    faults: {
      ...PRODUCTION_RUN.production.faults,
      workerKills: 1,
      apiReplicaKills: 1,
      postgresRestarts: 1,
      temporalRestarts: 1,
    },
  },
  settleTimeoutMs: 240_000,
  operatorRounds: 3,
  operatorSettleTimeoutMs: 120_000,
  deadlineMs: 720_000,
} satisfies SuiteOptions;
