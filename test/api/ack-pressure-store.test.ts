// Acknowledgement pressure counts the webhook's own time: answers slowed by the store's durable write (a disk's flush
// stall) make no surge, while answers slowed in the webhook itself (its CPU taken) do. Through a rise of callbacks
// the time in all counts too: a burst whose writes waited is one the webhook felt.
// Through the real webhook route and the real file inbox. The margins are wide (a 100 ms threshold against 400 ms
// writes and 250 ms of the webhook's own work) and the route is warmed up first, so a busy machine cannot decide it:
// the answers' own part would have to be starved for 100 ms of the 400 they wait.
import { AckPressure } from '../../src/inbox/ack-pressure';
import { buildApp, type ApiApp } from '../../src/api/app';
import { event1, fakeExamService, tempDataDir, testConfig, unreachableTemporal, webhookPath } from './support';

/** Holds the thread for `ms` (the webhook's own work, slowed). */
function busy(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until) {
    // spin
  }
}

const THRESHOLD_MS = 100;

describe('acknowledgement pressure and the store', () => {
  const dirs = tempDataDir();
  let api: ApiApp;
  let storeDelayMs = 0;
  let handlerBusyMs = 0;

  beforeAll(async () => {
    api = await buildApp({
      config: testConfig(dirs.dataDir, { FORWARDER_ACK_PRESSURE_MS: String(THRESHOLD_MS) }),
      temporal: await unreachableTemporal(),
      examServiceFor: () => fakeExamService(),
      startForwarder: false,
    });
    api.addHook('preHandler', (_request, _reply, done) => {
      if (handlerBusyMs) busy(handlerBusyMs);
      done();
    });
    const inbox = api.callbacks.inbox;
    const append = inbox.append.bind(inbox);
    inbox.append = async (...args) => {
      if (storeDelayMs) await new Promise((r) => setTimeout(r, storeDelayMs));
      return append(...args);
    };
    await api.ready();
    // Warm-up: the route's first answers compile its code and schemas (slow on a cold, busy machine).
    await burst(100);
  });
  // Each case from a clean slate (nothing the warm-up or the case before left).
  beforeEach(() => {
    api.callbacks.pressure = new AckPressure(THRESHOLD_MS);
  });
  afterAll(async () => {
    await api.close();
    dirs.cleanup();
  });

  async function burst(from: number) {
    const answers = await Promise.all(
      [0, 1, 2, 3, 4].map((i) =>
        api.inject({ method: 'POST', url: webhookPath('jpress1'), payload: event1(81_000 + from + i) }),
      ),
    );
    for (const res of answers) expect(res.statusCode).toBe(200);
  }

  it('is not raised by answers that waited for a slow durable write', async () => {
    storeDelayMs = 400;
    handlerBusyMs = 0;
    const t0 = performance.now();
    await burst(0);
    // The answers were slow (each waited 400 ms for its write) ...
    expect(performance.now() - t0).toBeGreaterThanOrEqual(400);
    // ... but the webhook's own part of them was not.
    expect(api.callbacks.pressure.underPressure()).toBe(false);
  });

  it('makes a rise of answers slowed by the durable write a burst the webhook felt (no surge)', async () => {
    storeDelayMs = 400;
    handlerBusyMs = 0;
    // 80 at once: past BURST_MIN within the second their answers come in, each over twice the threshold in all.
    const answers = await Promise.all(
      Array.from({ length: 80 }, (_, i) =>
        api.inject({ method: 'POST', url: webhookPath('jpress1'), payload: event1(82_000 + i) }),
      ),
    );
    for (const res of answers) expect(res.statusCode).toBe(200);
    expect(api.callbacks.pressure.underPressure()).toBe(false);
    expect(api.callbacks.pressure.burst()).toBe(true);
  });

  it('is raised by answers the webhook itself was slow with', async () => {
    storeDelayMs = 0;
    handlerBusyMs = 250;
    await burst(10);
    expect(api.callbacks.pressure.underPressure()).toBe(true);
  });
});
