// What the event loop and the signal thread say to each other: the thread's start data, a request per signal, the
// reply with its outcome, and the word the thread sends once it is loaded.
import type { Config } from '../config';
import type { CallbackSignal } from '../contract/definitions';

/** What the thread posts once it has loaded and can take signals. */
export const READY = 'ready';

export interface SignalThreadData {
  temporal: Config['temporal'];
  codec: Pick<Config['codec'], 'keys' | 'disabled'>;
  /** Per-patient keys: the thread reads them (the API's main thread writes them) to seal each callback. */
  patientKeys: Config['patientKeys'];
  /** Nice value of this thread (0: as the event loop). */
  nice: number;
}

export interface SignalRequest {
  id: number;
  journeyId: string;
  signal: CallbackSignal;
  timeoutMs: number;
}

export type SignalReply =
  | { id: number; ok: true; alreadyApplied?: true }
  | {
      id: number;
      ok: false;
      gone?: 'journey_finished' | 'journey_not_found';
      unreachable: boolean;
      /** The error's name and message: the SDK's errors name the workflow and the status, never a payload. */
      name: string;
      message: string;
    };
