// Work over many items that gives the event loop back every few milliseconds. A forwarder's claim can hold thousands
// of callbacks, each parsed and opened (the payload keys, then the patient's): done in one go, or in a chain of
// awaits that resolve at once (microtasks, which run before any I/O), it holds every acknowledgement waiting behind
// it for tens of milliseconds. Sliced, the webhook's requests are read and answered between slices.
import { setImmediate as nextTurn } from 'node:timers/promises';

/** How long a slice of work may run before the event loop gets a turn. */
export const SLICE_MS = 2;

/** Runs `each` over the items in order, awaiting each, yielding to the event loop once a slice has run `sliceMs`. */
export async function eachYielding<T>(
  items: Iterable<T>,
  each: (item: T) => void | Promise<void>,
  sliceMs = SLICE_MS,
): Promise<void> {
  let sliceStart = performance.now();
  for (const item of items) {
    if (performance.now() - sliceStart >= sliceMs) {
      await nextTurn();
      sliceStart = performance.now();
    }
    await each(item);
  }
}
