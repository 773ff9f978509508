// `npm run bench:replay`: what the journeys' workflow code costs the worker, without a server: a recorded history
// replayed many times by the SDK's replay worker (the same workflow thread, bundle and activations a live journey has,
// with no server, no activities and no HTTP), CPU per journey for each stack-frame setting in interleaved rounds, and
// with --promises where the workflow code's promises come from (each one costs the SDK's promise hook a stack trace).
//
//   npm run bench:replay                                     the GFE history, 300 replays, frames 10,4,0, 4 rounds
//   npm run bench:replay -- --frames 4 --rounds 2 --replays 500 --history test/fixtures/histories/urgent_care.json
//   npm run bench:replay -- --promises                       promises per journey, by the workflow function that made them
//
// The machine's noise moves one round by 10-20 %; compare settings within a run (its rounds interleave them).
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import v8 from 'node:v8';
import { bundleWorkflowCode, DefaultLogger, Runtime, Worker } from '@temporalio/worker';
import { withWorkflowStackFrames } from '../src/workflow-stack-frames';

const ROOT = path.resolve(__dirname, '..');
const SDK_FRAMES =
  /^(Activator|CancellationScope|RootCancellationScope|condition|conditionInner|scheduleActivity|scheduleLocalActivity|localActivityProxyFunction|activityProxyFunction|executeWith|withScope|AsyncLocalStorage|runInContext|signalWorkflow|startWorkflow|timerNextHandler|sleep|Proxy|new|Promise|Script|ImplicitEventGroupMarkerImpl|<anonymous>|<instance_members_initializer>)/;

/** The nearest frame of the workflow code (not the SDK's, not a built-in) on a stack made in the promise hook. */
export function promiseSite(stack: string): string {
  const frames = stack
    .split('\n')
    .slice(1)
    .map((l) => l.trim().replace(/^at /, ''))
    .filter((l) => !l.startsWith('init ') && !l.includes('promise_hooks'));
  // A named function of the bundle that is not the SDK's (an unnamed one, `/…/workflow-bundle-….js:l:c`, is skipped).
  const name = (l: string) => l.split(' ')[0]!.replace(/^Object\./, '');
  const ours = frames.find(
    (l) => l.includes('workflow-bundle') && !name(l).startsWith('/') && !SDK_FRAMES.test(name(l)),
  );
  return ours ? name(ours) : '(the SDK alone)';
}

async function main() {
  const { values } = parseArgs({
    options: {
      history: { type: 'string', default: 'test/fixtures/histories/gfe-rules-2026-11.json' },
      replays: { type: 'string', default: '300' },
      frames: { type: 'string', default: '10,4,0' },
      rounds: { type: 'string', default: '4' },
      promises: { type: 'boolean', default: false },
    },
  });
  Runtime.install({ logger: new DefaultLogger('WARN') });
  const history = JSON.parse(readFileSync(path.resolve(ROOT, values.history), 'utf8')) as unknown;
  const replays = Number(values.replays);
  const { code } = await bundleWorkflowCode({
    workflowsPath: require.resolve('../src/workflows'),
    logger: new DefaultLogger('WARN'),
  });
  const replay = async (n: number) => {
    const histories = Array.from({ length: n }, (_, i) => ({ workflowId: `replay-${i}`, history }));
    for await (const r of Worker.runReplayHistories({ workflowBundle: { code } }, histories)) {
      if (r.error) throw r.error;
    }
  };
  await replay(20); // the bundle compiled and the code warm

  if (values.promises) {
    // In this thread (the SDK's debug mode, TEMPORAL_DEBUG), where a promise hook of ours sees the workflow context's.
    process.env.TEMPORAL_DEBUG = '1';
    const sites = new Map<string, number>();
    let total = 0;
    const stop = v8.promiseHooks.onInit((promise: Promise<unknown>) => {
      if (promise.constructor === Promise) return; // this thread's own, not the workflow context's
      total++;
      const limit = Error.stackTraceLimit;
      Error.stackTraceLimit = 12;
      const site = promiseSite(new Error().stack ?? '');
      Error.stackTraceLimit = limit;
      sites.set(site, (sites.get(site) ?? 0) + 1);
    });
    await replay(replays);
    stop();
    console.log(`${values.history}: ${(total / replays).toFixed(1)} promises per journey`);
    for (const [site, n] of [...sites].sort((a, b) => b[1] - a[1])) {
      console.log(`${(n / replays).toFixed(1).padStart(6)}  ${site}`);
    }
    return;
  }

  const settings = values.frames.split(',').map(Number);
  const cpu = new Map<number, number[]>(settings.map((f) => [f, []]));
  for (let round = 1; round <= Number(values.rounds); round++) {
    for (const frames of settings) {
      const c0 = process.cpuUsage();
      await withWorkflowStackFrames(frames, () => replay(replays));
      const c = process.cpuUsage(c0);
      const ms = (c.user + c.system) / 1000 / replays;
      cpu.get(frames)!.push(ms);
      console.log(`round ${round}, ${frames} frames: ${ms.toFixed(2)} ms of CPU per journey`);
    }
  }
  console.log(`\n${values.history}, ${replays} replays a round:`);
  console.log('| Stack frames | CPU per replayed journey, mean | each round |');
  console.log('|---|---|---|');
  for (const [frames, list] of cpu) {
    const mean = list.reduce((a, b) => a + b, 0) / list.length;
    console.log(`| ${frames} | ${mean.toFixed(1)} ms | ${list.map((x) => x.toFixed(1)).join(', ')} |`);
  }
}

if (require.main === module) {
  main().then(
    () => process.exit(0),
    (err: unknown) => {
      console.error(err);
      process.exit(1);
    },
  );
}
