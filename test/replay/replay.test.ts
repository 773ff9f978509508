// Histories recorded from real runs of each scenario (RECORD_HISTORIES=1 npx jest test/integration) must replay
// against today's workflow code: a change that breaks this needs patched() around it.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { Worker } from '@temporalio/worker';

const dir = path.resolve(__dirname, '../fixtures/histories');
const files = readdirSync(dir).filter((f) => f.endsWith('.json'));

describe('workflow determinism', () => {
  it('has recorded histories of every scenario', () => {
    expect(files.map((f) => f.replace(/(-prescription-.*)?\.json$/, '')).sort()).toEqual(
      expect.arrayContaining(['custom_pharmacy', 'gfe', 'partner_pharmacy', 'urgent_care']),
    );
  });

  it('replays every recorded history without a nondeterminism error', async () => {
    const histories = files.map((f) => ({
      workflowId: f.replace(/\.json$/, ''),
      history: JSON.parse(readFileSync(path.join(dir, f), 'utf8')) as unknown,
    }));
    const results = [];
    for await (const r of Worker.runReplayHistories(
      { workflowsPath: require.resolve('../../src/workflows') },
      histories,
    )) {
      results.push({ workflowId: r.workflowId, error: r.error?.message });
    }
    expect(results).toHaveLength(files.length);
    expect(results.filter((r) => r.error)).toEqual([]);
  });
});
