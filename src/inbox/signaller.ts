// The forwarder's signals from a thread of their own (signal-thread.ts), so the webhook's acknowledgements do not wait
// behind their encoding, encryption and gRPC work on the API's event loop.
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import type { Config } from '../config';
import type { CallbackSignal } from '../contract/definitions';
import type { SignalOutcome } from './forwarder';
import { READY, type SignalReply, type SignalRequest, type SignalThreadData } from './signal-protocol';

/** One callback signalled to its journey, bounded by `timeoutMs`; never rejects. */
export type Signaller = (journeyId: string, signal: CallbackSignal, timeoutMs: number) => Promise<SignalOutcome>;

/** An error that crossed from the signal thread: its name and message, nothing else. */
export class ThreadSignalError extends Error {
  constructor(name: string, message: string) {
    super(message);
    this.name = name;
  }
}

const THREAD_GONE = 'the signal thread exited before answering; the callback stays in the inbox and is signalled again';

/**
 * Signals from a worker thread with its own Temporal connection. A thread that dies fails the signals it had (they
 * stay in the inbox and are retried) and is started again on the next signal.
 */
export class SignalThread {
  #worker: Worker | undefined;
  #next = 0;
  readonly #pending = new Map<number, (outcome: SignalOutcome) => void>();
  #closed = false;

  constructor(
    private readonly config: Pick<Config, 'temporal' | 'codec' | 'patientKeys'>,
    private readonly options: { nice: number; onExit?: (code: number) => void } = { nice: 0 },
  ) {}

  readonly signal: Signaller = (journeyId, signal, timeoutMs) =>
    new Promise<SignalOutcome>((resolve) => {
      if (this.#closed) {
        resolve(gone('the signal thread is closed'));
        return;
      }
      const id = ++this.#next;
      this.#pending.set(id, resolve);
      const request: SignalRequest = { id, journeyId, signal, timeoutMs };
      this.#thread().postMessage(request);
    });

  /**
   * Starts the thread now and resolves once it has loaded (its Temporal client and codec: a second or so of CPU), so
   * that cost is paid while the API starts rather than beside the webhook's first acknowledgements. Without it the
   * thread starts with the first signal. Rejects when the thread exits before it is ready.
   */
  start(timeoutMs = 60_000): Promise<void> {
    const worker = this.#thread();
    return new Promise<void>((resolve, reject) => {
      const done = (err?: Error) => {
        clearTimeout(timer);
        worker.off('message', onMessage);
        worker.off('exit', onExit);
        if (err) reject(err);
        else resolve();
      };
      const onMessage = (m: unknown) => {
        if (m === READY) done();
      };
      const onExit = (code: number) => done(new Error(`the signal thread exited while starting (code ${code})`));
      const timer = setTimeout(
        () => done(new Error(`the signal thread was not ready within ${timeoutMs} ms`)),
        timeoutMs,
      );
      worker.on('message', onMessage);
      worker.on('exit', onExit);
    });
  }

  /** Lets the signals in flight answer, then ends the thread. */
  async close(): Promise<void> {
    this.#closed = true;
    const worker = this.#worker;
    if (!worker) return;
    const until = Date.now() + 5_000;
    while (this.#pending.size > 0 && Date.now() < until) await new Promise((r) => setTimeout(r, 10));
    const exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
    worker.postMessage('close');
    const timer = setTimeout(() => void worker.terminate(), 2_000);
    await exited;
    clearTimeout(timer);
  }

  #thread(): Worker {
    if (this.#worker) return this.#worker;
    const data: SignalThreadData = {
      temporal: this.config.temporal,
      codec: { keys: this.config.codec.keys, disabled: this.config.codec.disabled },
      patientKeys: this.config.patientKeys,
      nice: this.options.nice,
    };
    const worker = spawn(data);
    worker.on('message', (reply: SignalReply | typeof READY) => {
      if (reply === READY) return;
      const resolve = this.#pending.get(reply.id);
      if (!resolve) return;
      this.#pending.delete(reply.id);
      resolve(
        reply.ok
          ? { ok: true, ...(reply.alreadyApplied ? { alreadyApplied: true as const } : {}) }
          : {
              ok: false,
              ...(reply.gone ? { gone: reply.gone } : {}),
              unreachable: reply.unreachable,
              err: new ThreadSignalError(reply.name, reply.message),
            },
      );
    });
    worker.on('error', () => undefined); // 'exit' follows and fails what was pending
    worker.on('exit', (code) => {
      if (this.#worker === worker) this.#worker = undefined;
      for (const resolve of this.#pending.values()) resolve(gone(THREAD_GONE));
      this.#pending.clear();
      if (!this.#closed) this.options.onExit?.(code);
    });
    worker.unref();
    this.#worker = worker;
    return worker;
  }
}

function gone(message: string): SignalOutcome {
  return { ok: false, unreachable: true, err: new ThreadSignalError('SignalThreadError', message) };
}

/** The thread's module: compiled JavaScript as it is, TypeScript (development, tests) through tsx's require hook. */
function spawn(workerData: SignalThreadData): Worker {
  const file = path.join(__dirname, `signal-thread${path.extname(__filename)}`);
  if (file.endsWith('.js')) return new Worker(file, { workerData });
  const code = `require('tsx/cjs'); require(${JSON.stringify(file)});`;
  return new Worker(code, { eval: true, workerData });
}
