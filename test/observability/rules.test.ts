// The alerting rules and the Grafana dashboard in deploy/observability: they load (promtool, which
// scripts/install-promtool.sh takes from Debian's prometheus package before `npm test` and in CI; the YAML and JSON
// parsed here as well), their alert unit tests pass, and every expression selects only series that the API's /metrics or a worker's page really shows (the list in
// fixtures/exposed-metrics.json was written from both pages by worker-metrics.test.ts, which also checks it again).
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import {
  dashboardQueries,
  FIXTURE_PATH,
  loadDashboard,
  loadRules,
  metricNamesIn,
  OBSERVABILITY_DIR,
  RULES_PATH,
} from './support';

const exposed = new Set(JSON.parse(readFileSync(FIXTURE_PATH, 'utf8')) as string[]);
const unknownIn = (expr: string) => metricNamesIn(expr).filter((name) => !exposed.has(name));
const PROMTOOL = path.resolve(
  process.env.TEMPORAL_TOOLS_DIR ?? path.resolve(__dirname, '../../.tools'),
  'promtool/bin/promtool',
);

describe('metric names in PromQL', () => {
  it('are the selectors, not functions, labels, ranges, grouping or variables', () => {
    expect(
      metricNamesIn(
        'histogram_quantile(0.99, sum by (le, task_queue) (rate(a_bucket{task_queue=~"$q", x="y"}[$__rate_interval]))) ' +
          '/ on (instance) group_left (pod) b_total > 0.5 and absent(c{worker_type="W"}) unless d offset 5m',
      ),
    ).toEqual(['a_bucket', 'b_total', 'c', 'd']);
  });

  it('include a misspelt one, which the fixture then does not know', () => {
    expect(unknownIn('max(journey_api_inbox_dept) > 0')).toEqual(['journey_api_inbox_dept']);
    expect(unknownIn('max(journey_api_inbox_depth) > 0')).toEqual([]);
  });
});

describe('Prometheus alerting rules', () => {
  const rules = loadRules().groups.flatMap((g) => g.rules);

  it('are alerts with a severity, a summary and a sensible hold, each on series the engine exposes', () => {
    expect(rules.length).toBeGreaterThanOrEqual(10);
    for (const rule of rules) {
      expect({ alert: rule.alert, severity: (rule.labels as { severity?: string } | undefined)?.severity }).toEqual({
        alert: expect.stringMatching(/^[A-Z][A-Za-z]+$/),
        severity: expect.stringMatching(/^(critical|warning|info)$/),
      });
      expect(rule).toHaveProperty('annotations.summary');
      if (rule.for !== undefined) expect(rule.for).toMatch(/^\d+[smh]$/);
      expect({ alert: rule.alert, names: metricNamesIn(rule.expr).length > 0 }).toEqual({
        alert: rule.alert,
        names: true,
      });
      expect({ alert: rule.alert, unknown: unknownIn(rule.expr) }).toEqual({ alert: rule.alert, unknown: [] });
    }
  });

  it('cover what an operator watches: attention, the inbox, the webhook, schedule-to-start, activity failures', () => {
    const used = new Set(rules.flatMap((r) => metricNamesIn(r.expr)));
    for (const name of [
      'journey_api_journeys_needing_attention',
      'journey_api_inbox_depth',
      'journey_api_inbox_oldest_age_seconds',
      'journey_api_webhook_ack_seconds_bucket',
      'temporal_workflow_task_schedule_to_start_latency_seconds_bucket',
      'temporal_activity_execution_failed_total',
      'temporal_sticky_cache_hit_total',
    ]) {
      expect(used).toContain(name);
    }
  });

  it('pass promtool check rules and their unit tests (promtool test rules)', () => {
    if (!existsSync(PROMTOOL))
      throw new Error(
        `promtool is not installed at ${PROMTOOL}: bash scripts/install-promtool.sh (npm test's pretest runs it)`,
      );
    const run = (args: string[]) =>
      execFileSync(PROMTOOL, args, { cwd: OBSERVABILITY_DIR, encoding: 'utf8', stdio: 'pipe' });
    expect(run(['check', 'rules', RULES_PATH])).toMatch(new RegExp(`SUCCESS: ${rules.length} rules found`));
    expect(run(['test', 'rules', 'prometheus-rules.test.yml'])).toMatch(/SUCCESS/);
  });
});

describe('Grafana dashboard', () => {
  it('parses, and every panel queries series the engine exposes', () => {
    const dashboard = loadDashboard();
    expect(dashboard.title).toBe('Patient journey engine');
    const panels = dashboardQueries();
    expect(panels.length).toBeGreaterThanOrEqual(12);
    for (const { panel, exprs } of panels) {
      expect({ panel, queries: exprs.filter((e) => e.trim() !== '').length > 0 }).toEqual({ panel, queries: true });
      for (const expr of exprs) expect({ panel, unknown: unknownIn(expr) }).toEqual({ panel, unknown: [] });
    }
  });

  it('shows the figures an operator asked for', () => {
    const titles = dashboardQueries().map((p) => p.panel);
    expect(titles).toEqual(
      expect.arrayContaining([
        'Journeys needing attention',
        'Callback inbox depth',
        'Oldest callback in the inbox',
        'Webhook acknowledgement latency',
        'Workflow task schedule-to-start latency',
        'Activity failures by activity type and by kind',
        'Sticky cache hit rate',
      ]),
    );
  });
});
