// A client connection keeps trying to reach a Temporal server that went away at least every few seconds, so that the
// forwarder's signals (from a thread with a connection of its own) go again soon after the server is back. gRPC's own
// backoff grows 1.6x per failed attempt up to 120 s: after a minute's outage its next attempt could come 40 s after the
// server was back. Real sockets here: a listener that takes each connection and drops it at once (the server's port
// open, nothing answering), counted while a client asks every half second, as the forwarder does while it retries.
import net from 'node:net';
import { Connection } from '@temporalio/client';
import { loadConfig } from '../../src/config';
import { CLIENT_RECONNECT_BACKOFF, clientConnectionOptions } from '../../src/temporal';

const WINDOW_MS = 20_000;

async function attemptsWithin(options: Parameters<typeof Connection.lazy>[0], windowMs: number): Promise<number> {
  let attempts = 0;
  const listener = net.createServer((socket) => {
    attempts += 1;
    socket.destroy();
  });
  await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
  const { port } = listener.address() as net.AddressInfo;
  const connection = Connection.lazy({ ...options, address: `127.0.0.1:${port}` });
  try {
    const until = Date.now() + windowMs;
    while (Date.now() < until) {
      await connection
        .withDeadline(Date.now() + 400, () => connection.workflowService.getSystemInfo({}))
        .catch(() => undefined);
      await new Promise((r) => setTimeout(r, 500));
    }
    return attempts;
  } finally {
    await connection.close().catch(() => undefined);
    await new Promise<void>((resolve) => listener.close(() => resolve()));
  }
}

describe("a client connection's reconnection while Temporal is away", () => {
  it(
    'tries again every few seconds at most, where gRPC alone waits ever longer',
    async () => {
      const t = loadConfig({ WEBHOOK_SECRET: 'webhook-secret-0123456789', HOME: '/nonexistent' }).temporal;
      const ours = clientConnectionOptions(t);
      expect(ours.channelArgs).toMatchObject({
        'grpc.initial_reconnect_backoff_ms': CLIENT_RECONNECT_BACKOFF.initialMs,
        'grpc.max_reconnect_backoff_ms': CLIENT_RECONNECT_BACKOFF.maxMs,
      });
      // Both at once, on the same clock and the same machine load.
      const [bounded, unbounded] = await Promise.all([
        attemptsWithin(ours, WINDOW_MS),
        attemptsWithin({ ...ours, channelArgs: {} }, WINDOW_MS),
      ]);
      // Bounded: 0.5, 0.8, 1.3, then every 2 s (±20 %): about 10 in 20 s. gRPC's default: 1, 1.6, 2.6, 4.1, 6.6 s
      // apart: 5 or 6 (measured: 13 against 6).
      expect(unbounded).toBeLessThanOrEqual(7);
      expect(bounded).toBeGreaterThanOrEqual(8);
      expect(bounded).toBeGreaterThan(unbounded);
    },
    WINDOW_MS + 20_000,
  );
});
