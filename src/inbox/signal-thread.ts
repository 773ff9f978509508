// The forwarder's signals, sent from a thread of their own: encoding and encrypting each callback, the gRPC call and
// its answer are CPU the webhook's event loop would otherwise share. The thread runs at a lower CPU priority than the
// event loop (Linux keeps a nice value per thread), so when cores are short the acknowledgements come first. Started
// by SignalThread (signaller.ts); it answers each request with the outcome, classified here.
import { setPriority } from 'node:os';
import { parentPort, workerData } from 'node:worker_threads';
import type { Config } from '../config';
import { lazyClient } from '../temporal';
import { signalJourney, temporalUnreachable } from './forwarder';
import { READY, type SignalReply, type SignalRequest, type SignalThreadData } from './signal-protocol';

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
  const temporal = lazyClient({ temporal: data.temporal, codec: { ...data.codec, keys } as Config['codec'] });
  port.on('message', (request: SignalRequest | 'close') => {
    if (request === 'close') {
      void temporal.connection.close().finally(() => port.close());
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
            message: r.err instanceof Error ? r.err.message : String(r.err),
          };
      port.postMessage(reply);
    });
  });
  port.postMessage(READY);
}

main();
