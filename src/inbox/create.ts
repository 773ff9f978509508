// The inbox the configuration asks for: files under DATA_DIR (one host) or PostgreSQL (several API replicas).
import type { RecordSealer } from '../codec/at-rest';
import type { Config } from '../config';
import { FileInbox } from './files';
import { PostgresInbox } from './postgres';
import type { CallbackInbox } from './types';

export interface InboxHooks {
  /** Each group-commit write: callbacks it stored and its time in seconds (for the batch and write histograms). */
  onBatch?: (size: number, seconds: number) => void;
  onListenError?: (err: unknown) => void;
  now?: () => Date;
}

export function createInbox(
  config: Pick<Config, 'inbox'>,
  sealer: RecordSealer,
  hooks: InboxHooks = {},
): CallbackInbox {
  const o = config.inbox;
  const common = {
    sealer,
    ...(hooks.onBatch ? { onBatch: hooks.onBatch } : {}),
    ...(hooks.now ? { now: hooks.now } : {}),
  };
  if (o.store === 'postgres') {
    return new PostgresInbox({
      connectionString: o.databaseUrl,
      poolSize: o.poolSize,
      synchronousSettles: o.settles === 'durable',
      ...common,
      ...(hooks.onListenError ? { onListenError: hooks.onListenError } : {}),
    });
  }
  return new FileInbox({
    dir: o.dir,
    deadLetterDir: o.deadLetterDir,
    legacySpoolDir: o.legacySpoolDir,
    ...(o.settles === 'durable' ? { settleDelayMs: 0 } : {}),
    ...common,
  });
}

/** The at-rest key ring of a configuration: the payload keys whenever there are any (as the payload codec does). */
export function sealerKeys(config: Pick<Config, 'codec'>) {
  return config.codec.keys;
}
