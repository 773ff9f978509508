// The ownership check's answer, as a journey in doubt gets it: the holders of a patient exam, none, or unknown. Only a
// full reading says none: a holder on earlier rules (no PatientExamIds) is asked or read, and whatever cannot be read
// (visibility, an ended journey) makes the answer unknown, never an empty list a journey would adopt on.
import {
  createActivities,
  holdersQuery,
  unnamedHoldingsQuery,
  type ActivityDeps,
  type OtherJourneys,
} from '../../src/activities';
import type { PatientExamHolders } from '../../src/contract/activity-contract';

const ME = 'journey-in-doubt';
const CLAIMED = 777_001;

type Listed = Awaited<ReturnType<OtherJourneys['list']>>[number];

/** Visibility as the check reads it: holders by PatientExamIds, and the journeys holding patient exams unnamed. */
function visibility(o: {
  named?: string[];
  unnamed?: Listed[];
  endedHoldings?: Record<string, number[]>;
  broken?: boolean;
}) {
  const asked: string[] = [];
  const reads: string[] = [];
  const queries: string[] = [];
  const listWorkflowIds = (query: string) => {
    queries.push(query);
    return o.broken ? Promise.reject(new Error(`unavailable: ${query}`)) : Promise.resolve(o.named ?? []);
  };
  const journeys: OtherJourneys = {
    list: (query) => {
      queries.push(query);
      return o.broken ? Promise.reject(new Error('unavailable')) : Promise.resolve(o.unnamed ?? []);
    },
    askToName: (workflowId) => {
      asked.push(workflowId);
      return Promise.resolve();
    },
    patientExamIdsOf: (workflowId) => {
      reads.push(workflowId);
      const ids = o.endedHoldings?.[workflowId];
      return ids ? Promise.resolve(ids) : Promise.reject(new Error('its patient key is destroyed'));
    },
  };
  return { deps: { listWorkflowIds, journeys }, asked, reads, queries };
}

function check(deps: Partial<ActivityDeps>, patientExamId = CLAIMED) {
  const activities = createActivities({
    examServiceFor: () => undefined,
    webhookUrlFor: () => 'http://127.0.0.1:1/',
    attachments: { get: () => Promise.resolve(undefined), delete: () => Promise.resolve() },
    notificationSecretFor: () => undefined,
    catalogTtlMs: 60_000,
    recordHeartbeat: () => Promise.resolve(),
    ...deps,
  });
  return {
    ask: (id = patientExamId): Promise<PatientExamHolders> =>
      activities.findPatientExamHolders({ patientExamId: id, workflowId: ME }),
  };
}

const running = (workflowId: string): Listed => ({ workflowId, runId: `${workflowId}-run`, running: true });
const ended = (workflowId: string): Listed => ({ workflowId, runId: `${workflowId}-run`, running: false });

it('names the journeys whose PatientExamIds hold the patient exam', async () => {
  const v = visibility({ named: ['journey-holder', 'journey-holder'] });
  await expect(check(v.deps).ask()).resolves.toEqual({ workflowIds: ['journey-holder'] });
  expect(v.queries[0]).toBe(holdersQuery(CLAIMED, ME));
});

it('says none only when no journey holds patient exams without naming them', async () => {
  const v = visibility({});
  await expect(check(v.deps).ask()).resolves.toEqual({ workflowIds: [] });
  expect(v.queries).toEqual([holdersQuery(CLAIMED, ME), unnamedHoldingsQuery(ME)]);
});

it('asks running journeys on earlier rules to name their patient exams, and cannot tell until they have', async () => {
  const v = visibility({ unnamed: [running('journey-earlier-a'), running('journey-earlier-b')] });
  const answer = await check(v.deps).ask();
  expect(answer.workflowIds).toEqual([]);
  expect(answer.unknown).toEqual({
    reason: 'journeys on earlier rules had not named their patient exams yet',
    retryAfterMs: expect.any(Number),
  });
  expect(answer.unknown!.retryAfterMs).toBeLessThanOrEqual(5_000);
  expect(v.asked).toEqual(['journey-earlier-a', 'journey-earlier-b']);
});

it('reads ended journeys on earlier rules, once each: one holding the patient exam is its holder', async () => {
  const v = visibility({
    unnamed: [ended('journey-ended-a'), ended('journey-ended-b')],
    endedHoldings: { 'journey-ended-a': [5, 6], 'journey-ended-b': [CLAIMED] },
  });
  const c = check(v.deps);
  await expect(c.ask()).resolves.toEqual({ workflowIds: ['journey-ended-b'] });
  // Another patient exam: no holder, and nothing read again (what an ended journey held does not change).
  await expect(c.ask(123)).resolves.toEqual({ workflowIds: [] });
  expect(v.reads).toEqual(['journey-ended-a', 'journey-ended-b']);
});

it('cannot tell while an ended journey on earlier rules cannot be read', async () => {
  const v = visibility({ unnamed: [ended('journey-erased')] });
  const answer = await check(v.deps).ask();
  expect(answer).toEqual({
    workflowIds: [],
    unknown: { reason: 'an ended journey on earlier rules could not be read', retryAfterMs: expect.any(Number) },
  });
});

it('cannot tell when visibility cannot be read', async () => {
  const answer = await check(visibility({ broken: true }).deps).ask();
  expect(answer).toEqual({
    workflowIds: [],
    unknown: { reason: 'Temporal visibility could not be read', retryAfterMs: expect.any(Number) },
  });
});

it('cannot tell on a worker that reads no visibility', async () => {
  const answer = await check({}).ask();
  expect(answer.workflowIds).toEqual([]);
  expect(answer.unknown?.reason).toBe('this worker cannot read Temporal visibility');
});
