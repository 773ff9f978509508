// Acknowledgement pressure is raised by slow answers to callbacks the webhook took, never by its refusals: requests to
// made-up webhook addresses, wrong tokens, bodies kept as dead letters or too large to read, a store that fails. Each
// request here trickles its body (three pieces 60 ms apart), so every answer that reads it is at least 120 ms against a
// 30 ms threshold, and one answered before its body is read is held 60 ms in the API first: a slower machine only makes
// the refusals slower, and the taken callbacks still slow.
import net from 'node:net';
import { Readable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { AckPressure } from '../../src/inbox/ack-pressure';
import { buildApp, type ApiApp } from '../../src/api/app';
import { webhookToken } from '../../src/webhook-url';
import { event1, fakeExamService, tempDataDir, testConfig, unreachableTemporal, webhookPath } from '../api/support';

const THRESHOLD_MS = 30;
const GAP_MS = 60;
const KEPT_MAX_BYTES = 2 * 1024 * 1024;

/** A body sent in three pieces, `GAP_MS` apart: its answer cannot come sooner than 2 × GAP_MS after its headers. */
function trickled(body: string): Readable {
  const third = Math.ceil(body.length / 3);
  const pieces = [body.slice(0, third), body.slice(third, 2 * third), body.slice(2 * third)];
  return Readable.from(
    (async function* () {
      for (const [i, piece] of pieces.entries()) {
        if (i > 0) await sleep(GAP_MS);
        yield Buffer.from(piece);
      }
    })(),
  );
}

describe('acknowledgement pressure and refusals', () => {
  const dirs = tempDataDir();
  let api: ApiApp;
  let appendFails = false;

  beforeAll(async () => {
    api = await buildApp({
      config: testConfig(dirs.dataDir, {
        FORWARDER_ACK_PRESSURE_MS: String(THRESHOLD_MS),
        WEBHOOK_MAX_BODY_BYTES: String(KEPT_MAX_BYTES),
      }),
      temporal: await unreachableTemporal(),
      examServiceFor: () => fakeExamService(),
      startForwarder: false,
    });
    // The API slow before any route hook runs (its CPU taken), for the requests that ask.
    api.addHook('onRequest', (request, _reply, done) => {
      const until = performance.now() + Number(request.headers['x-busy-ms'] ?? 0);
      while (performance.now() < until) {
        // spin
      }
      done();
    });
    const inbox = api.callbacks.inbox;
    const append = inbox.append.bind(inbox);
    inbox.append = async (...args) => {
      if (appendFails) throw Object.assign(new Error('connection terminated'), { code: '57P01' });
      return append(...args);
    };
    await api.ready();
  });
  // Each case from a clean slate (nothing the case before left).
  beforeEach(() => {
    appendFails = false;
    api.callbacks.pressure = new AckPressure(THRESHOLD_MS);
  });
  afterAll(async () => {
    await api.close();
    dirs.cleanup();
  });

  /** How many answers the acknowledgement histogram holds. */
  async function ackCount(): Promise<number> {
    const metrics = (await api.inject({ method: 'GET', url: '/metrics' })).body;
    return Number(/^journey_api_webhook_ack_seconds_count (\d+)$/m.exec(metrics)?.[1]);
  }

  /** Five trickled requests at once; their statuses, each checked to have been slow from the sender's side. */
  async function slowBurst(urls: string[], body: (i: number) => string, busyMs = 0): Promise<number[]> {
    return Promise.all(
      urls.map(async (url, i) => {
        const t0 = performance.now();
        const res = await api.inject({
          method: 'POST',
          url,
          headers: { 'content-type': 'application/json', 'x-busy-ms': String(busyMs) },
          payload: trickled(body(i)),
        });
        expect(performance.now() - t0).toBeGreaterThan(THRESHOLD_MS);
        return res.statusCode;
      }),
    );
  }
  const five = (url: (i: number) => string) => [0, 1, 2, 3, 4].map(url);
  const callback = (i: number) => JSON.stringify(event1(83_000 + i));

  it('is not raised by slow requests to made-up webhook addresses, nor counted as acknowledgements', async () => {
    const before = await ackCount();
    const statuses = await slowBurst(
      [
        ...five((i) => `/webhooks/exam-service/made-up-${i}/${'x'.repeat(43)}`),
        // A real journey's address shape with another journey's token.
        ...five((i) => `/webhooks/exam-service/jrefused${i}/${webhookToken('jother', 'another-secret')}`),
      ],
      callback,
      GAP_MS,
    );
    expect(statuses).toEqual(new Array(10).fill(404));
    expect(api.callbacks.pressure.underPressure()).toBe(false);
    expect(await ackCount()).toBe(before);
  });

  it('is not raised by slow bodies the webhook kept as dead letters or would not read', async () => {
    const before = await ackCount();
    const notJson = await slowBurst(
      five((i) => webhookPath(`jdead${i}`)),
      () => 'not json at all',
    );
    const overACallback = await slowBurst(
      five((i) => webhookPath(`jbig${i}`)),
      () => JSON.stringify({ event: 1, pad: 'x'.repeat(1024 * 1024) }),
    );
    const overAnyBody = await slowBurst(
      five((i) => webhookPath(`jhuge${i}`)),
      () => 'x'.repeat(KEPT_MAX_BYTES + 1),
    );
    expect([notJson, overACallback, overAnyBody]).toEqual([
      new Array(5).fill(400),
      new Array(5).fill(413),
      new Array(5).fill(413),
    ]);
    expect(api.callbacks.pressure.underPressure()).toBe(false);
    expect(await ackCount()).toBe(before);
  });

  it('is not raised by slow callbacks the inbox could not store', async () => {
    appendFails = true;
    const before = await ackCount();
    const statuses = await slowBurst(
      five((i) => webhookPath(`jdown${i}`)),
      callback,
    );
    expect(statuses).toEqual(new Array(5).fill(503));
    expect(api.callbacks.pressure.underPressure()).toBe(false);
    expect(await ackCount()).toBe(before);
  });

  it('is raised by slow callbacks the webhook took, each counted as an acknowledgement', async () => {
    const before = await ackCount();
    const statuses = await slowBurst(
      five((i) => webhookPath(`jtaken${i}`)),
      callback,
    );
    expect(statuses).toEqual(new Array(5).fill(200));
    expect(api.callbacks.pressure.underPressure()).toBe(true);
    expect(await ackCount()).toBe(before + 5);
  });

  it('answers a wrong token before reading its body', async () => {
    await api.listen({ host: '127.0.0.1', port: 0 });
    const { port } = api.server.address() as net.AddressInfo;
    const socket = net.connect(port, '127.0.0.1');
    try {
      // A body the webhook would read is announced and barely begun: only an answer that does not wait for it comes.
      socket.write(
        `POST /webhooks/exam-service/jnobody/${'x'.repeat(43)} HTTP/1.1\r\nHost: 127.0.0.1\r\n` +
          `Content-Type: application/json\r\nContent-Length: ${KEPT_MAX_BYTES}\r\n\r\n{"event":1`,
      );
      const head = await new Promise<string>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error('no answer before the body was sent')), 5_000);
        socket.once('data', (chunk: Buffer) => {
          clearTimeout(timer);
          resolve(chunk.toString('latin1'));
        });
        socket.once('error', reject);
      });
      expect(head).toMatch(/^HTTP\/1\.1 404 /);
    } finally {
      socket.destroy();
    }
  });
});
