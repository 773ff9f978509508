// `npm run bench:growth`'s measurements at a step: the clinic API's starts and list, the admin API's count, the
// operator's batch query as `npm run ops` makes it, and PostgreSQL's bytes. Each latency is sampled one request at a
// time. Nothing here logs a response body: journey ids at most, never a patient.
import { Client as PgClient } from 'pg';
import { AdminClient, LIST_PAGE_SIZE, parseOptions, runOps } from '../../scripts/ops';
import { pool, startThroughApi } from './journeys';
import { summarize } from './stats';
import type { GrowthStep, Latency } from './growth-report';

/** The databases of the production stack whose tables are counted (scripts/lib/production-stack.ts names them). */
export const GROWTH_DATABASES = [
  'temporal',
  'temporal_visibility',
  'journeys',
  'journey_patient_keys',
  'journey_audit',
];

const latency = (values: number[]): Latency => {
  const s = summarize(values);
  return { n: s.count, p50: s.p50, p99: s.p99, samples: values.map((v) => Math.round(v * 10) / 10) };
};

/**
 * Start to start, at least this long between two requests that reach Temporal's visibility: the server's frontend
 * answers a namespace at most 10 visibility requests a second by default (frontend.namespaceRPS.visibility), and a
 * request over it waits for the client's retry (about 2 s in a first small run: a p99 of the limiter, not of the
 * query). A request of the admin search makes two (the page and the count).
 */
export const VISIBILITY_SPACING_MS = 250;

/**
 * `fn` timed `n` times, one after the other, each started at least `spacingMs` after the one before; a call that
 * throws stops the sampling with its error.
 */
export async function sample(n: number, fn: () => Promise<void>, spacingMs = 0): Promise<Latency> {
  const times: number[] = [];
  let last = -Infinity;
  for (let i = 0; i < n; i++) {
    const wait = last + spacingMs - performance.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    const t = (last = performance.now());
    await fn();
    times.push(performance.now() - t);
  }
  return latency(times);
}

async function getJson<T>(url: string, token: string, headers: Record<string, string> = {}): Promise<T> {
  const res = await fetch(url, {
    headers: { authorization: `Bearer ${token}`, ...headers },
    signal: AbortSignal.timeout(120_000),
  });
  const text = await res.text();
  if (!res.ok) {
    // The problem's title and status only (a problem names no patient, but a body is never logged whole).
    const title = /"title"\s*:\s*"([^"]{0,120})"/.exec(text)?.[1] ?? '';
    throw new Error(`GET ${new URL(url).pathname} answered ${res.status}${title ? `: ${title}` : ''}`);
  }
  return JSON.parse(text) as T;
}

/** `n` journeys started through the clinic API (`concurrency` at once), each a patient of its own who waits. */
export async function apiStarts(
  apiUrl: string,
  token: string,
  keyPrefix: string,
  n: number,
  concurrency: number,
): Promise<GrowthStep['apiStart']> {
  const times: number[] = [];
  let refused = 0;
  await pool(
    Array.from({ length: n }, (_, i) => i),
    concurrency,
    async (i) => {
      const r = await startThroughApi(apiUrl, token, `${keyPrefix}-${String(i).padStart(4, '0')}`, 'Waiting');
      times.push(r.startMs);
      if (r.status !== 201 && r.status !== 200) refused++;
    },
  );
  return { ...latency(times), refused };
}

interface ListPage {
  journeys: unknown[];
  nextPageToken: string | null;
}

/** The clinic's list: the first page (20, the default), and a page of 100 `depth` pages in (at most what there is). */
export async function clinicList(
  apiUrl: string,
  token: string,
  samples: number,
  depth: number,
): Promise<GrowthStep['list']> {
  const first = await sample(
    samples,
    async () => {
      await getJson<ListPage>(`${apiUrl}/v1/journeys`, token);
    },
    VISIBILITY_SPACING_MS,
  );
  const pageSize = 100;
  let tokenAt: string | null = null;
  let page = 1;
  for (; page <= depth; page++) {
    const q = new URLSearchParams({ pageSize: String(pageSize), ...(tokenAt ? { nextPageToken: tokenAt } : {}) });
    const body: ListPage = await getJson<ListPage>(`${apiUrl}/v1/journeys?${q.toString()}`, token);
    if (!body.nextPageToken) break;
    tokenAt = body.nextPageToken;
  }
  // The page after the last token walked: page `page` (1 when the list has a single page).
  const q = new URLSearchParams({ pageSize: String(pageSize), ...(tokenAt ? { nextPageToken: tokenAt } : {}) });
  const deep = await sample(
    samples,
    async () => {
      await getJson<ListPage>(`${apiUrl}/v1/journeys?${q.toString()}`, token);
    },
    VISIBILITY_SPACING_MS,
  );
  return { first, deep: { ...deep, page: tokenAt ? page : 1, pageSize } };
}

interface SearchPage {
  count: number | null;
  journeys: unknown[];
  nextPageToken: string | null;
}

/** The admin API's count (its search's first page, pageSize 1) of a visibility query, restricted to the clinic. */
export async function adminCount(
  apiUrl: string,
  adminToken: string,
  clinicId: string,
  query: string,
  samples: number,
): Promise<Latency & { value: number | null }> {
  let value: number | null = null;
  const p = new URLSearchParams({ query, clinicId, pageSize: '1' });
  const l = await sample(
    samples,
    async () => {
      const body = await getJson<SearchPage>(`${apiUrl}/admin/journeys?${p.toString()}`, adminToken, {
        'x-actor': 'bench-growth',
      });
      value = body.count;
    },
    VISIBILITY_SPACING_MS,
  );
  return { ...l, value };
}

/**
 * The operator's batch query, as `npm run ops -- cancel --query <q> --clinic <id>` makes it: its dry run (runOps
 * itself, its output dropped: journey ids and stages), `samples` times; and the listing a batch action makes before
 * it acts, every page (ops' LIST_PAGE_SIZE) through the admin API (ops' listJourneys, which ops does not export), once.
 */
export async function opsQuery(
  apiUrl: string,
  adminToken: string,
  clinicId: string,
  query: string,
  samples: number,
): Promise<GrowthStep['ops']> {
  const opts = parseOptions(
    [
      'cancel',
      '--query',
      query,
      '--clinic',
      clinicId,
      '--dry-run',
      '--note',
      'bench growth',
      '--api',
      apiUrl,
      '--admin-token',
      adminToken,
      '--actor',
      'bench-growth',
    ],
    {},
  );
  if (!opts) throw new Error('ops: the dry run options were not taken');
  const io = { out: () => undefined, err: () => undefined, isTTY: false };
  const dryRun = await sample(
    samples,
    async () => {
      await runOps(opts, io);
    },
    VISIBILITY_SPACING_MS,
  );
  const client = new AdminClient(apiUrl, adminToken, 120_000, 'bench-growth');
  const t = performance.now();
  let matched = 0;
  let pages = 0;
  let next: string | null = null;
  let restricted = query;
  const pageMs: number[] = [];
  do {
    const p = new URLSearchParams({
      query,
      running: 'true',
      clinicId,
      pageSize: String(LIST_PAGE_SIZE),
      ...(next ? { nextPageToken: next } : {}),
    });
    const tp = performance.now();
    const page: SearchPage & { query: string } = await client.request('GET', `/admin/journeys?${p.toString()}`);
    pageMs.push(performance.now() - tp);
    restricted = page.query;
    matched += page.journeys.length;
    pages++;
    next = page.nextPageToken;
  } while (next);
  return { query: restricted, dryRun, listAll: { ms: performance.now() - t, matched, pages, page: latency(pageMs) } };
}

/** `url` (a PostgreSQL URL) to another database of the same server. */
export function urlOfDatabase(url: string, database: string): string {
  const u = new URL(url);
  u.pathname = `/${database}`;
  return u.toString();
}

/** pg_total_relation_size of every user table of each database (a database missing counts nothing). */
export async function tableBytes(superuserUrl: string, databases = GROWTH_DATABASES): Promise<GrowthStep['bytes']> {
  const byDatabase: Record<string, number> = {};
  const tables: { table: string; bytes: number }[] = [];
  for (const db of databases) {
    const pg = new PgClient({ connectionString: urlOfDatabase(superuserUrl, db), application_name: 'bench growth' });
    try {
      await pg.connect();
      const { rows } = await pg.query<{ t: string; b: string }>(
        `SELECT schemaname || '.' || relname AS t, pg_total_relation_size(relid)::text AS b
           FROM pg_catalog.pg_statio_user_tables`,
      );
      let sum = 0;
      for (const r of rows) {
        const b = Number(r.b);
        sum += b;
        tables.push({ table: `${db}.${r.t.replace(/^public\./, '')}`, bytes: b });
      }
      byDatabase[db] = sum;
    } catch (err) {
      // A database this stack does not have (yet): nothing in it.
      if ((err as { code?: string }).code !== '3D000') throw err;
      byDatabase[db] = 0;
    } finally {
      await pg.end().catch(() => undefined);
    }
  }
  tables.sort((a, b) => b.bytes - a.bytes);
  return {
    total: Object.values(byDatabase).reduce((a, b) => a + b, 0),
    byDatabase,
    largest: tables.slice(0, 10),
  };
}

/** The server's current write-ahead log position, in bytes from its start (for the WAL written between two reads). */
export async function walPosition(superuserUrl: string): Promise<number> {
  const pg = new PgClient({ connectionString: superuserUrl, application_name: 'bench growth' });
  try {
    await pg.connect();
    const { rows } = await pg.query<{ b: string }>(`SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::text AS b`);
    return Number(rows[0]!.b);
  } finally {
    await pg.end().catch(() => undefined);
  }
}
