// A V8 CPU profile (`node --cpu-prof`, a .cpuprofile file) read as what it says about where a process spent its CPU:
// each function's self and total time, and a flame graph (SVG) of the call tree. Idle time is left out of both: what
// is measured is the time the process ran. Function names and source positions only: a profile holds no data.
import path from 'node:path';

export interface CpuProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number; columnNumber: number };
  children?: number[];
}

export interface CpuProfile {
  nodes: CpuProfileNode[];
  startTime: number;
  endTime: number;
  samples?: number[];
  timeDeltas?: number[];
}

export interface FunctionCost {
  /** `name (file:line)`, the file relative to the project (or a package's name and path). */
  name: string;
  /** Where it lives: `src`, a package's name, `node` (Node.js's own), or a V8 category such as `(garbage collector)`. */
  origin: string;
  selfMs: number;
  totalMs: number;
}

export interface ProfileSummary {
  /** Time the profile covers, and the part of it the process was not idle. */
  wallMs: number;
  busyMs: number;
  /** Every function with time of its own, most self time first. */
  functions: FunctionCost[];
  /** Self time by origin (src, each package, node, GC...), most first. */
  origins: { origin: string; selfMs: number }[];
}

interface Frame {
  name: string;
  origin: string;
  selfUs: number;
  totalUs: number;
  children: Map<string, Frame>;
}

const IDLE = '(idle)';

/** Where a call frame's code lives. */
export function originOf(url: string, functionName: string, root: string): string {
  if (!url) return functionName.startsWith('(') ? functionName : 'node';
  const file = url.startsWith('file://') ? decodeURIComponent(url.slice('file://'.length)) : url;
  const modules = file.lastIndexOf('/node_modules/');
  if (modules >= 0) {
    const parts = file.slice(modules + '/node_modules/'.length).split('/');
    return parts[0]!.startsWith('@') ? `${parts[0]}/${parts[1]}` : parts[0]!;
  }
  if (file.startsWith('node:') || !file.startsWith('/')) return 'node';
  const rel = path.relative(root, file);
  return rel.startsWith('..') ? 'other' : (rel.split(path.sep)[0] ?? 'other');
}

function nameOf(frame: CpuProfileNode['callFrame'], root: string): string {
  const fn = frame.functionName || '(anonymous)';
  if (!frame.url) return fn;
  const file = frame.url.startsWith('file://') ? decodeURIComponent(frame.url.slice('file://'.length)) : frame.url;
  const modules = file.lastIndexOf('/node_modules/');
  const shown = modules >= 0 ? file.slice(modules + '/node_modules/'.length) : path.relative(root, file);
  return `${fn} (${shown}:${frame.lineNumber + 1})`;
}

/** Each sample's duration in µs: the time to the next sample (the last one gets the mean). */
function sampleDurations(p: CpuProfile): number[] {
  const deltas = p.timeDeltas ?? [];
  const n = p.samples?.length ?? 0;
  const mean = n > 1 ? (p.endTime - p.startTime) / n : 0;
  return Array.from({ length: n }, (_, i) => Math.max(0, deltas[i + 1] ?? mean));
}

/** The call tree with each frame's self and total time (idle left out), merged by function along each path. */
function callTree(p: CpuProfile, root: string): Frame {
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const self = new Map<number, number>();
  const durations = sampleDurations(p);
  (p.samples ?? []).forEach((id, i) => self.set(id, (self.get(id) ?? 0) + durations[i]!));
  const top: Frame = { name: 'all', origin: 'all', selfUs: 0, totalUs: 0, children: new Map() };
  for (const [id, us] of self) {
    const leaf = byId.get(id);
    if (!leaf || leaf.callFrame.functionName === IDLE) continue;
    const stack: CpuProfileNode[] = [];
    for (let n: CpuProfileNode | undefined = leaf; n; n = byId.get(parent.get(n.id) ?? -1)) {
      if (n.callFrame.functionName !== '(root)') stack.unshift(n);
    }
    top.totalUs += us;
    let at = top;
    for (const n of stack) {
      const name = nameOf(n.callFrame, root);
      let next = at.children.get(name);
      if (!next) {
        next = {
          name,
          origin: originOf(n.callFrame.url, n.callFrame.functionName, root),
          selfUs: 0,
          totalUs: 0,
          children: new Map(),
        };
        at.children.set(name, next);
      }
      next.totalUs += us;
      at = next;
    }
    at.selfUs += us;
  }
  return top;
}

export function summarizeProfile(p: CpuProfile, root: string): ProfileSummary {
  const tree = callTree(p, root);
  const fns = new Map<string, FunctionCost>();
  const walk = (f: Frame, onStack: Set<string>) => {
    for (const child of f.children.values()) {
      const cost = fns.get(child.name) ?? { name: child.name, origin: child.origin, selfMs: 0, totalMs: 0 };
      cost.selfMs += child.selfUs / 1000;
      // A recursive function's time counts once, at its outermost call.
      if (!onStack.has(child.name)) cost.totalMs += child.totalUs / 1000;
      fns.set(child.name, cost);
      walk(child, new Set([...onStack, child.name]));
    }
  };
  walk(tree, new Set());
  const functions = [...fns.values()].filter((f) => f.selfMs > 0).sort((a, b) => b.selfMs - a.selfMs);
  const origins = new Map<string, number>();
  for (const f of functions) origins.set(f.origin, (origins.get(f.origin) ?? 0) + f.selfMs);
  return {
    wallMs: (p.endTime - p.startTime) / 1000,
    busyMs: tree.totalUs / 1000,
    functions,
    origins: [...origins].map(([origin, selfMs]) => ({ origin, selfMs })).sort((a, b) => b.selfMs - a.selfMs),
  };
}

const escapeXml = (s: string) =>
  s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');

/** A stable colour per origin: the project's own code warm, packages cool, Node.js and V8 grey. */
function colourOf(origin: string): string {
  if (origin === 'src' || origin === 'scripts' || origin === 'bench') return 'hsl(20, 85%, 62%)';
  if (origin === 'node' || origin.startsWith('(')) return 'hsl(0, 0%, 72%)';
  let h = 0;
  for (const c of origin) h = (h * 31 + c.charCodeAt(0)) % 360;
  return `hsl(${180 + (h % 100)}, 55%, 65%)`;
}

/**
 * The call tree as a flame graph: the root at the bottom, each frame as wide as its share of the busy time, the
 * project's code orange, packages blue-green, Node.js and V8 grey; a frame's title gives its time. Frames narrower
 * than `minWidth` pixels are left out.
 */
export function flameGraphSvg(p: CpuProfile, root: string, o: { title: string; width?: number; minWidth?: number }) {
  const tree = callTree(p, root);
  const width = o.width ?? 1200;
  const minWidth = o.minWidth ?? 0.5;
  const row = 16;
  const rects: { x: number; depth: number; w: number; f: Frame }[] = [];
  let maxDepth = 0;
  const place = (f: Frame, x: number, depth: number) => {
    const w = tree.totalUs > 0 ? (f.totalUs / tree.totalUs) * width : 0;
    if (w < minWidth) return;
    rects.push({ x, depth, w, f });
    maxDepth = Math.max(maxDepth, depth);
    let cx = x;
    for (const c of [...f.children.values()].sort((a, b) => (a.name < b.name ? -1 : 1))) {
      place(c, cx, depth + 1);
      cx += tree.totalUs > 0 ? (c.totalUs / tree.totalUs) * width : 0;
    }
  };
  place(tree, 0, 0);
  const top = 40;
  const height = top + (maxDepth + 1) * row + 10;
  const ms = (us: number) => (us / 1000).toFixed(1);
  const body = rects.map(({ x, depth, w, f }) => {
    const y = height - 10 - (depth + 1) * row;
    const share = tree.totalUs > 0 ? ((f.totalUs / tree.totalUs) * 100).toFixed(1) : '0';
    const label = w > 30 ? escapeXml(f.name.slice(0, Math.floor(w / 6.5))) : '';
    return (
      `<g><title>${escapeXml(f.name)}: ${ms(f.totalUs)} ms (${share} %), self ${ms(f.selfUs)} ms</title>` +
      `<rect x="${x.toFixed(2)}" y="${y}" width="${w.toFixed(2)}" height="${row - 1}" fill="${f === tree ? 'hsl(0,0%,85%)' : colourOf(f.origin)}" rx="2"/>` +
      (label ? `<text x="${(x + 3).toFixed(2)}" y="${y + 11}">${label}</text>` : '') +
      '</g>'
    );
  });
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="monospace" font-size="11">`,
    `<rect width="100%" height="100%" fill="white"/>`,
    `<text x="${width / 2}" y="18" text-anchor="middle" font-size="14">${escapeXml(o.title)}</text>`,
    `<text x="${width / 2}" y="33" text-anchor="middle" font-size="11">busy ${ms(tree.totalUs)} ms of CPU; width = share of it; orange: the engine's code, blue-green: packages, grey: Node.js and V8</text>`,
    ...body,
    '</svg>',
    '',
  ].join('\n');
}
