// What every phase of the bench gets: options, the running stack, a Temporal client, folders, the clock.
import type { Client } from '@temporalio/client';
import type { Config } from '../../src/config';
import type { BenchStack } from './stack';

export type Phase = 'cold' | 'tests' | 'alone' | 'webhook' | 'burst' | 'outage' | 'throughput' | 'tuning' | 'waiting';
export const PHASES: Phase[] = [
  'cold',
  'tests',
  'alone',
  'webhook',
  'burst',
  'outage',
  'throughput',
  'tuning',
  'waiting',
];

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
  throughputJourneys: number;
  /** Starts in flight at once (API and raw alike). */
  startConcurrency: number;
  waitingJourneys: number;
  providerDelayMs: number;
  /** Niceness of the Temporal server, the worker and the sandbox (StackOptions.backgroundNice). */
  backgroundNice: number;
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
