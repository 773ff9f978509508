import { Worker } from '@temporalio/worker';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { installedTool, startDevServer, startTimeSkippingServer } from '../support/temporal-env';
import { greetingWorkflow, weekLongWorkflow } from '../support/toolchain-workflows';

const workflowsPath = require.resolve('../support/toolchain-workflows');

describe('Temporal toolchain', () => {
  it('has the project-installed servers where CI installed them', () => {
    if (!process.env.CI) return;
    expect(installedTool('temporal')).toBeDefined();
    expect(installedTool('temporal-test-server')).toBeDefined();
  });

  describe('dev server (Temporal CLI)', () => {
    let env: TestWorkflowEnvironment;
    beforeAll(async () => {
      env = await startDevServer();
    });
    afterAll(async () => {
      await env?.teardown();
    });

    it('runs a workflow with an activity end to end', async () => {
      const worker = await Worker.create({
        connection: env.nativeConnection,
        taskQueue: 'toolchain-dev',
        workflowsPath,
        activities: { greet: (name: string) => Promise.resolve(`hello ${name}`) },
      });
      const result = await worker.runUntil(
        env.client.workflow.execute(greetingWorkflow, {
          taskQueue: 'toolchain-dev',
          workflowId: `toolchain-dev-${Date.now()}`,
          args: ['clinic'],
        }),
      );
      expect(result).toBe('hello clinic');
      expect(env.supportsTimeSkipping).toBe(false);
    });
  });

  describe('time-skipping test server', () => {
    let env: TestWorkflowEnvironment;
    beforeAll(async () => {
      env = await startTimeSkippingServer();
    });
    afterAll(async () => {
      await env?.teardown();
    });

    it('lets a workflow sleep 7 days in a few seconds of wall time', async () => {
      const worker = await Worker.create({
        connection: env.nativeConnection,
        taskQueue: 'toolchain-ts',
        workflowsPath,
      });
      const wallStart = Date.now();
      const workflowElapsed = await worker.runUntil(
        env.client.workflow.execute(weekLongWorkflow, {
          taskQueue: 'toolchain-ts',
          workflowId: `toolchain-ts-${Date.now()}`,
        }),
      );
      const wall = Date.now() - wallStart;
      expect(workflowElapsed).toBeGreaterThanOrEqual(7 * 24 * 3600 * 1000);
      // A generous bound: the point is days of workflow time in far less wall time, not a speed assertion.
      expect(wall).toBeLessThan(60_000);
    });
  });
});
