// Incident operations in bulk against a real Temporal dev server and a worker running the real journey workflow (the
// invite is ambiguous for patients named "Park", so those journeys park in needs_attention): the admin search and
// per-journey action routes, their restriction to journeys and clinics, their validation, and `npm run ops`
// (scripts/ops.ts) driving them over HTTP: dry run, real run, interrupted run, re-run, dead-letter replays.
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { restrictToJourneys } from '../../src/api/journey-query';
import { SearchAttr } from '../../src/contract/definitions';
import { exitCode, formatSummary, parseOptions, runOps, UsageError, type Io, type Options } from '../../scripts/ops';
import { useApiHarness } from '../support/api-harness';
import {
  auth,
  event1,
  eventually,
  expectProblem,
  fakeActivities,
  gfeBody,
  startJourney,
  TOKENS,
  withInviteInDoubt,
} from './support';

const TASK_QUEUE = 'api-operations';
const root = path.resolve(__dirname, '../..');

describe('incident operations in bulk', () => {
  const activities = withInviteInDoubt(
    fakeActivities(80_000).activities,
    (req) => req.input.patient.lastName === 'Park',
  );
  const stack = useApiHarness({
    taskQueue: TASK_QUEUE,
    worker: activities,
    app: { startForwarder: false },
    listen: true,
  });

  const admin = auth(TOKENS.admin);
  const get = (url: string) => stack.app.inject({ method: 'GET', url, headers: admin });
  const post = (url: string, payload: object) => stack.app.inject({ method: 'POST', url, headers: admin, payload });
  const search = (params: Record<string, string>) => get(`/admin/journeys?${new URLSearchParams(params).toString()}`);
  const journeyOf = (id: string, token = TOKENS.a) =>
    stack.app.inject({ method: 'GET', url: `/v1/journeys/${id}`, headers: auth(token) }).then((r) => r.json());

  /** Starts journeys whose invite is ambiguous; resolves when each is parked and visible as NeedsAttention. */
  async function park(prefix: string, n: number, token = TOKENS.a, clinicId = 'clinic-a'): Promise<string[]> {
    const ids: string[] = [];
    for (let i = 0; i < n; i++) {
      const body = gfeBody({ patient: { ...gfeBody().patient, lastName: 'Park' } });
      const res = await startJourney(stack.app, `${prefix}-${i}`, body, token);
      expect(res.statusCode).toBe(201);
      ids.push(res.json().journeyId);
    }
    await eventually(
      () => search({ query: `NeedsAttention = true AND ${idsClause(ids)}`, clinicId, running: 'true' }),
      (r) => r.json().count === n,
      { timeoutMs: 30_000, intervalMs: 250 },
    );
    return ids;
  }
  const idsClause = (ids: string[]) => `WorkflowId IN (${ids.map((id) => `'journey-${id}'`).join(', ')})`;

  function io(): Io & { text: () => string; errText: () => string } {
    let out = '';
    let err = '';
    return {
      out: (t) => (out += t),
      err: (t) => (err += t),
      isTTY: false,
      text: () => out,
      errText: () => err,
    };
  }
  const options = (argv: string[]): Options =>
    parseOptions([...argv, '--api', stack.url], { ADMIN_TOKEN: TOKENS.admin })!;

  describe('routes', () => {
    it('lists matching journeys with the count, the query as run and (on request) attention codes', async () => {
      const ids = await park('list', 3);
      const res = await search({ query: `NeedsAttention = true AND ${idsClause(ids)}`, attention: 'true' });
      expect(res.statusCode).toBe(200);
      const body = res.json();
      expect(body.query).toBe(`WorkflowType = 'patientJourney' AND (NeedsAttention = true AND ${idsClause(ids)})`);
      expect(body.count).toBe(3);
      expect(body.journeys.map((j: { journeyId: string }) => j.journeyId).sort()).toEqual([...ids].sort());
      expect(body.journeys[0]).toMatchObject({
        clinicId: 'clinic-a',
        stage: 'needs_attention',
        needsAttention: true,
        workflowStatus: 'RUNNING',
        attention: ['invite_ambiguous'],
      });
      expect(JSON.stringify(body)).not.toMatch(/Park|patient@example|4155550100|1990-01-01/);

      const page1 = (await search({ query: idsClause(ids), pageSize: '2' })).json();
      expect(page1.journeys).toHaveLength(2);
      const page2 = (await search({ query: idsClause(ids), pageSize: '2', nextPageToken: page1.nextPageToken })).json();
      expect(page2).toMatchObject({ count: null, nextPageToken: null });
      expect(page2.journeys).toHaveLength(1);
    });

    it('never reaches a workflow that is not a journey, nor another clinic', async () => {
      // A workflow of another type on the same namespace, with the journeys' search attributes and a journey-like id.
      await stack.client.workflow.start('someOtherWorkflow', {
        taskQueue: 'nobody-polls-this',
        workflowId: 'journey-jnotajourney',
        typedSearchAttributes: [
          { key: SearchAttr.ClinicId, value: 'clinic-a' },
          { key: SearchAttr.NeedsAttention, value: true },
        ],
      });
      const b = await park('clinic-b', 1, TOKENS.b, 'clinic-b');
      const everything = await eventually(
        () => search({ query: `WorkflowId = 'journey-jnotajourney' OR WorkflowId = 'journey-${b[0]}'` }),
        (r) => r.json().count === 1,
      );
      expect(everything.json().journeys.map((j: { journeyId: string }) => j.journeyId)).toEqual(b);

      const onlyA = await search({ query: `WorkflowId = 'journey-${b[0]}'`, clinicId: 'clinic-a' });
      expect(onlyA.json()).toMatchObject({ count: 0, journeys: [] });
      expect(onlyA.json().query).toBe(
        `WorkflowType = 'patientJourney' AND ClinicId = 'clinic-a' AND (WorkflowId = 'journey-${b[0]}')`,
      );

      // Breaking out of the parentheses, or a quote in the clinic id, is refused before Temporal sees it.
      for (const query of [
        "NeedsAttention = true) OR (WorkflowType = 'someOtherWorkflow'",
        "NeedsAttention = true OR WorkflowType = 'x' ORDER BY StartTime",
        "ClinicId = 'clinic-a",
        "ClinicId = 'a\\' OR 1=1",
        'NeedsAttention = true; DROP',
        '  ',
      ]) {
        expectProblem(await search({ query }), 400, ['querystring.query']);
      }
      expectProblem(await search({ query: 'NeedsAttention = true', clinicId: "a' OR 'x'='x" }), 400, [
        'querystring.clinicId',
      ]);
      // A query Temporal itself refuses (an unknown attribute) is a 400 naming the query too.
      const unknown = await search({ query: 'NoSuchAttribute = 1' });
      expect(expectProblem(unknown, 400, ['query']).detail).toMatch(/Temporal refused the query/);

      // Acting on the other workflow by its id finds no journey; acting for another clinic neither.
      const action = { actor: 'oncall-test', note: 'test' };
      expectProblem(await post('/admin/journeys/jnotajourney/abandon', action), 404);
      expectProblem(await post(`/admin/journeys/${b[0]}/abandon`, { ...action, clinicId: 'clinic-a' }), 404);
      expect((await journeyOf(b[0]!, TOKENS.b)).journey.stage).toBe('needs_attention');
    });

    it('validates every input and names the field', async () => {
      expectProblem(await get('/admin/journeys'), 400, ['querystring.query']);
      expectProblem(await search({ query: 'NeedsAttention = true', pageSize: '0' }), 400, ['querystring.pageSize']);
      expectProblem(await search({ query: 'NeedsAttention = true', attention: 'true', pageSize: '500' }), 400, [
        'querystring.pageSize',
      ]);
      expectProblem(await search({ query: 'NeedsAttention = true', clinicId: 'clinic-z' }), 400, [
        'querystring.clinicId',
      ]);
      expectProblem(await search({ query: 'NeedsAttention = true', running: 'yes' }), 400, ['querystring.running']);
      expectProblem(await search({ query: 'NeedsAttention = true', extra: '1' }), 400);

      const url = '/admin/journeys/jabc/abandon';
      // With the admin token, who acts comes in the body or in X-Actor; neither is a 400 naming the actor.
      const nameless = { authorization: admin.authorization! };
      expectProblem(await stack.app.inject({ method: 'POST', url, headers: nameless, payload: { note: 'n' } }), 400, [
        'actor',
      ]);
      expectProblem(await post(url, { actor: 'a' }), 400, ['note']);
      expectProblem(await post(url, { actor: ' ', note: 'n' }), 400, ['actor']);
      expectProblem(await post(url, { actor: 'a', note: 'called patient@example.com' }), 400, ['note']);
      expectProblem(await post(url, { actor: 'a', note: 'phone 415 555 0100 x' }), 400, ['note']);
      expectProblem(await post(url, { actor: 'a', note: 'n', clinicId: 'clinic-z' }), 400, ['clinicId']);
      expectProblem(await post(url, { actor: 'a', note: 'n', operationId: 'bad id' }), 400, ['operationId']);
      expectProblem(await post(url, { actor: 'a', note: 'n', surprise: true }), 400);
      expectProblem(await post('/admin/journeys/jabc/explode', { actor: 'a', note: 'n' }), 400, ['params.action']);
      expectProblem(await post('/admin/journeys/j%20x/abandon', { actor: 'a', note: 'n' }), 400, ['params.journeyId']);
      expectProblem(await get('/admin/dead-letters?reason=lost'), 400, ['querystring.reason']);
      expectProblem(await get('/admin/dead-letters?since=yesterday'), 400, ['querystring.since']);

      const anon = await stack.app.inject({ method: 'GET', url: '/admin/journeys?query=NeedsAttention%3Dtrue' });
      expectProblem(anon, 401);
      const clinicToken = await stack.app.inject({
        method: 'POST',
        url: url,
        headers: auth(TOKENS.a),
        payload: { actor: 'a', note: 'n' },
      });
      expectProblem(clinicToken, 401);
    });

    it('acts once: a repeat is refused with the reason, or answered again under the same operation id', async () => {
      const [parked] = await park('act', 1);
      const body = { actor: 'oncall-test', note: 'INC-1 retry after outage', operationId: 'op-1' };
      const first = await post(`/admin/journeys/${parked}/retry`, body);
      expect(first.statusCode).toBe(200);
      expect(first.json()).toMatchObject({ journeyId: parked, action: 'retry', outcome: 'done' });
      // The same request again (a client that timed out and retried) is answered, not refused.
      const retried = await post(`/admin/journeys/${parked}/retry`, body);
      expect(retried.statusCode).toBe(200);
      expect(retried.json().result).toEqual(first.json().result);
      // Another operation finds the journey parked again (the invite is still ambiguous), then not parked.
      await eventually(
        () => journeyOf(parked!),
        (j) => j.journey.stage === 'needs_attention',
      );
      const abandon = await post(`/admin/journeys/${parked}/abandon`, { ...body, operationId: 'op-2' });
      expect(abandon.json()).toMatchObject({ outcome: 'done', result: { stage: 'abandoned' } });
      const ended = await eventually(
        () => journeyOf(parked!),
        (j) => j.workflowStatus === 'COMPLETED',
      );
      // Both actions are in the journey: who, when, what, why (the retried request once).
      expect(ended.journey.actions).toEqual([
        expect.objectContaining({ action: 'retry', actor: 'oncall-test', note: 'INC-1 retry after outage' }),
        expect.objectContaining({ action: 'abandon', actor: 'oncall-test', note: 'INC-1 retry after outage' }),
      ]);
      // The journey has ended: the same operation still gets its answer, another one the journey's refusal.
      const retriedAbandon = await post(`/admin/journeys/${parked}/abandon`, { ...body, operationId: 'op-2' });
      expect(retriedAbandon.json()).toMatchObject({ outcome: 'done', result: { stage: 'abandoned' } });
      const again = await post(`/admin/journeys/${parked}/abandon`, { ...body, operationId: 'op-3' });
      expect(expectProblem(again, 409).detail).toBe('the journey has ended (workflow completed)');
      const plain = await post(`/admin/journeys/${parked}/abandon`, { actor: 'a', note: 'n' });
      expect(expectProblem(plain, 409).detail).toBe('the journey has ended (workflow completed)');
    });

    it('cancels and resends through the journey, refusing where they do not apply', async () => {
      const started = await startJourney(stack.app, 'act-invited');
      const id = started.json().journeyId as string;
      await eventually(
        () => journeyOf(id),
        (j) => j.journey?.stage === 'awaiting_consultation',
      );
      const body = { actor: 'oncall-test', note: 'INC-2' };
      expectProblem(await post(`/admin/journeys/${id}/retry`, body), 409);
      const resend = await post(`/admin/journeys/${id}/resend`, body);
      expect(resend.json()).toMatchObject({ outcome: 'done', result: { resent: [expect.any(Number)] } });
      const cancel = await post(`/admin/journeys/${id}/cancel`, body);
      expect(cancel.json()).toMatchObject({ outcome: 'done', result: { cancelled: [expect.any(Number)] } });
      expect(expectProblem(await post(`/admin/journeys/${id}/cancel`, body), 409).detail).toMatch(/ended|nothing/);
    });

    it('resets a journey to a workflow task: a new run decides again, once per operation; a point before the invite or a build that never ran is refused', async () => {
      const started = await startJourney(stack.app, 'act-reset');
      const id = started.json().journeyId as string;
      await eventually(
        () => journeyOf(id),
        (j) => j.journey?.stage === 'awaiting_consultation',
      );
      const handle = stack.client.workflow.getHandle(`journey-${id}`);
      const before = (await handle.describe()).runId;
      const body = { actor: 'oncall-test', note: 'INC-3 bad build', operationId: 'op-reset-1' };
      const reset = await post(`/admin/journeys/${id}/reset`, body);
      expect(reset.statusCode).toBe(200);
      const { runId, resetTo } = reset.json().result as { runId: string; resetTo: number };
      expect(runId).not.toBe(before);
      expect(resetTo).toBeGreaterThan(4);
      // The new run goes on where the old one was, under the same journey.
      await eventually(
        () => handle.describe(),
        (d) => d.runId === runId && d.status.name === 'RUNNING',
      );
      await eventually(
        () => journeyOf(id),
        (j) => j.journey?.stage === 'awaiting_consultation',
      );
      // The same operation again (a retried request): the same answer, not a second reset.
      const retried = await post(`/admin/journeys/${id}/reset`, body);
      expect(retried.json().result).toMatchObject({ runId });
      expect((await handle.describe()).runId).toBe(runId);
      // Who and why are in the history, at the reset.
      const history = await stack.client.workflow.getHandle(`journey-${id}`, runId).fetchHistory();
      const failed = history.events?.find(
        (e) => e.workflowTaskFailedEventAttributes,
      )?.workflowTaskFailedEventAttributes;
      expect(failed?.failure?.message).toContain('oncall-test: INC-3 bad build [operation op-reset-1]');
      const refused = await post(`/admin/journeys/${id}/reset`, {
        ...body,
        operationId: 'op-reset-2',
        badBuild: 'no-such-build',
      });
      expect(expectProblem(refused, 409).detail).toBe(
        "no workflow task of build no-such-build in the journey's history",
      );
      const early = await post(`/admin/journeys/${id}/reset`, {
        ...body,
        operationId: 'op-reset-3',
        afterEvent: 'WorkflowExecutionStarted',
      });
      expect(expectProblem(early, 409).detail).toMatch(/would send a second invite$/);
      const both = await post(`/admin/journeys/${id}/reset`, { ...body, badBuild: 'b', afterEvent: 'TimerFired' });
      expect(both.statusCode).toBe(400);
    });
  });

  describe('npm run ops', () => {
    it('dry run: prints the count and a sample, and changes nothing', async () => {
      const ids = await park('dry', 4);
      const query = `NeedsAttention = true AND ${idsClause(ids)}`;
      const out = io();
      const summary = await runOps(
        options(['abandon', '--query', query, '--dry-run', '--actor', 'a', '--note', 'n', '--sample', '2']),
        out,
      );
      expect(summary).toBeUndefined();
      expect(out.text()).toMatch(/^4 running journeys match: WorkflowType = 'patientJourney' AND ExecutionStatus/);
      expect(out.text()).toMatch(/journey\s+clinic\s+stage\s+attention\s+started/);
      expect(out.text()).toMatch(/clinic-a\s+needs_attention\s+invite_ambiguous/);
      expect(out.text()).toMatch(/\.\.\. and 2 more/);
      expect(out.text()).toMatch(/Dry run: no journey was changed/);
      for (const id of ids) expect((await journeyOf(id)).journey.stage).toBe('needs_attention');
    });

    it('abandons every matching parked journey, and a second run refuses or finds none, never fails', async () => {
      const ids = await park('bulk', 12);
      const other = await startJourney(stack.app, 'bulk-invited');
      const invited = other.json().journeyId as string;
      const query = `NeedsAttention = true AND ${idsClause([...ids, invited])}`;
      const argv = ['abandon', '--query', query, '--actor', 'oncall-test', '--note', 'INC-3 outage', '--rate', '200'];
      const out = io();
      const summary = (await runOps(options([...argv, '--concurrency', '4']), out))!;
      expect(summary).toMatchObject({ matched: 12, done: 12, refused: 0, failed: 0, interrupted: false });
      expect(exitCode(summary)).toBe(0);
      // A line per 10 % when not on a terminal, the last one at 100 %.
      const lines = out.errText().trim().split('\n');
      expect(lines.length).toBeGreaterThanOrEqual(5);
      expect(lines.at(-1)).toMatch(/^abandon: 12\/12 \(100 %\)\s+done 12\s+refused 0\s+failed 0/);
      expect(formatSummary(summary)).toMatch(/outcome\s+count\s+reason\ndone\s+12\nrefused\s+0\nfailed\s+0/);
      for (const id of ids) {
        expect((await journeyOf(id)).journey).toMatchObject({ stage: 'abandoned' });
      }
      expect((await journeyOf(invited)).journey.stage).toBe('awaiting_consultation');

      // Again: every journey has ended (none left to match), or the ones visibility still lists are refused.
      const again = (await runOps(options(argv), io()))!;
      expect(again.failed).toBe(0);
      expect(again.done).toBe(0);
      expect(again.refused).toBe(again.matched);
      // Each journey again by id, whatever visibility says: refused with the journey's reason.
      const direct = await Promise.all(
        ids.map((id) => post(`/admin/journeys/${id}/abandon`, { actor: 'oncall-test', note: 'again' })),
      );
      expect(direct.map((r) => r.statusCode)).toEqual(ids.map(() => 409));
    });

    it('stops cleanly when interrupted, and the same command again finishes the rest', async () => {
      const ids = await park('stop', 10);
      const query = `NeedsAttention = true AND ${idsClause(ids)}`;
      const argv = ['abandon', '--query', query, '--actor', 'oncall-test', '--note', 'INC-4'];
      const stop = new AbortController();
      const out = io();
      let handled = 0;
      const first = (await runOps(options([...argv, '--concurrency', '2', '--rate', '20']), {
        ...out,
        err: (t) => {
          out.err(t);
          if (++handled === 3) stop.abort();
        },
        stop: stop.signal,
      }))!;
      expect(first.interrupted).toBe(true);
      expect(first.failed).toBe(0);
      expect(first.done).toBeGreaterThanOrEqual(1);
      expect(first.done + first.notAttempted).toBe(10);
      expect(exitCode(first)).toBe(130);
      expect(formatSummary(first)).toMatch(/interrupted, \d+ not attempted/);

      const second = (await runOps(options(argv), io()))!;
      expect(second.failed).toBe(0);
      expect(second.done).toBe(first.notAttempted);
      for (const id of ids) expect((await journeyOf(id)).journey.stage).toBe('abandoned');
    });

    it('keeps to one clinic with --clinic', async () => {
      const a = await park('clinic-run-a', 2);
      const b = await park('clinic-run-b', 2, TOKENS.b, 'clinic-b');
      const query = `NeedsAttention = true AND ${idsClause([...a, ...b])}`;
      const summary = (await runOps(
        options(['abandon', '--query', query, '--clinic', 'clinic-b', '--actor', 'oncall-test', '--note', 'INC-5']),
        io(),
      ))!;
      expect(summary).toMatchObject({ matched: 2, done: 2, failed: 0 });
      for (const id of a) expect((await journeyOf(id)).journey.stage).toBe('needs_attention');
      for (const id of b) expect((await journeyOf(id, TOKENS.b)).journey.stage).toBe('abandoned');
    });

    it('replays dead letters in bulk, filtered by reason and time; a second run refuses what is still undeliverable', async () => {
      const [parked] = await park('dead', 1);
      const letters = stack.app.callbacks.inbox.deadLetters;
      const letter = (journeyId: string, reason: 'journey_not_found' | 'unparseable', receivedAt: string) =>
        letters.add({
          journeyId,
          reason,
          detail: 'test',
          receivedAt,
          deliveryId: `d-${journeyId}-${receivedAt}`,
          rawBody: JSON.stringify(event1(123)),
        });
      await letter(parked!, 'journey_not_found', '2026-01-02T00:00:00.000Z');
      await letter('jnosuchjourney', 'journey_not_found', '2026-01-03T00:00:00.000Z');
      await letter('jnosuchjourney', 'journey_not_found', '2025-12-01T00:00:00.000Z');
      await letter(parked!, 'unparseable', '2026-01-04T00:00:00.000Z');

      const filtered = await get('/admin/dead-letters?reason=journey_not_found&since=2026-01-01T00:00:00Z&limit=1');
      expect(filtered.json().deadLetters).toHaveLength(1);
      expect(filtered.json().next).not.toBeNull();

      const argv = [
        'replay-dead-letters',
        '--reason',
        'journey_not_found',
        '--since',
        '2026-01-01T00:00:00Z',
        '--actor',
        'oncall-test',
      ];
      const dry = io();
      expect(await runOps(options([...argv, '--dry-run']), dry)).toBeUndefined();
      expect(dry.text()).toMatch(/^2 dead letters \(reason journey_not_found, received since 2026-01-01T00:00:00Z\)/);
      expect(dry.text()).toMatch(/Dry run: nothing was replayed/);
      expect(await letters.count()).toBe(4);

      const run = (await runOps(options(argv), io()))!;
      expect(run).toMatchObject({ matched: 2, done: 1, refused: 1, failed: 0 });
      expect([...run.refusedReasons.keys()][0]).toMatch(/no journey jnosuchjourney exists/);
      expect(await letters.count()).toBe(3);
      const again = (await runOps(options(argv), io()))!;
      expect(again).toMatchObject({ matched: 1, done: 0, refused: 1, failed: 0 });
      expect(exitCode(again)).toBe(0);
    });
  });
});

describe('query restriction', () => {
  it('wraps the query and ANDs the workflow type, the clinic and the running state', () => {
    expect(restrictToJourneys(' NeedsAttention = true OR JourneyStage = "x" ', { clinicId: "o'brien" })).toBe(
      `WorkflowType = 'patientJourney' AND ClinicId = 'o\\'brien' AND (NeedsAttention = true OR JourneyStage = "x")`,
    );
    expect(restrictToJourneys("JourneyStage = 'a)b'", { runningOnly: true })).toBe(
      `WorkflowType = 'patientJourney' AND ExecutionStatus = 'Running' AND (JourneyStage = 'a)b')`,
    );
    expect(restrictToJourneys("Scenario = 'it''s (fine'")).toContain("(Scenario = 'it''s (fine')");
  });

  it.each([
    ["a = 1) OR (b = '2'", /never opened/],
    ['(a = 1', /never closes/],
    ["a = 'x", /never closed/],
    ['a = 1 order  by StartTime', /ORDER BY/],
    ['a = 1 GROUP BY ExecutionStatus', /GROUP BY/],
    ["a = '\\' OR 1=1", /backslash/],
    ['a = 1; b = 2', /";"/],
    ['', /empty/],
  ])('refuses %j', (query, why) => {
    expect(() => restrictToJourneys(query)).toThrow(why);
  });
});

describe('ops command line', () => {
  const base = ['--actor', 'oncall-alice', '--note', 'INC-9'];
  it('defaults to the local API and token, and takes API_PORT, API_URL and ADMIN_TOKEN', () => {
    const o = parseOptions(['abandon', '--query', 'NeedsAttention=true', ...base], {})!;
    expect(o).toMatchObject({
      command: 'abandon',
      api: 'http://127.0.0.1:3000',
      token: 'local-admin-token',
      dryRun: false,
      concurrency: 8,
      ratePerSecond: 25,
      query: 'NeedsAttention=true',
      actor: 'oncall-alice',
      note: 'INC-9',
    });
    expect(parseOptions(['retry', '--query', 'a=1', ...base], { API_PORT: '13000' })!.api).toBe(
      'http://127.0.0.1:13000',
    );
    const remote = parseOptions(['retry', '--query', 'a=1', ...base, '--rate', '5/s', '--concurrency', '2'], {
      API_URL: 'https://ops.example/',
      ADMIN_TOKEN: 'secret',
    })!;
    expect(remote).toMatchObject({ api: 'https://ops.example', token: 'secret', ratePerSecond: 5, concurrency: 2 });
    expect(remote.tokenSource).toBe('ADMIN_TOKEN');
    const replay = ['replay-dead-letters', '--dry-run', '--since', '2026-11-23T10:00:00Z', '--actor', 'oncall-test'];
    expect(parseOptions(replay, {})).toMatchObject({
      command: 'replay-dead-letters',
      dryRun: true,
      since: '2026-11-23T10:00:00Z',
      actor: 'oncall-test',
    });
    expect(parseOptions(['--help'], {})).toBeUndefined();
  });

  it.each([
    [[], /give an action/],
    [['explode', '--query', 'a=1', ...base], /unknown action "explode"/],
    [['abandon', ...base], /--query is required/],
    [['abandon', '--query', 'a=1) OR (b=2', ...base], /--query closes a parenthesis/],
    [['abandon', '--query', 'a=1', '--note', 'n'], /--actor is required/],
    [['abandon', '--query', 'a=1', '--actor', 'a'], /--note is required/],
    [['abandon', '--query', 'a=1', '--actor', 'a', '--note', 'mail bob@example.com'], /--note looks like an e-mail/],
    [['abandon', '--query', 'a=1', ...base, '--concurrency', '0'], /--concurrency takes a whole number/],
    [['abandon', '--query', 'a=1', ...base, '--rate', 'fast'], /--rate takes actions per second/],
    [['abandon', '--query', 'a=1', ...base, '--limit', '-3'], /--limit/],
    [['abandon', '--query', 'a=1', ...base, '--clinic', "x' OR"], /--clinic must be a clinic id/],
    [['abandon', '--query', 'a=1', ...base, '--api', 'nope'], /--api must be a URL/],
    [['abandon', '--query', 'a=1', ...base, '--api', 'https://ops.example'], /--admin-token \(or ADMIN_TOKEN\)/],
    [['abandon', '--query', 'a=1', ...base, '--bogus'], /--bogus/],
    [['abandon', '--query', 'a=1', ...base, '--reason', 'oversized'], /--reason is for replay-dead-letters/],
    [['replay-dead-letters', '--reason', 'lost', '--actor', 'a'], /--reason must be one of/],
    [['replay-dead-letters', '--since', 'yesterday', '--actor', 'a'], /--since takes an ISO 8601 time/],
    [['replay-dead-letters', '--query', 'a=1'], /--query is for the journey actions/],
    [['replay-dead-letters', '--dry-run'], /--actor is required with the admin token: who reads/],
    [['erase-patient', '--clinic', 'clinic-a', '--actor', 'a'], /--email is required/],
    [['erase-patient', '--email', 'pat@example.com', '--actor', 'a'], /--clinic is required/],
    [
      ['erase-patient', '--clinic', 'clinic-a', '--email', 'pat@example.com'],
      /--actor is required with the admin token: who asks/,
    ],
    [
      ['erase-patient', '--clinic', 'clinic-a', '--email', 'pat@example.com', '--actor', 'a', '--query', 'x=1'],
      /--query is not for erase-patient/,
    ],
    [['abandon', '--query', 'a=1', ...base, '--email', 'pat@example.com'], /--email is for erase-patient/],
  ])('refuses %j naming the flag', (argv, message) => {
    expect(() => parseOptions(argv, {})).toThrow(UsageError);
    expect(() => parseOptions(argv, {})).toThrow(message);
  });

  it('resets by a bad build or after an event type, reaching ended journeys too, and refuses both at once', () => {
    const base = ['reset', '--query', 'ExecutionStatus="Completed"', '--actor', 'a', '--note', 'INC-9'];
    expect(parseOptions([...base, '--bad-build', '25d4cdb4a391'], {})).toMatchObject({
      command: 'reset',
      badBuild: '25d4cdb4a391',
    });
    expect(parseOptions([...base, '--after-event', 'ActivityTaskCompleted'], {})).toMatchObject({
      afterEvent: 'ActivityTaskCompleted',
    });
    expect(() => parseOptions([...base, '--bad-build', 'a', '--after-event', 'TimerFired'], {})).toThrow(
      '--bad-build or --after-event, not both',
    );
    expect(() => parseOptions([...base, '--bad-build', 'a b'], {})).toThrow('--bad-build must be a build id');
    expect(() => parseOptions([...base, '--after-event', 'timer fired'], {})).toThrow('--after-event must be');
    expect(() =>
      parseOptions(['abandon', '--query', 'x=1', '--actor', 'a', '--note', 'n', '--bad-build', 'b'], {}),
    ).toThrow('--bad-build is for reset, not abandon');
  });

  it('exits 2 with the problem and the usage on a bad argument', () => {
    const r = spawnSync(path.join(root, 'node_modules/.bin/tsx'), ['scripts/ops.ts', 'abandon', '--actor', 'a'], {
      cwd: root,
      encoding: 'utf8',
      timeout: 30_000,
    });
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/^ops: --query is required/);
    expect(r.stderr).toMatch(/Usage:/);
  });
});
