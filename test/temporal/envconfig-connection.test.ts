// The worker's and the API's connections made from a temporal.toml profile reach a real dev server: the same file
// the Temporal CLI reads (`temporal --config-file … --profile …`), the namespace included.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { loadConfig } from '../../src/config';
import { connectClient, connectWorkerConnection } from '../../src/temporal';
import { startDevServer } from '../support/temporal-env';

let env: TestWorkflowEnvironment;
let dir: string;
beforeAll(async () => {
  env = await startDevServer();
  dir = mkdtempSync(path.join(tmpdir(), 'envconfig-'));
}, 60_000);
afterAll(async () => {
  await env?.teardown();
  rmSync(dir, { recursive: true, force: true });
});

it('connects the client and the worker connection with a profile of TEMPORAL_CONFIG_FILE', async () => {
  const address = env.connection.options.address;
  const file = path.join(dir, 'temporal.toml');
  writeFileSync(
    file,
    `[profile.default]\naddress = "127.0.0.1:1"\n\n[profile.local]\naddress = "${address}"\nnamespace = "default"\n`,
  );
  const config = loadConfig({
    HOME: dir,
    WEBHOOK_SECRET: 'webhook-secret-0123456789',
    PAYLOAD_ENCRYPTION_DISABLED: 'true',
    TEMPORAL_CONFIG_FILE: file,
    TEMPORAL_PROFILE: 'local',
  });
  expect(config.temporal.address).toBe(address);
  const client = await connectClient(config);
  try {
    const info = await client.workflowService.getSystemInfo({});
    expect(info.capabilities).toBeTruthy();
    const namespaces = await client.workflowService.listNamespaces({});
    expect(namespaces.namespaces.map((n) => n.namespaceInfo?.name)).toContain(config.temporal.namespace);
  } finally {
    await client.connection.close();
  }
  const native = await connectWorkerConnection(config.temporal);
  await native.close();
}, 60_000);
