import { existsSync } from 'node:fs';
import path from 'node:path';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import type { SearchAttributeType } from '@temporalio/common';
import type { SearchAttributeKey } from '@temporalio/common/lib/search-attributes';

// The project installs its Temporal servers into .tools/ (scripts/install-temporal-tools.sh) because the SDK's own
// download cannot reach its site from every machine. Where .tools/ is missing, the SDK's download is the fallback.
const toolsDir = process.env.TEMPORAL_TOOLS_DIR ?? path.resolve(__dirname, '../../.tools');

export function installedTool(name: 'temporal' | 'temporal-test-server'): string | undefined {
  const candidate = path.join(toolsDir, 'bin', name);
  return existsSync(candidate) ? candidate : undefined;
}

function executable(name: 'temporal' | 'temporal-test-server') {
  const found = installedTool(name);
  return found ? { type: 'existing-path' as const, path: found } : { type: 'cached-download' as const };
}

/**
 * Temporal's Java time-skipping test server: timers fire as soon as every workflow is blocked. The SDK gives the JVM
 * 5 s to listen; on a loaded machine (several suites starting JVMs at once) that can run out, so a start that timed
 * out is tried again, a little later each time.
 */
export async function startTimeSkippingServer(): Promise<TestWorkflowEnvironment> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await TestWorkflowEnvironment.createTimeSkipping({
        server: { executable: executable('temporal-test-server') },
      });
    } catch (err) {
      // (Errors from the SDK's native side are not instances of this realm's Error under jest.)
      const slowStart = /did not start within/.test(String((err as { message?: unknown })?.message ?? err));
      if (!slowStart || attempt >= 6) throw err;
      // A machine too busy to start a JVM in 5 s: give it a moment before the next one.
      await new Promise((resolve) => setTimeout(resolve, 1_000 * attempt));
    }
  }
}

/** The real Temporal dev server (the CLI's `temporal server start-dev`), in memory, on a free port. */
export function startDevServer(
  searchAttributes: SearchAttributeKey<SearchAttributeType>[] = [],
): Promise<TestWorkflowEnvironment> {
  return TestWorkflowEnvironment.createLocal({
    server: {
      executable: executable('temporal'),
      searchAttributes,
      log: { format: 'pretty', level: 'error' },
      extraArgs: ['--dynamic-config-value', 'frontend.enableUpdateWorkflowExecution=true'],
    },
  });
}
