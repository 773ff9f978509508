// Free ports for every part of `npm start` (scripts/local-stack.ts), by the variable that moves each, and the same as
// the environment a test starts the stack with. Picked upwards from `base`, below the kernel's ephemeral range: a port
// picked there could be taken by an outgoing connection (the Temporal server's, the worker's) before the stack binds
// it, and the stack would refuse to start. Each test file gives its own base.
import net from 'node:net';

const PORT_MAX = 21_999;

/** Whether nothing listens on this port of 127.0.0.1 now. */
export function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

export async function localStackPorts(base: number) {
  let next = base;
  const one = async (): Promise<number> => {
    for (; next <= PORT_MAX; next++) if (await portFree(next)) return next++;
    throw new Error(`no free port between ${base} and ${PORT_MAX}`);
  };
  const ports = {
    TEMPORAL_PORT: await one(),
    TEMPORAL_UI_PORT: await one(),
    SANDBOX_PORT: await one(),
    API_PORT: await one(),
    CODEC_PORT: await one(),
    WORKER_METRICS_PORT: await one(),
  };
  const env: Record<string, string> = Object.fromEntries(Object.entries(ports).map(([k, v]) => [k, String(v)]));
  return { ports, env };
}
