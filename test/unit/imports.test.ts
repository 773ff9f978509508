// The shape of src/: no import circle (type-only imports count: they couple the files all the same), and every import
// between modules runs from a higher layer down to a lower one, so the data path reads one way.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { builtinModules } from 'node:module';
import path from 'node:path';
import ts from 'typescript';

const SRC = path.resolve(__dirname, '../../src');

/** The modules of src/ from the bottom up; a module imports only from the layers below its own. */
const LAYERS: readonly (readonly string[])[] = [
  // The exam service's contract and client, and leaves that depend on nothing of ours.
  [
    'exam-service',
    'encryption-keys',
    'nonces',
    'webhook-url',
    'part-lifecycle',
    'group-commit',
    'auth',
    'audit',
    'workflow-stack-frames',
  ],
  // Per-patient data keys: below what the parts exchange, which will carry their sealed values.
  ['patient-keys'],
  // What the parts exchange: the journey request (zod: the workflows read its types only), the journey's data, its
  // signals, queries and updates, the activity contract, the failure table.
  ['contract'],
  // Deterministic journey code: the reducer, the workflow, what it asks of activities.
  ['workflows'],
  ['config'],
  ['codec'],
  ['temporal', 'observability'],
  ['attachments', 'activities'],
  ['inbox'],
  // The processes' own code: the clinic API and the exam-service sandbox.
  ['api', 'sandbox'],
  ['workflow-bundle'],
  ['worker'],
];

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const file = path.join(dir, name);
    if (statSync(file).isDirectory()) return sourceFiles(file);
    return file.endsWith('.ts') ? [file] : [];
  });
}

function resolveImport(from: string, specifier: string): string | undefined {
  if (!specifier.startsWith('.')) return undefined;
  const base = path.resolve(path.dirname(from), specifier);
  return [`${base}.ts`, path.join(base, 'index.ts'), base].find((f) => existsSync(f) && statSync(f).isFile());
}

/** Every file of src/ and the files of src/ it imports: import, import type, export from, import(), require(). */
function importGraph(): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const file of sourceFiles(SRC)) {
    const info = ts.preProcessFile(readFileSync(file, 'utf8'), true, true);
    const targets = info.importedFiles
      .map((f) => resolveImport(file, f.fileName))
      .filter((f): f is string => f !== undefined);
    graph.set(file, [...new Set(targets)]);
  }
  return graph;
}

/** The cycles of a graph, one path each (Tarjan's strongly connected components, then a walk within each). */
function cycles(graph: Map<string, string[]>): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (v: string) => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) {
        low.set(v, Math.min(low.get(v)!, index.get(w)!));
      }
    }
    if (low.get(v) !== index.get(v)) return;
    const component = new Set<string>();
    for (let w = stack.pop()!; ; w = stack.pop()!) {
      onStack.delete(w);
      component.add(w);
      if (w === v) break;
    }
    if (component.size > 1 || graph.get(v)?.includes(v)) found.push(pathWithin(graph, component, v));
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return found;
}

/** A path from `start` back to itself inside one strongly connected component. */
function pathWithin(graph: Map<string, string[]>, component: Set<string>, start: string): string[] {
  const seen = new Set<string>();
  const walk = (v: string, trail: string[]): string[] | undefined => {
    for (const w of graph.get(v) ?? []) {
      if (w === start) return [...trail, start];
      if (!component.has(w) || seen.has(w)) continue;
      seen.add(w);
      const done = walk(w, [...trail, w]);
      if (done) return done;
    }
    return undefined;
  };
  return walk(start, [start]) ?? [start];
}

/**
 * What the code of a file needs when it runs: its imports that are not type-only (`import type`, `export type`, and
 * imports whose every name is a type are erased), as import specifiers.
 */
function runtimeImports(file: string): string[] {
  const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
  const found: string[] = [];
  for (const node of source.statements) {
    if (ts.isImportDeclaration(node)) {
      const clause = node.importClause;
      if (clause?.isTypeOnly) continue;
      const bindings = clause?.namedBindings;
      const allTypes =
        clause &&
        !clause.name &&
        bindings &&
        ts.isNamedImports(bindings) &&
        bindings.elements.length > 0 &&
        bindings.elements.every((e) => e.isTypeOnly);
      if (!allTypes) found.push((node.moduleSpecifier as ts.StringLiteral).text);
    } else if (ts.isExportDeclaration(node) && node.moduleSpecifier && !node.isTypeOnly) {
      found.push((node.moduleSpecifier as ts.StringLiteral).text);
    }
  }
  return found;
}

/** The packages and Node.js built-ins the code reachable from `entry` at run time needs (src/ files followed). */
function reachablePackages(entry: string): Map<string, string> {
  const packages = new Map<string, string>();
  const seen = new Set<string>();
  const walk = (file: string) => {
    if (seen.has(file)) return;
    seen.add(file);
    for (const spec of runtimeImports(file)) {
      const local = resolveImport(file, spec);
      if (local) walk(local);
      else if (!spec.startsWith('.')) packages.set(spec, rel(file));
    }
  };
  walk(entry);
  return packages;
}

const rel = (file: string) => path.relative(SRC, file);
/** The module a file belongs to: its folder under src/, or the file's own name for a file at the top. */
const moduleOf = (file: string) => rel(file).split(path.sep)[0]!.replace(/\.ts$/, '');
const layerOf = (module: string) => LAYERS.findIndex((layer) => layer.includes(module));

describe('the imports of src/', () => {
  const graph = importGraph();

  it('are read from every file (the walk finds the imports it should)', () => {
    expect(graph.size).toBeGreaterThan(80);
    const worker = graph.get(path.join(SRC, 'worker.ts'))!.map(rel);
    expect(worker).toEqual(expect.arrayContaining(['config.ts', 'activities/index.ts', 'workflow-bundle.ts']));
    // Type-only imports count.
    expect(graph.get(path.join(SRC, 'inbox/signaller.ts'))!.map(rel)).toContain('inbox/forwarder.ts');
  });

  it('form no circle', () => {
    expect(cycles(graph).map((cycle) => cycle.map(rel).join(' -> '))).toEqual([]);
  });

  it('find a circle when there is one (the check can fail)', () => {
    const a = path.join(SRC, 'a.ts');
    const b = path.join(SRC, 'b.ts');
    const c = path.join(SRC, 'c.ts');
    const circle = new Map([
      [a, [b]],
      [b, [c]],
      [c, [a]],
    ]);
    expect(cycles(circle).map((cycle) => cycle.map(rel))).toEqual([['a.ts', 'b.ts', 'c.ts', 'a.ts']]);
    expect(
      cycles(
        new Map([
          [a, [b]],
          [b, []],
        ]),
      ),
    ).toEqual([]);
  });

  it('belong each to a module placed in a layer', () => {
    const unplaced = [...new Set([...graph.keys()].map(moduleOf))].filter((m) => layerOf(m) < 0);
    expect(unplaced).toEqual([]);
  });

  it("keep zod and Node.js built-ins out of the workflow bundle (what its entry's code reaches at run time)", () => {
    const packages = reachablePackages(path.join(SRC, 'workflows/index.ts'));
    // The walk reaches what the bundle needs: the SDK's workflow API.
    expect([...packages.keys()]).toContain('@temporalio/workflow');
    const builtins = new Set(builtinModules.flatMap((m) => [m, `node:${m}`]));
    const forbidden = [...packages].filter(([spec]) => spec === 'zod' || spec.startsWith('zod/') || builtins.has(spec));
    expect(forbidden.map(([spec, file]) => `${file} needs ${spec}`)).toEqual([]);
  });

  it('tell a type-only import from one the code runs (the bundle check can fail)', () => {
    // The journey request's schema module is zod at run time; the API needs it so.
    const api = reachablePackages(path.join(SRC, 'api/routes/v1/journeys.ts'));
    expect(api.has('zod')).toBe(true);
    expect([...reachablePackages(path.join(SRC, 'contract/journey-request.ts')).keys()]).toContain('zod');
  });

  it('run from a higher layer down to a lower one, never up or sideways', () => {
    const wrong: string[] = [];
    for (const [file, targets] of graph) {
      for (const target of targets) {
        const [from, to] = [moduleOf(file), moduleOf(target)];
        if (from !== to && layerOf(to) >= layerOf(from)) wrong.push(`${rel(file)} -> ${rel(target)}`);
      }
    }
    expect(wrong).toEqual([]);
  });
});
