// One demo run against a ready API: read the catalog, start every scenario's journey (twice, to show the replay),
// follow them all and print the results.
import type { StartJourneyBody } from '../../src/api/schemas';
import type { CustomPharmacy } from '../../src/contract/journey-request';
import { sleep } from '../lib/http';
import { HttpError, UnreachableError, type ApiClient, type CatalogExam } from './api';
import { follow, fmtSeconds, type Run } from './follow';
import type { Options } from './options';
import { detailOf, green, Progress, red, resultTable } from './report';
import { demoScenarios, journeyBody, RETAIL_NCPDPID, sampleAttachment, type DemoScenario } from './scenarios';

export function say(message: string) {
  console.log(message);
}

export async function checkReady(client: ApiClient): Promise<void> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    try {
      await client.ready(5_000);
      return;
    } catch (err) {
      if (err instanceof UnreachableError) {
        throw new SetupError(
          `Nothing answers at ${client.base} (${err.reason}).\n` +
            'Start the stack with `npm start` in another terminal, or pass --start-stack ' +
            '(and --api if it listens elsewhere).',
        );
      }
      if (err instanceof HttpError && err.status === 503 && Date.now() < deadline) {
        say(`the API answers but is not ready yet (${err.problem?.detail ?? '503'}); waiting...`);
        await sleep(2_000);
        continue;
      }
      throw new SetupError(`The API at ${client.base} is not ready: ${(err as Error).message}`);
    }
  }
}

export class SetupError extends Error {
  override name = 'SetupError';
}

async function uploadAttachments(client: ApiClient, s: DemoScenario, catalog: Map<number, CatalogExam>) {
  const out: NonNullable<StartJourneyBody['attachments']> = [];
  for (const examId of s.exams) {
    const entry = catalog.get(examId);
    if (!entry) throw new SetupError(`exam ${examId} is not in the clinic's exam list (GET /v1/catalog/exams)`);
    if (entry.attachmentsRequired !== 2) continue;
    for (const kind of entry.attachments) {
      const { status, body } = await client.call({ method: 'POST', route: '/v1/attachments', resend: true }, (signal) =>
        client.api.POST('/v1/attachments', { body: sampleAttachment(kind, examId), signal }),
      );
      if (status !== 201) throw new SetupError(`POST /v1/attachments answered ${status}, expected 201`);
      out.push({ examId, attachment: body.attachment });
    }
  }
  return out;
}

async function startJourney(client: ApiClient, s: DemoScenario, runId: string, catalog: Map<number, CatalogExam>) {
  const attachments = await uploadAttachments(client, s, catalog);
  const body = journeyBody(s, runId, attachments);
  const key = `demo-${runId}-${s.key}`;
  const headers = { 'idempotency-key': key };
  const startedMs = Date.now();
  const start = () =>
    client.call({ method: 'POST', route: '/v1/journeys', idempotent: true }, (signal) =>
      client.api.POST('/v1/journeys', { body, params: { header: headers }, signal }),
    );
  const first = await start();
  // The same key and body again: the same journey, 200, never a second invite.
  const again = await start();
  const run: Run = { s, journeyId: first.body.journeyId, startedMs, done: false, timedOut: false, problems: [] };
  if (first.status !== 201 || !first.body.created) run.problems.push(`start answered ${first.status}, expected 201`);
  if (again.status !== 200 || again.body.created || again.body.journeyId !== first.body.journeyId) {
    run.problems.push(`the same Idempotency-Key again answered ${again.status} ${JSON.stringify(again.body)}`);
  }
  const uploaded = attachments.length
    ? `uploaded ${attachments.map((a) => `${a.attachment.kind} (${a.examId})`).join(', ')}`
    : 'no attachments needed';
  say(
    `  ${s.label}: exams ${s.exams.join(', ')}, ${uploaded}; started journey ${run.journeyId} ` +
      `(${first.status}; the same key again: ${again.status}${again.body.journeyId === run.journeyId ? ', same journey' : ''})`,
  );
  return run;
}

/** gone: why the journeys cannot be followed any more (the started stack exited), if so. */
export async function runDemo(opts: Options, client: ApiClient, gone: () => string | undefined): Promise<boolean> {
  const { body: catalogBody } = await client.call({ method: 'GET', route: '/v1/catalog/exams' }, (signal) =>
    client.api.GET('/v1/catalog/exams', { signal }),
  );
  const catalog = new Map(catalogBody.exams.map((e) => [e.examId, e]));
  const { body: found } = await client.call({ method: 'GET', route: '/v1/catalog/pharmacies/search' }, (signal) =>
    client.api.GET('/v1/catalog/pharmacies/search', {
      params: { query: { form: { ncpdpid: RETAIL_NCPDPID } } },
      signal,
    }),
  );
  // The search answers ready for scenario.pharmacy; its state is the service's two-letter code.
  const retail = found.pharmacies[0] as CustomPharmacy | undefined;
  if (!retail) throw new SetupError(`the pharmacy search found no pharmacy ${RETAIL_NCPDPID}`);
  say(
    `Clinic catalog: ${catalog.size} exams; retail pharmacy ${retail.ncpdpid} ${retail.name} (${retail.city}, ${retail.state}).`,
  );

  const runId = `${new Date().toISOString().replace(/[-:]/g, '').slice(0, 15)}-${Math.random().toString(36).slice(2, 6)}`;
  const scenarios = demoScenarios(retail);
  say(`Starting ${scenarios.length} journeys in test mode (run ${runId}):`);
  const t0 = Date.now();
  const runs: Run[] = [];
  for (const s of scenarios) runs.push(await startJourney(client, s, runId, catalog));

  const deadline = t0 + opts.timeoutMs;
  say(`\nFollowing them (GET /v1/journeys/:id every ${opts.pollMs / 1000} s, timeout ${opts.timeoutMs / 1000} s):`);
  const progress = new Progress(runs);
  progress.start();
  await Promise.all(
    runs.map((run) => follow(client, run, { deadline, pollMs: opts.pollMs, gone }, (r) => progress.changed(r))),
  );
  progress.stop();

  say('');
  say(resultTable(runs));
  const failed = runs.filter((r) => r.timedOut || r.problems.length > 0);
  for (const r of failed) {
    const why = [
      ...(r.timedOut
        ? [
            `did not finish within ${opts.timeoutMs / 1000} s: stage ${r.view?.journey.stage ?? 'unknown'}` +
              (detailOf(r, true) ? ` (${detailOf(r, true)})` : ''),
          ]
        : []),
      ...r.problems,
    ];
    say(red(`\n${r.s.label} (journey ${r.journeyId}):`));
    for (const p of why) say(`  - ${p}`);
  }
  const total = fmtSeconds(Date.now() - t0);
  say(
    failed.length === 0
      ? green(`\nAll ${runs.length} journeys ended as expected in ${total}.`)
      : red(`\n${failed.length} of ${runs.length} journeys did not end as expected (${total}).`),
  );
  say(client.retriedSummary());
  return failed.length === 0;
}
