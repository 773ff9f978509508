// The forwarder's signals, sent from a thread of their own: encoding and encrypting each callback, the gRPC call and
// its answer are CPU the webhook's event loop would otherwise share. The thread runs at a lower CPU priority than the
// event loop (Linux keeps a nice value per thread), so when cores are short the acknowledgements come first. Started
// by SignalThread (signaller.ts); it answers each request with the outcome, classified here.
import { setPriority } from 'node:os';
import { parentPort, workerData } from 'node:worker_threads';
import type { Config } from '../config';
import { PatientKeysWhenReady } from '../codec/patient-codec';
import { patientKeysFrom } from '../patient-keys/from-settings';
import { lazyClient } from '../temporal';
import { signalJourney, temporalUnreachable } from './forwarder';
import { READY, type SignalReply, type SignalRequest, type SignalThreadData } from './signal-protocol';

/**
 * The error as the main thread logs it: its message and, for the SDK's wrapped errors, the gRPC status beneath (the
 * SDK's "Failed to signal Workflow" alone does not say whether the server refused or could not be reached).
 */
function errorText(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const cause = err.cause;
  if (!(cause instanceof Error) || cause.message === err.message) return err.message;
  return `${err.message}: ${cause.message}`;
}

function main(): void {
  const port = parentPort;
  if (!port) throw new Error('signal-thread runs as a worker thread');
  const data = workerData as SignalThreadData;
  if (data.nice > 0) {
    try {
      setPriority(data.nice); // this thread only, on Linux
    } catch {
      // Not allowed here: the thread runs at the event loop's priority.
    }
  }
  // Keys cross the thread boundary as plain bytes.
  const keys = data.codec.keys.map((k) => ({ ...k, key: Buffer.from(k.key) }));
  // A reader of the patient keys (no audit trail here: it makes and destroys none); opened before the first signal.
  const patientKeys = patientKeysFrom(data.patientKeys, { ring: keys, writer: false });
  const opened = patientKeys?.init();
  const ready = new PatientKeysWhenReady();
  void (opened ?? Promise.resolve()).then(
    () => ready.provide(patientKeys),
    (err: unknown) => {
      // Nothing is signalled without them (a journey's callback is sealed for its patient): the thread ends, and the
      // next signal starts another, which tries again.
      ready.fail(err);
      setTimeout(() => process.exit(1), 100);
    },
  );
  const temporal = lazyClient(
    { temporal: data.temporal, codec: { ...data.codec, keys } as Config['codec'] },
    patientKeys ? { patientKeys: ready } : {},
  );
  port.on('message', (request: SignalRequest | 'close') => {
    if (request === 'close') {
      void temporal.connection
        .close()
        .then(() => patientKeys?.close())
        .finally(() => port.close());
      return;
    }
    void signalJourney(temporal, request.journeyId, request.signal, request.timeoutMs).then((r) => {
      const reply: SignalReply = r.ok
        ? { id: request.id, ok: true, ...(r.alreadyApplied ? { alreadyApplied: true as const } : {}) }
        : {
            id: request.id,
            ok: false,
            ...(r.gone ? { gone: r.gone } : {}),
            unreachable: temporalUnreachable(r.err),
            name: r.err instanceof Error ? r.err.name : 'Error',
            message: errorText(r.err),
          };
      port.postMessage(reply);
    });
  });
  port.postMessage(READY);
}

main();
