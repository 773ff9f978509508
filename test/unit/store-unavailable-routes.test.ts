// A start during a database failover: the patient key store (the journey's binding, the patient's key) and the audit
// record made before a key is created meet a lost connection. Met once, the start tries again and answers 201; met for
// longer than its few tries, it answers 503 `store-unavailable` with Retry-After, naming the store and nothing of the
// error (no address, no driver text, no patient); sent again with the same Idempotency-Key once the store is back, it
// starts one journey, and again answers that journey (200). Temporal is stood in for by the journey gateway's own
// describe and start, which keep journeys by id as Temporal does (a second start of an id is not a second journey).
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  NamespaceNotFoundError,
  WorkflowUpdateRPCTimeoutOrCancelledError,
  type WorkflowExecutionDescription,
} from '@temporalio/client';
import { buildApp, type ApiApp } from '../../src/api/app';
import { JOURNEY_WORKFLOW_TYPE } from '../../src/api/journey-query';
import { updateProblem, type StartOutcome } from '../../src/api/journeys';
import { ApiProblem } from '../../src/api/problem';
import type { AuditEvent } from '../../src/audit/types';
import { journeyWorkflowId } from '../../src/contract/definitions';
import type { JourneyInput } from '../../src/contract/journey-request';
import { FileErasureLog, FilePatientKeyStore, PatientKeys, type PatientKeyStore } from '../../src/patient-keys';
import {
  auth,
  fakeExamService,
  gfeBody,
  startJourney,
  tempDataDir,
  testConfig,
  TOKENS,
  unreachableTemporal,
} from '../api/support';

const ring = [{ id: 'k1', key: randomBytes(32) }];
const PATIENT_EMAIL = 'ada.failover.7731@example.test';
const body = () => gfeBody({ patient: { ...gfeBody().patient, email: PATIENT_EMAIL, lastName: 'Failoverly' } });

/** Errors as node-postgres raises them when the primary goes away mid-failover. */
const connectionErrors = {
  refused: () =>
    Object.assign(new Error('connect ECONNREFUSED 10.20.30.40:5432'), {
      code: 'ECONNREFUSED',
      errno: -111,
      syscall: 'connect',
      address: '10.20.30.40',
      port: 5432,
    }),
  cut: () => new Error('Connection terminated unexpectedly'),
  shutdown: () =>
    Object.assign(new Error('terminating connection due to administrator command'), {
      code: '57P01',
      severity: 'FATAL',
    }),
  readOnly: () =>
    Object.assign(new Error('cannot execute INSERT in a read-only transaction'), { code: '25006', severity: 'ERROR' }),
};
type Fault = keyof typeof connectionErrors;

/** A store that fails `method` `times` times (Infinity: until healed) with `fault`, else does what the file store does. */
function flaky(inner: PatientKeyStore) {
  const plan = new Map<string, { times: number; fault: Fault; after?: boolean }>();
  const calls = new Map<string, number>();
  const store = new Proxy(inner, {
    get(target, prop, receiver) {
      const value: unknown = Reflect.get(target, prop, receiver);
      if (typeof value !== 'function') return value;
      const name = String(prop);
      return (...args: unknown[]) => {
        calls.set(name, (calls.get(name) ?? 0) + 1);
        const p = plan.get(name);
        const run = () => (value as (...a: unknown[]) => Promise<unknown>).apply(target, args);
        if (p && p.times > 0) {
          p.times--;
          // After: done, and the answer lost on the way back.
          if (p.after) return run().then(() => Promise.reject(connectionErrors[p.fault]()));
          return Promise.reject(connectionErrors[p.fault]());
        }
        return run();
      };
    },
  });
  return {
    store,
    calls,
    fail: (method: keyof PatientKeyStore, times: number, fault: Fault, o: { after?: boolean } = {}) =>
      plan.set(method, { times, fault, ...o }),
    heal: () => plan.clear(),
  };
}

describe('a start while the patient key store or the audit trail is away', () => {
  const dirs = tempDataDir();
  let keyDir: string;
  let app: ApiApp;
  let faults: ReturnType<typeof flaky>;
  const audit: { fail: number; events: AuditEvent[] } = { fail: 0, events: [] };
  /** The journeys "Temporal" holds, by workflow id; every start asked for. */
  const journeys = new Map<string, WorkflowExecutionDescription>();
  const starts: string[] = [];

  beforeAll(async () => {
    keyDir = mkdtempSync(path.join(os.tmpdir(), 'store-unavailable-'));
    faults = flaky(new FilePatientKeyStore(path.join(keyDir, 'patient-keys.json')));
    const keys = new PatientKeys({
      ring,
      store: faults.store,
      erasureLog: new FileErasureLog(path.join(keyDir, 'patient-erasures.jsonl')),
      audit: (e) => {
        if (audit.fail > 0) {
          audit.fail--;
          return Promise.reject(connectionErrors.cut());
        }
        audit.events.push(e);
        return Promise.resolve();
      },
      retry: { sleep: () => Promise.resolve() },
    });
    app = await buildApp({
      config: testConfig(dirs.dataDir),
      temporal: await unreachableTemporal(),
      examServiceFor: () => fakeExamService(),
      startForwarder: false,
      patientKeys: keys,
    });
    await app.ready();
    // Temporal's side: one workflow per id; a start of an id it holds is refused and answered as a replay.
    jest.spyOn(app.journeys, 'describe').mockImplementation((journeyId: string) => {
      return Promise.resolve(journeys.get(journeyWorkflowId(journeyId)));
    });
    jest
      .spyOn(app.journeys, 'start')
      .mockImplementation((input: JourneyInput, requestSha256: string): Promise<StartOutcome> => {
        const workflowId = journeyWorkflowId(input.journeyId);
        starts.push(workflowId);
        if (journeys.has(workflowId)) return Promise.resolve({ journeyId: input.journeyId, created: false });
        journeys.set(workflowId, {
          type: JOURNEY_WORKFLOW_TYPE,
          workflowId,
          runId: 'run-1',
          status: { name: 'RUNNING' },
          memo: { clinicId: input.clinicId, requestSha256 },
          typedSearchAttributes: { get: () => input.clinicId },
        } as unknown as WorkflowExecutionDescription);
        return Promise.resolve({ journeyId: input.journeyId, created: true });
      });
  });
  afterAll(async () => {
    await app?.close();
    rmSync(keyDir, { recursive: true, force: true });
    dirs.cleanup();
  });
  beforeEach(() => {
    faults.heal();
    faults.calls.clear();
    audit.fail = 0;
    starts.length = 0;
  });

  /** A 503 that says the store is away, when to come back, and nothing of the error or the patient. */
  function expectUnavailable(res: Awaited<ReturnType<typeof startJourney>>, store: RegExp) {
    expect(res.statusCode).toBe(503);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
    const problem = res.json<{ type: string; detail: string }>();
    expect(problem.type).toBe('urn:patient-journeys:problem:store-unavailable');
    expect(problem.detail).toMatch(store);
    for (const leak of [
      '10.20.30.40',
      'ECONNREFUSED',
      'Connection terminated',
      'read-only transaction',
      'administrator command',
      '57P01',
      '25006',
      PATIENT_EMAIL,
      'Failoverly',
      'INSERT',
    ]) {
      expect(res.body).not.toContain(leak);
    }
  }

  it.each<[Fault, keyof PatientKeyStore]>([
    ['cut', 'bind'],
    ['refused', 'bind'],
    ['shutdown', 'insert'],
    ['readOnly', 'insert'],
    ['cut', 'get'],
  ])(
    'a connection error (%s) once in the store (%s): tried again, the journey started (201)',
    async (fault, method) => {
      faults.fail(method, 1, fault);
      // A patient of its own each: the key is read (and made) afresh, not taken from the cache.
      const patient = { ...gfeBody().patient, email: `once-${fault}-${method}@example.test` };
      const res = await startJourney(app, `once-${fault}-${method}`, gfeBody({ patient }));
      expect(res.statusCode).toBe(201);
      expect(faults.calls.get(method)).toBeGreaterThanOrEqual(2);
      expect(starts).toHaveLength(1);
    },
  );

  it('the key store away for longer than the retries: 503 naming it, with Retry-After; nothing started', async () => {
    faults.fail('bind', Infinity, 'refused');
    const res = await startJourney(app, 'always-bind', body());
    expectUnavailable(res, /patient key store/);
    // A bounded few tries, not one and not forever.
    expect(faults.calls.get('bind')).toBe(4);
    expect(starts).toEqual([]);
  });

  it('the audit trail away when a new patient key is recorded first: 503 naming the trail; no key made', async () => {
    audit.fail = Infinity;
    const before = audit.events.length;
    const res = await startJourney(
      app,
      'always-audit',
      gfeBody({ patient: { ...gfeBody().patient, email: 'new.one@example.test' } }),
    );
    expectUnavailable(res, /audit trail/);
    expect(audit.events.length).toBe(before);
    expect(faults.calls.get('insert') ?? 0).toBe(0);
    expect(starts).toEqual([]);
  });

  it('a start answered 503 and sent again with the same Idempotency-Key starts one journey', async () => {
    const key = 'retried-after-503';
    faults.fail('bind', Infinity, 'cut');
    expectUnavailable(await startJourney(app, key, body()), /patient key store/);
    expectUnavailable(await startJourney(app, key, body()), /patient key store/);
    faults.heal();
    const started = await startJourney(app, key, body());
    expect(started.statusCode).toBe(201);
    const again = await startJourney(app, key, body());
    expect(again.statusCode).toBe(200);
    expect(again.json()).toMatchObject({ journeyId: started.json().journeyId, created: false });
    const workflowId = journeyWorkflowId(started.json<{ journeyId: string }>().journeyId);
    // The 503s stopped before "Temporal"; the replay's start is refused there as the id's second: one journey.
    expect(starts).toEqual([workflowId, workflowId]);
    expect([...journeys.keys()].filter((id) => id === workflowId)).toHaveLength(1);
  });

  it('a replay refused before its start (the exam service away) is answered from the journey it started', async () => {
    const key = 'replayed-while-service-away';
    const started = await startJourney(app, key, body());
    expect(started.statusCode).toBe(201);
    const away = () =>
      Promise.reject(new ApiProblem(502, 'exam-service-unavailable', 'the exam service did not answer'));
    const exams = jest.spyOn(app.examService, 'exams').mockImplementation(away);
    try {
      const replay = await startJourney(app, key, body());
      expect(replay.statusCode).toBe(200);
      expect(replay.json()).toMatchObject({ journeyId: started.json().journeyId, created: false });
      // Another body under the key: a conflict, whatever refused it first.
      const other = await startJourney(app, key, gfeBody());
      expect(other.statusCode).toBe(409);
      expect(other.json<{ type: string }>().type).toBe('urn:patient-journeys:problem:idempotency-conflict');
      // A new journey meets the refusal itself.
      const fresh = await startJourney(app, 'new-while-service-away', body());
      expect(fresh.statusCode).toBe(502);
    } finally {
      exams.mockRestore();
    }
    expect(starts).toEqual([journeyWorkflowId(started.json<{ journeyId: string }>().journeyId)]);
  });

  it('a lost connection while the binding commits (applied, answer lost): the retry finds the binding, one journey', async () => {
    const key = 'bound-then-cut';
    // The first bind goes through and its answer is lost; the retry finds the same binding held.
    faults.fail('bind', 1, 'cut', { after: true });
    const res = await startJourney(app, key, body());
    expect(res.statusCode).toBe(201);
    expect(faults.calls.get('bind')).toBe(2);
    expect(starts).toHaveLength(1);
  });

  it('an erasure request while the key store is away: 503 naming it; sent again once it is back, one erasure', async () => {
    const erase = (key: string) =>
      app.inject({
        method: 'POST',
        url: '/v1/patients/erasure',
        headers: { ...auth(TOKENS.a), 'idempotency-key': key },
        payload: { email: 'erase.me.4410@example.test' },
      });
    faults.fail('addErasureRequest', Infinity, 'shutdown');
    expectUnavailable(await erase('erase-after-503'), /patient key store/);
    expect(faults.calls.get('addErasureRequest')).toBe(4);
    faults.heal();
    faults.fail('addErasureRequest', 1, 'readOnly');
    const accepted = await erase('erase-after-503');
    expect(accepted.statusCode).toBe(202);
    const again = await erase('erase-after-503');
    expect(again.statusCode).toBe(200);
    expect(again.json<{ erasureId: string }>().erasureId).toBe(accepted.json<{ erasureId: string }>().erasureId);
  });
});

describe('Temporal not answering in time', () => {
  const grpc = (code: number, details: string) =>
    Object.assign(new Error(`${code} ${details}`), { code, details, metadata: { getMap: () => ({}) } });

  it.each([
    ['a deadline exceeded', grpc(4, 'Deadline exceeded')],
    ['an update call cancelled', grpc(1, 'Cancelled on client')],
  ])('%s: 504 temporal-timeout with Retry-After, not an unknown error', (_what, cause) => {
    const sdkError = new WorkflowUpdateRPCTimeoutOrCancelledError('Workflow update call timeout or cancelled', {
      cause,
    });
    for (const e of [sdkError, cause]) {
      const problem = updateProblem(e);
      expect(problem).toBeInstanceOf(ApiProblem);
      expect(problem).toMatchObject({ status: 504, slug: 'temporal-timeout' });
      expect(Number((problem as ApiProblem).headers['retry-after'])).toBeGreaterThan(0);
    }
  });

  it('its namespace not found while its database fails over: 503 temporal-unavailable with Retry-After, not a 500', () => {
    const problem = updateProblem(new NamespaceNotFoundError('default'));
    expect(problem).toBeInstanceOf(ApiProblem);
    expect(problem).toMatchObject({ status: 503, slug: 'temporal-unavailable' });
    expect(Number((problem as ApiProblem).headers['retry-after'])).toBeGreaterThan(0);
  });
});
