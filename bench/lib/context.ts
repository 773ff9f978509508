// What every phase of the bench gets: options, the running stack, a Temporal client, folders, the clock.
import type { Client } from '@temporalio/client';
import type { Config } from '../../src/config';
import type { BenchStack } from './stack';

export type Phase =
  | 'cold'
  | 'tests'
  | 'alone'
  | 'layers'
  | 'webhook'
  | 'burst'
  | 'outage'
  | 'sustained'
  | 'throughput'
  | 'tuning'
  | 'waiting';
export const PHASES: Phase[] = [
  'cold',
  'tests',
  'alone',
  'layers',
  'webhook',
  'burst',
  'outage',
  'sustained',
  'throughput',
  'tuning',
  'waiting',
];
/** Phases that run only when named in --only: the sustained load alone takes the better part of an hour. */
export const OPT_IN_PHASES: Phase[] = ['sustained'];

export interface Options {
  phases: Set<Phase>;
  /** Callbacks per second of the webhook levels. */
  levels: number[];
  levelSeconds: number;
  warmupSeconds: number;
  /** Journeys the webhook load is spread over. */
  hookJourneys: number;
  /** Bursts of 200 callbacks per condition (inbox store x Temporal up or down). */
  burstRepeats: number;
  /** The inbox stores measured (files, postgres). */
  stores: ('files' | 'postgres')[];
  /** The postgres inbox's PostgreSQL: a primary with a synchronous standby (the production shape), or one server. */
  database: 'synchronous' | 'single';
  throughputJourneys: number;
  /** Rounds of the throughput runs (raw, visible, GFE; every second round mirrored): 4 unless set (1 quick). */
  throughputRounds?: number;
  /** Starts in flight at once (API and raw alike). */
  startConcurrency: number;
  waitingJourneys: number;
  providerDelayMs: number;
  /** Niceness of the Temporal server, the worker and the sandbox (StackOptions.backgroundNice). */
  backgroundNice: number;
  /**
   * `group` (the default): those processes also go into a cpu cgroup of the lowest weight where one can be made
   * (scripts/lib/processes.ts backgroundCpuGroup); `nice`: niceness alone.
   */
  backgroundCpu: 'group' | 'nice';
  /** The cgroup they went into, when `group` could be had here (for the report). */
  backgroundGroup?: string;
  /** The worker's memory limit in MiB, as a container's (0: none, the host's memory). */
  workerMemoryMiB: number;
  /**
   * Where the Temporal dev server keeps its SQLite file: `memory` (a folder in /dev/shm, the default where there is
   * one), as a deployment's Temporal keeps its store on machines of its own, not on the disk the inbox flushes to; or
   * `disk` (the run's work folder, beside the inbox).
   */
  temporalStore: 'memory' | 'disk';
  /** The folder the dev server's file went into, when `memory` could be had here (for the report). */
  temporalStoreDir?: string;
  /** The memory cgroup the worker ran in, when one could be made here (for the report). */
  workerMemoryGroup?: string;
  npmTest: 'first' | 'full' | 'skip';
  /** Hard limit of the whole run. */
  timeoutMs: number;
  out: string | undefined;
  svg: string | undefined;
  portBase: number;
  keepData: boolean;
  /** --quick: small sizes. */
  quickSizes: boolean;
  /** Adds the keep-alive and SQLite pragma A/Bs to the tuning phase. */
  extraAb: boolean;
  /** The sustained phase: its steady rates (callbacks/s), each held this long, then at most this long to drain. */
  sustainedRates: number[];
  sustainedSeconds: number;
  sustainedDrainSeconds: number;
  /** Where the sustained phase's inbox-depth plot goes (undefined: beside the report; see run.ts). */
  sustainedSvg: string | undefined;
  /**
   * --forwarder-policies: each value a restart of the API with FORWARDER_POLICY=<value> for the sustained phase
   * (empty: the API's own default, no variable set).
   */
  forwarderPolicies: string[];
}

export interface Ctx {
  o: Options;
  stack: BenchStack;
  config: Config;
  client: Client;
  workDir: string;
  logDir: string;
  runTag: string;
  log(message: string): void;
  /** Milliseconds left before the run's hard limit (minus what the report needs). */
  remainingMs(): number;
}
