// The test tiers stay true: every test file is in exactly one of jest's projects (unit, integration, topology; their
// files in test/tiers.json), and no file of the unit tier reaches the support code that starts servers.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import tiers from '../tiers.json';

const ROOT = path.resolve(__dirname, '../..');
const TEST = path.join(ROOT, 'test');
type Tier = keyof typeof tiers;
const TIERS = Object.keys(tiers) as Tier[];

function testFiles(dir = TEST): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return entry.name === 'fixtures' ? [] : testFiles(full);
    return entry.name.endsWith('.test.ts') ? [path.relative(TEST, full)] : [];
  });
}

function tiersOf(file: string): Tier[] {
  return TIERS.filter(
    (tier) => tiers[tier].files.includes(file) || tiers[tier].folders.some((folder) => file.startsWith(`${folder}/`)),
  );
}

/**
 * Modules that start servers (relative to the repository, no extension); a unit test reaching one, directly or
 * through other test support, is not a unit test.
 */
const STARTS_SERVERS: Record<string, string> = {
  'test/support/postgres': 'PostgreSQL',
  'test/support/stack-processes': 'the stacks',
  'test/workflows/harness': 'the time-skipping server',
  'test/faults/harness/production': 'the production stack',
  'scripts/lib/postgres-server': 'PostgreSQL',
  'scripts/lib/temporal-server': 'the Temporal server',
  'scripts/lib/production-stack': 'the production stack',
  'scripts/lib/object-store': 'MinIO',
  'scripts/lib/stack/postgres-cluster': 'the PostgreSQL cluster',
  'scripts/lib/stack/postgres-backup': 'PostgreSQL restored from a backup',
  'scripts/local-stack': 'the local stack',
  '@temporalio/testing': 'Temporal servers',
  'playwright-core': 'Chromium',
};
/** Support modules a unit test may use in part: the exports that start servers ('*': the whole module). */
const STARTS_SERVERS_IN: Record<string, string[]> = {
  'test/support/temporal-env': ['startDevServer', 'startTimeSkippingServer', '*'],
  'test/support/dev-server-process': ['DevServerProcess', '*'],
  'test/inbox/support': ['postgresHarness', '*'],
  'test/faults/harness/stack': ['FaultStack', 'ManagedProcess', '*'],
};
/** The API harness: in the unit tier only without a Temporal server (temporal: 'unreachable'). */
const API_HARNESS = 'test/support/api-harness';

interface Reached {
  module: string;
  names: string[];
}

/** The modules a file imports at run time (type-only imports left out), resolved to repository paths for relative ones. */
function runtimeImports(file: string, source: ts.SourceFile): Reached[] {
  const found: Reached[] = [];
  const add = (specifier: string, names: string[] = []) => {
    const module = specifier.startsWith('.')
      ? path.relative(ROOT, path.resolve(path.dirname(file), specifier)).replace(/\.(ts|js|json)$/, '')
      : specifier;
    found.push({ module, names });
  };
  const visit = (node: ts.Node): void => {
    if (ts.isImportDeclaration(node) && ts.isStringLiteral(node.moduleSpecifier)) {
      const clause = node.importClause;
      if (clause?.isTypeOnly) return;
      const bindings = clause?.namedBindings;
      const names =
        bindings && ts.isNamedImports(bindings)
          ? bindings.elements.filter((e) => !e.isTypeOnly).map((e) => (e.propertyName ?? e.name).text)
          : ['*'];
      if (clause && !clause.name && bindings && ts.isNamedImports(bindings) && names.length === 0) return;
      add(node.moduleSpecifier.text, names);
      return;
    }
    if (ts.isExportDeclaration(node) && node.moduleSpecifier && ts.isStringLiteral(node.moduleSpecifier)) {
      if (!node.isTypeOnly) add(node.moduleSpecifier.text, ['*']);
      return;
    }
    if (
      ts.isCallExpression(node) &&
      (node.expression.kind === ts.SyntaxKind.ImportKeyword ||
        (ts.isIdentifier(node.expression) && node.expression.text === 'require')) &&
      node.arguments[0] &&
      ts.isStringLiteral(node.arguments[0])
    ) {
      add(node.arguments[0].text, ['*']);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

/** Each API harness the file builds, and whether it asks for no Temporal server (`temporal: 'unreachable'`). */
function apiHarnesses(source: ts.SourceFile): boolean[] {
  const harnesses: boolean[] = [];
  const visit = (node: ts.Node): void => {
    const callee = ts.isCallExpression(node) || ts.isNewExpression(node) ? node.expression : undefined;
    if (callee && ts.isIdentifier(callee) && ['useApiHarness', 'ApiHarness'].includes(callee.text)) {
      const options = (node as ts.CallExpression).arguments?.[0];
      harnesses.push(
        !!options &&
          ts.isObjectLiteralExpression(options) &&
          options.properties.some(
            (p) =>
              ts.isPropertyAssignment(p) &&
              p.name.getText(source) === 'temporal' &&
              ts.isStringLiteral(p.initializer) &&
              p.initializer.text === 'unreachable',
          ),
      );
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return harnesses;
}

function parse(file: string): ts.SourceFile {
  return ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.ES2022, true);
}

/** Why a unit test file is not one: the server-starting modules it reaches (through test and script support). */
function serverStarts(testFile: string): string[] {
  const problems: string[] = [];
  const seen = new Set<string>();
  const walk = (file: string, via: string[]) => {
    const source = parse(file);
    for (const { module, names } of runtimeImports(file, source)) {
      const chain = [...via, module].join(' → ');
      const starts = STARTS_SERVERS[module];
      const startingNames = STARTS_SERVERS_IN[module];
      if (starts) {
        problems.push(`${chain} (starts ${starts})`);
      } else if (module === API_HARNESS) {
        if (via.length > 0) problems.push(`${chain} (the API harness, outside the test file)`);
        else if (apiHarnesses(source).some((unreachable) => !unreachable))
          problems.push(`${chain} with a Temporal server (only temporal: 'unreachable' starts none)`);
      } else if (startingNames) {
        const starting = names.filter((name) => startingNames.includes(name));
        if (starting.length > 0) problems.push(`${chain}: ${starting.join(', ')} (starts servers)`);
      } else if (/^(test|scripts|bench)\//.test(module) && !seen.has(module)) {
        seen.add(module);
        const resolved = [`${module}.ts`, `${module}/index.ts`].map((p) => path.join(ROOT, p));
        const found = resolved.find((p) => {
          try {
            return readFileSync(p) !== undefined;
          } catch {
            return false;
          }
        });
        if (found) walk(found, [...via, module]);
      }
    }
  };
  walk(path.join(TEST, testFile), []);
  return problems;
}

describe('test tiers', () => {
  const files = testFiles();

  it('finds the test files', () => {
    expect(files.length).toBeGreaterThan(100);
  });

  it('puts every test file in exactly one tier', () => {
    const misplaced = files
      .map((file) => ({ file, in: tiersOf(file) }))
      .filter((f) => f.in.length !== 1)
      .map((f) => `${f.file}: ${f.in.length === 0 ? 'in no tier' : `in ${f.in.join(' and ')}`}`);
    expect(misplaced).toEqual([]);
  });

  it('is what jest runs: one project per tier, matching its folders and files', async () => {
    const config = (await import(path.join(ROOT, 'jest.config.js'))) as {
      default?: { projects: { displayName: string; testMatch: string[] }[] };
      projects?: { displayName: string; testMatch: string[] }[];
    };
    const projects = (config.projects ?? config.default?.projects)!;
    expect(projects.map((p) => p.displayName)).toEqual(TIERS);
    for (const project of projects) {
      const tier = tiers[project.displayName as Tier];
      expect(project.testMatch).toEqual([
        ...tier.folders.map((folder) => `<rootDir>/test/${folder}/**/*.test.ts`),
        ...tier.files.map((file) => `<rootDir>/test/${file}`),
      ]);
    }
  });

  it('keeps the unit tier free of code that starts servers', () => {
    const unit = files.filter((file) => tiersOf(file).includes('unit'));
    const problems = unit.flatMap((file) => serverStarts(file).map((problem) => `${file}: ${problem}`));
    expect(problems).toEqual([]);
  });

  it('catches a unit test that starts a server', () => {
    expect(serverStarts('workflows/cancel.test.ts').join('\n')).toMatch(/workflows\/harness/);
    expect(serverStarts('api/journeys.test.ts').join('\n')).toMatch(/with a Temporal server/);
    expect(serverStarts('api/server-entry.test.ts').join('\n')).toMatch(/DevServerProcess/);
    expect(serverStarts('inbox/forwarder.test.ts').join('\n')).toMatch(/postgresHarness/);
    expect(serverStarts('temporal/toolchain.test.ts').join('\n')).toMatch(/startDevServer/);
    expect(serverStarts('production/sign-in.test.ts').join('\n')).toMatch(/production-stack|playwright-core/);
    expect(serverStarts('api/bad-input.test.ts')).toEqual([]);
  });
});
