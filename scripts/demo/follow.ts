// Following one journey: GET /v1/journeys/:id until it has finished (and its events could be read), the deadline
// passes, or the stack it runs on is gone; then it is judged.
import { sleep } from '../lib/http';
import { HttpError, type ApiClient, type JourneyView, type ReceivedEvent } from './api';
import type { DemoScenario } from './scenarios';
import { isFinished, isFinishing, verify } from './verify';

export interface Run {
  s: DemoScenario;
  journeyId: string;
  startedMs: number;
  view?: JourneyView;
  events?: ReceivedEvent[];
  done: boolean;
  timedOut: boolean;
  endedMs?: number;
  note?: string;
  problems: string[];
}

export function durationMs(run: Run, now = Date.now()): number {
  const v = run.view;
  if (run.done && v?.closedAt) return Date.parse(v.closedAt) - Date.parse(v.startedAt);
  return (run.endedMs ?? now) - run.startedMs;
}

export const fmtSeconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

interface FollowOptions {
  deadline: number;
  pollMs: number;
  gone: () => string | undefined;
}

export async function follow(
  client: ApiClient,
  run: Run,
  { deadline, pollMs, gone }: FollowOptions,
  changed: (r: Run) => void,
) {
  let lateReads = 0;
  while (Date.now() < deadline) {
    const why = gone();
    if (why) {
      run.done = true;
      run.endedMs = Date.now();
      run.problems.push(why);
      changed(run);
      return;
    }
    try {
      const { body } = await client.call(
        // Asked again on the next round, soon, and only while the stack runs.
        { method: 'GET', route: '/v1/journeys/{journeyId}', resend: false },
        (signal) =>
          client.api.GET('/v1/journeys/{journeyId}', { params: { path: { journeyId: run.journeyId } }, signal }),
        Math.max(1_000, Math.min(20_000, deadline - Date.now())),
      );
      run.view = body;
      if (body.journey.events) run.events = body.journey.events;
      run.note = body.source === 'query' ? undefined : `read from ${body.source}`;
      // A finished journey read from its result or visibility has no events: read again for the query.
      if (isFinished(body) && (body.source === 'query' || ++lateReads > 3)) {
        run.done = true;
        run.endedMs = Date.now();
        run.problems.push(...verify(run.s, body, run.events));
        changed(run);
        return;
      }
    } catch (err) {
      run.note = err instanceof Error ? err.message.split('\n')[0] : String(err);
      if (err instanceof HttpError && [401, 403, 404].includes(err.status)) {
        run.done = true;
        run.endedMs = Date.now();
        run.problems.push(err.message);
        changed(run);
        return;
      }
    }
    changed(run);
    const finishing = run.view !== undefined && isFinishing(run.view);
    await sleep(Math.min(finishing ? 200 : pollMs, deadline - Date.now()));
  }
  run.timedOut = true;
  run.endedMs = Date.now();
  changed(run);
}
