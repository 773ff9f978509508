// Reading Prometheus pages and the metric names that deploy/observability's dashboard and alerting rules use.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';

export const OBSERVABILITY_DIR = path.resolve(__dirname, '../../deploy/observability');
export const DASHBOARD_PATH = path.join(OBSERVABILITY_DIR, 'grafana-dashboard.json');
export const RULES_PATH = path.join(OBSERVABILITY_DIR, 'prometheus-rules.yml');
/** The series names the API's and the worker's pages showed (worker-metrics.test.ts, UPDATE_METRICS_FIXTURE=1). */
export const FIXTURE_PATH = path.resolve(__dirname, 'fixtures/exposed-metrics.json');

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** The samples of a page in the text exposition format (no timestamps: neither prom-client nor the SDK writes any). */
export function parseExposition(text: string): Sample[] {
  const out: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line.trim() === '' || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)$/.exec(line);
    if (!m) throw new Error(`not an exposition line: ${line}`);
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]!] = l[2]!;
    out.push({ name: m[1]!, labels, value: Number(m[3]) });
  }
  return out;
}

/** The series names (as PromQL selects them: `x_bucket`, `x_total`) of a page. */
export function metricFamilies(text: string): Set<string> {
  return new Set(parseExposition(text).map((s) => s.name));
}

const KEYWORDS = new Set(['and', 'or', 'unless', 'bool', 'offset', 'by', 'without', 'on', 'ignoring', 'inf', 'nan']);

/**
 * The metric names a PromQL expression selects: the identifiers left once strings, label matchers, ranges, grouping
 * clauses, numbers and function calls are taken out. Grafana's `$variables` are taken out with them.
 */
export function metricNamesIn(expr: string): string[] {
  const bare = expr
    .replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'/g, ' ')
    .replace(/\{[^}]*\}/g, ' ')
    .replace(/\[[^\]]*\]/g, ' ')
    .replace(/\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' ')
    .replace(/\$\{?\w+\}?/g, ' ')
    .replace(/\b\d+(?:\.\d+)?(?:e[+-]?\d+)?[smhdwy]?\b/gi, ' ');
  const names: string[] = [];
  for (const m of bare.matchAll(/[a-zA-Z_:][a-zA-Z0-9_:]*/g)) {
    const after = bare.slice(m.index + m[0].length).trimStart();
    if (after.startsWith('(') || KEYWORDS.has(m[0].toLowerCase())) continue;
    names.push(m[0]);
  }
  return names;
}

export interface RuleFile {
  groups: { name: string; rules: { alert?: string; record?: string; expr: string; for?: string; labels?: object }[] }[];
}

export function loadRules(): RuleFile {
  return parse(readFileSync(RULES_PATH, 'utf8')) as RuleFile;
}

interface Panel {
  title?: string;
  type?: string;
  targets?: { expr?: string }[];
  panels?: Panel[];
}

export function loadDashboard(): { title: string; panels: Panel[] } {
  return JSON.parse(readFileSync(DASHBOARD_PATH, 'utf8')) as { title: string; panels: Panel[] };
}

/** Every panel with its queries (rows' nested panels included). */
export function dashboardQueries(): { panel: string; exprs: string[] }[] {
  const walk = (panels: Panel[]): { panel: string; exprs: string[] }[] =>
    panels.flatMap((p) => [
      ...(p.type === 'row'
        ? []
        : [{ panel: p.title ?? '(untitled)', exprs: (p.targets ?? []).map((t) => t.expr ?? '') }]),
      ...walk(p.panels ?? []),
    ]);
  return walk(loadDashboard().panels);
}

/** Every metric name the dashboard's queries and the rules' expressions select. */
export function usedMetricNames(): Set<string> {
  const exprs = [
    ...loadRules().groups.flatMap((g) => g.rules.map((r) => r.expr)),
    ...dashboardQueries().flatMap((p) => p.exprs),
  ];
  return new Set(exprs.flatMap(metricNamesIn));
}
