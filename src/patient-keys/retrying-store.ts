// The patient key store as PatientKeys uses it: each read and write tried again while the store is unavailable (a lost
// connection, a server shutting down or in recovery, a demoted primary that refuses writes: a failover), a bounded few
// times with a short jittered wait, then refused as StoreUnavailableError('patient-keys'), which the API answers 503
// with Retry-After. Every operation of a store is safe to repeat: an insert keeps the first writer's row (a key, a
// setting, an erasure request), a binding answers the binding held, a destroy keeps its tombstone, an update sets a state.
import {
  retryWhileUnavailable,
  StoreUnavailableError,
  isUnavailable,
  type RetryPolicy,
} from '../audit/store-unavailable';
import type { PatientKeyStore } from './types';

/** What is not retried: opening and closing the store (a start fails and says why; a stop does not wait). */
const AS_IS = new Set<PropertyKey>(['init', 'close']);

/** The store unavailable after the retries, as the API names it; anything else as it came. */
export function keyStoreFailure(err: unknown): unknown {
  if (err instanceof StoreUnavailableError || !isUnavailable(err)) return err;
  return new StoreUnavailableError(
    'patient-keys',
    'the patient key store is unavailable (its database could not be reached or may not write now)',
    { cause: err },
  );
}

export function retryingStore(store: PatientKeyStore, policy: RetryPolicy = {}): PatientKeyStore {
  return new Proxy(store, {
    get(target, prop, receiver) {
      const value: unknown = Reflect.get(target, prop, receiver);
      if (typeof value !== 'function') return value;
      const method = value as (...args: unknown[]) => Promise<unknown>;
      // Called on the store itself, not on this proxy: a store's private fields are its own.
      if (AS_IS.has(prop)) return method.bind(target);
      return (...args: unknown[]) =>
        retryWhileUnavailable(() => method.apply(target, args), policy).catch((err: unknown) => {
          throw keyStoreFailure(err);
        });
    },
  });
}
