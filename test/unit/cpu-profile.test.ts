// A V8 CPU profile read as where the time went: self and total time per function (idle left out, a recursive call
// counted once), time by origin (the engine's code, a package, Node.js, V8's categories), and a flame graph whose
// frames are as wide as their share. A small profile made by hand, so every figure is known.
import { flameGraphSvg, originOf, summarizeProfile, type CpuProfile } from '../../scripts/lib/cpu-profile';
import { profileMarkdown } from '../../scripts/cpu-profile';

const ROOT = '/srv/engine';
const frame = (functionName: string, url = '', lineNumber = 0) => ({ functionName, url, lineNumber, columnNumber: 0 });

// root -> handler (src) -> seal (src) -> encrypt (node); handler -> parse (fastify); root -> (idle); root -> (gc);
// walk (src) calls itself.
const profile: CpuProfile = {
  nodes: [
    { id: 1, callFrame: frame('(root)'), children: [2, 6, 7, 8] },
    { id: 2, callFrame: frame('handler', `file://${ROOT}/src/api/webhook.ts`, 9), children: [3, 5] },
    { id: 3, callFrame: frame('seal', `file://${ROOT}/src/patient-keys/crypto.ts`, 19), children: [4] },
    { id: 4, callFrame: frame('encrypt', 'node:crypto', 99) },
    { id: 5, callFrame: frame('parse', `file://${ROOT}/node_modules/fastify/lib/body.js`, 4) },
    { id: 6, callFrame: frame('(idle)') },
    { id: 7, callFrame: frame('(garbage collector)') },
    { id: 8, callFrame: frame('walk', `file://${ROOT}/src/tree.ts`, 0), children: [9] },
    { id: 9, callFrame: frame('walk', `file://${ROOT}/src/tree.ts`, 0) },
  ],
  startTime: 0,
  endTime: 100_000,
  // Every sample 10 ms apart (the first delta is the start's): 10 samples.
  samples: [2, 3, 4, 4, 5, 6, 6, 7, 8, 9],
  timeDeltas: [0, 10_000, 10_000, 10_000, 10_000, 10_000, 10_000, 10_000, 10_000, 10_000],
};

describe('a CPU profile summarised', () => {
  const s = summarizeProfile(profile, ROOT);
  const fn = (name: string) => s.functions.find((f) => f.name.startsWith(`${name} `) || f.name === name);

  it('counts busy time without idle, each function with its own time and its callees', () => {
    expect(s.wallMs).toBe(100);
    expect(s.busyMs).toBe(80);
    expect(fn('handler')).toMatchObject({ origin: 'src', selfMs: 10, totalMs: 50 });
    expect(fn('handler')!.name).toBe('handler (src/api/webhook.ts:10)');
    expect(fn('seal')).toMatchObject({ selfMs: 10, totalMs: 30 });
    expect(fn('encrypt')).toMatchObject({ origin: 'node', selfMs: 20, totalMs: 20 });
    expect(fn('parse')).toMatchObject({ origin: 'fastify', selfMs: 10 });
    expect(fn('(garbage collector)')).toMatchObject({ origin: '(garbage collector)', selfMs: 10 });
    expect(fn('(idle)')).toBeUndefined();
    // A recursive function: 20 ms in all, not 30.
    expect(fn('walk')).toMatchObject({ selfMs: 20, totalMs: 20 });
    expect(s.functions[0]!.selfMs).toBe(20);
    expect(s.origins).toEqual([
      { origin: 'src', selfMs: 40 },
      { origin: 'node', selfMs: 20 },
      { origin: 'fastify', selfMs: 10 },
      { origin: '(garbage collector)', selfMs: 10 },
    ]);
  });

  it('names where code lives: the project, a scoped package, Node.js', () => {
    expect(originOf(`file://${ROOT}/src/a.ts`, 'f', ROOT)).toBe('src');
    expect(originOf(`file://${ROOT}/node_modules/@temporalio/client/lib/x.js`, 'f', ROOT)).toBe('@temporalio/client');
    expect(originOf('node:internal/streams', 'f', ROOT)).toBe('node');
    expect(originOf('', '(program)', ROOT)).toBe('(program)');
  });

  it('writes a Markdown table and a flame graph whose frames are as wide as their share', () => {
    const md = profileMarkdown(s, 3);
    expect(md).toContain('CPU busy 80 ms of 100 ms profiled (80.0 % of one core)');
    expect(md.split('\n').filter((l) => l.startsWith('| `'))).toHaveLength(3);
    const svg = flameGraphSvg(profile, ROOT, { title: 'a <test>', width: 800 });
    expect(svg).toContain('a &lt;test&gt;');
    // handler is 50 of 80 ms busy: 500 px of 800, after the garbage collector's 100 (frames in name order).
    expect(svg).toMatch(
      /<title>handler \(src\/api\/webhook\.ts:10\): 50\.0 ms \(62\.5 %\), self 10\.0 ms<\/title><rect x="100\.00" y="\d+" width="500\.00"/,
    );
    expect(svg).not.toContain('(idle)');
  });
});
