// Free ports for every part of `npm start` (scripts/local-stack.ts), by the variable that moves each, and the same as
// the environment a test starts the stack with.
import { freePort } from './dev-server-process';

export async function localStackPorts() {
  const ports = {
    TEMPORAL_PORT: await freePort(),
    TEMPORAL_UI_PORT: await freePort(),
    SANDBOX_PORT: await freePort(),
    API_PORT: await freePort(),
    CODEC_PORT: await freePort(),
    WORKER_METRICS_PORT: await freePort(),
  };
  const env: Record<string, string> = Object.fromEntries(Object.entries(ports).map(([k, v]) => [k, String(v)]));
  return { ports, env };
}
