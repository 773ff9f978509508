// Temporal goes down while the exam service keeps calling back: every callback is acknowledged from the inbox, and
// after Temporal is back each one reaches its journey exactly once (the journey records each delivery once).
import { seriesValue } from '../../src/api/metrics';
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
  webhookPath,
} from './support';

const TASK_QUEUE = 'api-outage';

function event2(patientExamId: number) {
  return {
    event: 2,
    exam_id: 301,
    patient_exam_id: patientExamId,
    exam_status: 'Approved',
    rx_status: 'Pharmacy Confirmed',
    prescribed_os_id: 9301,
    prescription: [{ prescription_id: patientExamId * 10, drug_name: 'Amoxicillin', strength: '500 mg' }],
  };
}

const urgentCare = gfeBody({ exams: [301], scenario: { type: 'urgent_care', pharmacy: { ncpdpid: '4512345' } } });

describe('Temporal outage', () => {
  const stack = useApiHarness({
    temporal: 'stoppable',
    taskQueue: TASK_QUEUE,
    worker: fakeActivities(40_000).activities,
    env: { API_TEMPORAL_TIMEOUT_MS: '2000', FORWARDER_SIGNAL_TIMEOUT_MS: '1000', SPOOL_MAX_BACKOFF_MS: '400' },
    app: { forwarderMinBackoffMs: 100 },
  });

  const journeyOf = (id: string) =>
    stack.app.inject({ method: 'GET', url: `/v1/journeys/${id}`, headers: auth(TOKENS.a) }).then((r) => r.json());
  const callback = (journeyId: string, payload: object) =>
    stack.app.inject({ method: 'POST', url: webhookPath(journeyId), payload });

  it('keeps every callback in the inbox while Temporal is down and delivers each exactly once when it is back', async () => {
    const journeys: { journeyId: string; patientExamId: number; kind: 'urgent' | 'gfe' }[] = [];
    for (const [i, kind] of (['urgent', 'urgent', 'urgent', 'gfe', 'gfe'] as const).entries()) {
      const res = await startJourney(stack.app, `outage-${i}`, kind === 'urgent' ? urgentCare : gfeBody());
      expect(res.statusCode).toBe(201);
      const journeyId = res.json().journeyId;
      const j = await eventually(
        () => journeyOf(journeyId),
        (v) => v.journey?.stage === 'awaiting_consultation',
      );
      journeys.push({ journeyId, patientExamId: j.journey.exams[0].patientExamId, kind });
    }
    const urgent = journeys.filter((j) => j.kind === 'urgent');
    const gfe = journeys.filter((j) => j.kind === 'gfe');

    // Before the outage: the verdicts of the urgent care visits arrive and are signalled at once.
    const delivered = new Map<string, string[]>(journeys.map((j) => [j.journeyId, []]));
    for (const j of urgent) {
      const res = await callback(j.journeyId, event1(j.patientExamId, 'Approved', 301));
      expect(res.statusCode).toBe(200);
      delivered.get(j.journeyId)!.push(res.json().deliveryId);
    }
    await eventually(
      () => Promise.all(urgent.map((j) => journeyOf(j.journeyId))),
      (all) => all.every((v) => v.journey.stage === 'awaiting_prescription'),
    );

    await stack.server.stop();
    expectProblem(await stack.app.inject({ method: 'GET', url: '/readyz' }), 503);

    // During the outage: one repeated verdict (the service retrying), prescriptions and verdicts.
    const during = [
      [urgent[0]!.journeyId, event1(urgent[0]!.patientExamId, 'Approved', 301)] as const,
      ...urgent.map((j) => [j.journeyId, event2(j.patientExamId)] as const),
      ...gfe.map((j) => [j.journeyId, event1(j.patientExamId)] as const),
    ];
    for (const [n, [journeyId, payload]] of during.entries()) {
      const res = await callback(journeyId, payload);
      expect(res.statusCode).toBe(200);
      delivered.get(journeyId)!.push(res.json().deliveryId);
      // Half way, stay down past the signals' deadline: the forwarder retries with backoff meanwhile.
      if (n === 2) await new Promise((r) => setTimeout(r, 2_500));
    }
    expect((await stack.app.callbacks.inbox.stats()).depth).toBe(during.length);
    expect(await seriesValue(stack.app.metrics.callbacks, { event: '2', outcome: 'accepted' })).toBe(urgent.length);

    await stack.server.startAgain();
    expect(await stack.app.callbacks.forwarder.drained(60_000)).toBe(true);
    expect(await seriesValue(stack.app.metrics.forwarded)).toBeGreaterThanOrEqual(during.length);
    expect((await stack.app.inject({ method: 'GET', url: '/readyz' })).statusCode).toBe(200);

    const finished = await eventually(
      () => Promise.all(journeys.map((j) => journeyOf(j.journeyId))),
      // The events come from the snapshot query; a worker still backing off after the outage may miss its deadline.
      (all) => all.every((v) => v.journey?.stage === 'completed' && v.source === 'query'),
      { timeoutMs: 60_000, intervalMs: 250 },
    );
    for (const [i, view] of finished.entries()) {
      const { journeyId, kind } = journeys[i]!;
      const events: { deliveryId: string; event: number; disposition: string }[] = view.journey.events;
      // Every delivery recorded once, none lost, none twice.
      expect(events.map((e) => e.deliveryId).sort()).toEqual([...delivered.get(journeyId)!].sort());
      if (journeyId === urgent[0]!.journeyId) {
        // The repeated verdict is a second delivery, recognised by the journey as a duplicate of the first.
        expect(events.map((e) => `${e.event} ${e.disposition}`).sort()).toEqual([
          '1 applied',
          '1 duplicate',
          '2 applied',
        ]);
      } else if (kind === 'urgent') {
        expect(events.map((e) => [e.event, e.disposition])).toEqual([
          [1, 'applied'],
          [2, 'applied'],
        ]);
        expect(view.journey.exams[0].prescriptions).toHaveLength(1);
      } else {
        expect(events.map((e) => e.disposition)).toEqual(['applied']);
      }
    }
    expect(
      (await stack.app.inject({ method: 'GET', url: '/admin/dead-letters', headers: auth(TOKENS.admin) })).json(),
    ).toEqual({ deadLetters: [], next: null });
  }, 180_000);
});
