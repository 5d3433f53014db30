import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { collectProcessMetrics, registry } from '../../apps/core/src/metrics';

/**
 * docs/grafana/mailservice.json is imported into Grafana as is: it must parse, take its data source as an input, and
 * every query must name only series this service exports (a renamed metric would leave a panel silently empty).
 */
const file = path.resolve(__dirname, '../../docs/grafana/mailservice.json');

interface Panel {
  title: string;
  type: string;
  datasource: { type: string; uid: string };
  targets?: { expr: string; refId: string }[];
}

const PROMQL_WORDS = new Set(['by', 'without', 'on', 'ignoring', 'group_left', 'group_right', 'bool', 'and', 'or', 'unless', 'offset', 'inf', 'nan']);

/** The series a PromQL expression reads: its identifiers, less functions, keywords, label names, strings and durations. */
export function seriesOf(expr: string): string[] {
  const bare = expr
    .replace(/\b\d+(\.\d+)?(e[+-]?\d+)?\b/gi, '0') // numbers (1e-9)
    .replace(/"(?:[^"\\]|\\.)*"/g, '""') // label values
    .replace(/\{[^}]*\}/g, '') // matchers
    .replace(/\[[^\]]*\]/g, '') // ranges
    .replace(/\s*\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ''); // label lists
  const names: string[] = [];
  for (const match of bare.matchAll(/[a-zA-Z_:][a-zA-Z0-9_:]*/g)) {
    const after = bare.slice(match.index! + match[0].length).trimStart();
    if (after.startsWith('(')) continue; // a function
    if (PROMQL_WORDS.has(match[0].toLowerCase())) continue;
    if (/^\d/.test(match[0]) || /^e\d/.test(match[0])) continue;
    names.push(match[0]);
  }
  return names;
}

/** Every series name the registry exports: a histogram's _bucket, _sum and _count, a summary's _sum and _count. */
async function exported(): Promise<Set<string>> {
  const names = new Set<string>();
  for (const metric of await registry.getMetricsAsJSON()) {
    names.add(metric.name);
    if (String(metric.type) === 'histogram') for (const s of ['_bucket', '_sum', '_count']) names.add(metric.name + s);
    if (String(metric.type) === 'summary') for (const s of ['_sum', '_count']) names.add(metric.name + s);
  }
  return names;
}

// the process figures, as the API's and the worker's main collect them at start
beforeAll(() => collectProcessMetrics());

describe('docs/grafana/mailservice.json', () => {
  const dashboard = JSON.parse(fs.readFileSync(file, 'utf8')) as { __inputs: { name: string; pluginId: string }[]; panels: Panel[]; title: string; uid: string };

  it('is a dashboard Grafana imports as is, its Prometheus data source an input', () => {
    expect(dashboard.title).toBe('mailservice');
    expect(dashboard.uid).toMatch(/^[a-z0-9-]{1,40}$/);
    expect(dashboard.__inputs).toEqual([expect.objectContaining({ name: 'DS_PROMETHEUS', pluginId: 'prometheus' })]);
    expect(dashboard.panels.length).toBeGreaterThanOrEqual(10);
    for (const panel of dashboard.panels) {
      expect(panel.datasource).toEqual({ type: 'prometheus', uid: '${DS_PROMETHEUS}' });
      expect(panel.targets?.length).toBeGreaterThan(0);
    }
    expect(new Set(dashboard.panels.map((p) => (p as unknown as { id: number }).id)).size).toBe(dashboard.panels.length);
  });

  it('names in every query only series the service exports', async () => {
    const known = await exported();
    const unknown: string[] = [];
    for (const panel of dashboard.panels) {
      for (const target of panel.targets ?? []) {
        const series = seriesOf(target.expr);
        if (!series.length) unknown.push(`${panel.title}: no series in ${target.expr}`);
        for (const name of series) if (!known.has(name)) unknown.push(`${panel.title}: ${name}`);
      }
    }
    expect(unknown).toEqual([]);
  });

  it('charts every metric of the service', async () => {
    const charted = new Set(dashboard.panels.flatMap((p) => (p.targets ?? []).flatMap((t) => seriesOf(t.expr))));
    const ours = (await registry.getMetricsAsJSON()).map((m) => m.name).filter((n) => /^mailservice_(http|queue|messages|deliveries|smtp|webhook|inbound)/.test(n));
    expect(ours.filter((name) => ![...charted].some((s) => s === name || s.startsWith(`${name}_`)))).toEqual([]);
  });

  it('reads series names out of PromQL (the reader the checks above rely on)', () => {
    expect(seriesOf('histogram_quantile(0.95, sum by (le, route) (rate(a_bucket{route=~"x|y"}[5m])))')).toEqual(['a_bucket']);
    expect(seriesOf('sum(rate(b_total{result="bounced"}[1h])) / clamp_min(sum(rate(b_total[1h])), 1e-9) * 60')).toEqual(['b_total', 'b_total']);
    expect(seriesOf('c_gauge')).toEqual(['c_gauge']);
  });

  it('has job and instance variables that every query is scoped by', () => {
    const variables = (dashboard as unknown as { templating: { list: { name: string; type: string; query?: unknown }[] } }).templating.list;
    expect(variables.map((v) => [v.name, v.type])).toEqual([
      ['DS_PROMETHEUS', 'datasource'],
      ['job', 'query'],
      ['instance', 'query'],
    ]);
    for (const panel of dashboard.panels) {
      for (const target of panel.targets ?? []) {
        // every selector of a series of ours carries both matchers
        for (const selector of target.expr.match(/mailservice_[a-z0-9_]+(\{[^}]*\})?/g) ?? []) {
          expect({ panel: panel.title, selector, scoped: selector.includes('job=~"$job"') && selector.includes('instance=~"$instance"') }).toEqual({ panel: panel.title, selector, scoped: true });
        }
      }
    }
  });

  it('has a panel for the age of the oldest deferred message', () => {
    const panel = dashboard.panels.find((p) => p.targets?.some((t) => t.expr.includes('mailservice_oldest_deferred_seconds')));
    expect(panel?.title).toMatch(/Oldest deferred message/);
  });
});

describe('docs/grafana/alerts.yml', () => {
  const promtool = (args: string[]) => spawnSync('/usr/bin/promtool', args, { cwd: path.dirname(file), encoding: 'utf8', timeout: 60_000 });

  it('is a rules file promtool accepts, with the six alerts', () => {
    const run = promtool(['check', 'rules', 'alerts.yml']);
    expect(run.stderr).toBe('');
    expect(run.stdout).toMatch(/SUCCESS: 6 rules found/);
    expect(run.status).toBe(0);
  });

  it("fires each alert on the series that should fire it, and not before (promtool's unit tests)", () => {
    const run = promtool(['test', 'rules', 'alerts.test.yml']);
    expect(run.stdout).toMatch(/SUCCESS/);
    expect(run.status).toBe(0);
  });

  it('names only series the service exports, and the jobs of the scrape configuration', async () => {
    const rules = fs.readFileSync(path.join(path.dirname(file), 'alerts.yml'), 'utf8');
    // js-yaml is in node_modules through jest (@istanbuljs/load-nyc-config); it only reads this file
    const yaml = require('js-yaml') as { load(text: string): { groups: { rules: { alert: string; expr: string }[] }[] } };
    const alerts = yaml.load(rules).groups.flatMap((g) => g.rules);
    expect(alerts.map((a) => a.alert)).toEqual(['MailserviceOldestDeferredTooOld', 'MailserviceBounceRateHigh', 'MailserviceQueueGrowing', 'MailserviceWorkerDown', 'MailserviceNoWorker', 'MailserviceTrackingCertificateExpiring']);
    const known = await exported();
    for (const { alert, expr } of alerts) {
      const series = seriesOf(expr).filter((name) => name !== 'up');
      for (const name of series) expect({ alert, name, known: known.has(name) }).toEqual({ alert, name, known: true });
    }
    const scrape = fs.readFileSync(path.join(path.dirname(file), 'prometheus/prometheus.yml'), 'utf8');
    for (const job of rules.matchAll(/job="([^"]+)"/g)) expect(scrape).toContain(`job_name: ${job[1]}`);
  });
});
