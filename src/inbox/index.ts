// The callback path (callback-path.ts) and the inbox it stores callbacks in: files under DATA_DIR (one host) or
// PostgreSQL (several API replicas).

export * from './types';
export { FileInbox, FileDeadLetters } from './files';
export { PostgresInbox, PostgresDeadLetters, migrate } from './postgres';
export { InboxForwarder, signalJourney, temporalUnreachable, journeyGone } from './forwarder';
export type { InboxForwarderOptions } from './forwarder';
export { SignalThread } from './signaller';

export { createInbox, sealerKeys, type InboxHooks } from './create';
export { CallbackPath, CallbackNotStoredError, CALLBACK_MAX_BYTES } from './callback-path';
export type { Acceptance, CallbackPathOptions, Refusal, ReplayOutcome } from './callback-path';
export { callbackSeries, type CallbackSeries } from './metrics';
