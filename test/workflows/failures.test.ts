// How the journey meets the exam service's failures: what it retries by itself, what it parks for an operator (and
// what the operator's retry/abandon then does), and what ends it. Every failure is a real ExamServiceError, as the
// client raises it, scripted on the journey's service, and classified by the real activities.
import { INVITE_SENDING } from '../../src/contract/activity-contract';
import { abandonUpdate, retryUpdate } from '../../src/contract/definitions';
import { serviceError } from '../support/scripted-exam-service';
import {
  examService,
  GFE_EXAM,
  GFE_WITH_LAB,
  journeyInput,
  OWN_PHARMACY_EXAM,
  PATIENT,
  PRESCRIPTIONS,
  PHI_VALUES,
  refusal,
  searchAttributesOf,
  URGENT_CARE_EXAM,
  useHarness,
  waitForSearchAttributes,
  withJourney,
} from './harness';

const h = useHarness();

const MINUTE = 60_000;

/** A verdict naming the journey's patient and its exam in doubt, for a patient exam the journey never heard of. */
const claimOf = (patientExamId: number) => ({
  event: 1 as const,
  patientExamId,
  examId: GFE_EXAM.id,
  examStatus: 'Approved',
  rxStatus: null,
  examUrl: null,
  providerName: null,
  reason: null,
  patientEmail: PATIENT.email,
});

describe('an invite that may or may not have been created', () => {
  it.each([
    ['a transport failure after sending', serviceError('ambiguous', 'exam_invite'), null],
    ['HTTP 500', serviceError('server', 'exam_invite'), 500],
  ])('(%s) is never sent twice by itself: the journey needs attention', async (_what, error, httpStatus) => {
    const service = examService(h).failNext('exam_invite', error);
    await withJourney(h, { service }, async (j) => {
      const s = await j.waitFor('needs attention', (x) => x.stage === 'needs_attention');
      expect(s.attention).toEqual([
        expect.objectContaining({
          code: 'invite_ambiguous',
          message: expect.stringContaining('service portal'),
          facts: expect.objectContaining({ httpStatus, exams: String(GFE_EXAM.id) }),
        }),
      ]);
      expect(PHI_VALUES.filter((v) => JSON.stringify(s).includes(v))).toEqual([]);
      expect(s.lastError).toMatchObject({ kind: 'ambiguous', operation: 'exam_invite' });
      expect(s.exams).toEqual([]);
      expect(await waitForSearchAttributes(j.handle, 'needs_attention')).toMatchObject({ NeedsAttention: true });

      // However long nobody looks, nothing is re-sent.
      await j.env.sleep(3 * 24 * 60 * MINUTE);
      expect(j.service.count('exam_invite')).toBe(1);
      expect((await j.snapshot()).stage).toBe('needs_attention');
    });
  });

  it('is sent again when Temporal could not record that it was about to be sent (nothing went out)', async () => {
    let recordings = 0;
    const recordHeartbeat = (_activity: unknown, details: unknown[]) => {
      expect(details).toEqual([INVITE_SENDING]);
      return ++recordings === 1 ? Promise.reject(new Error('deadline exceeded')) : Promise.resolve();
    };
    await withJourney(h, { recordHeartbeat }, async (j) => {
      await j.env.sleep(10_000);
      const s = await j.waitFor('invited', (x) => x.exams.length === 1);
      expect(recordings).toBe(2);
      expect(j.service.count('exam_invite')).toBe(1);
      expect(s.attention).toEqual([]);
    });
  });

  it('is proven created by a callback on its own URL: the patient exam is adopted, the invite never sent again', async () => {
    const service = examService(h).failNext('exam_invite', serviceError('ambiguous', 'exam_invite'));
    const queries: string[] = [];
    const listWorkflowIds = (query: string) => {
      queries.push(query);
      return Promise.resolve([]);
    };
    await withJourney(h, { service, listWorkflowIds }, async (j) => {
      await j.waitFor('needs attention', (x) => x.stage === 'needs_attention');
      // The service did create it: its provider's verdict, naming the journey's patient, comes to the URL only that
      // invite carried, and no other journey holds the patient exam.
      await j.deliver({
        event: 1,
        patientExamId: 777_001,
        examId: GFE_EXAM.id,
        examStatus: 'Approved',
        rxStatus: null,
        examUrl: 'https://records.example.test/r.pdf',
        providerName: 'Dr. Provider',
        reason: 'consultation finished',
        patientEmail: PATIENT.email.toUpperCase(),
      });
      const result = await j.handle.result();
      expect(result.stage).toBe('completed');
      expect(result.exams).toEqual([
        expect.objectContaining({ patientExamId: 777_001, examId: GFE_EXAM.id, status: 'Approved' }),
      ]);
      expect(result.attention).toEqual([]);
      expect(result.resolvedAttention).toEqual([
        expect.objectContaining({
          code: 'invite_ambiguous',
          patientExamId: 777_001,
          why: expect.stringMatching(/named patient exam 777001 .*no other journey holds it: the invite was created/),
        }),
      ]);
      expect(j.service.count('exam_invite')).toBe(1);
      expect(queries).toEqual([expect.stringContaining("PatientExamIds = '777001' AND WorkflowId != 'journey-")]);
    });
  });

  it.each([
    ['another journey holds the patient exam', { holders: ['journey-other'] }, /another journey holds it/],
    ['the callback names another patient', { email: 'someone.else@example.org' }, /its patient is not this journey's/],
    ['visibility cannot be read', { broken: true }, /no one could tell whether another journey holds it/],
  ])('holds for a person, never adopts, a claim when %s', async (_what, claim, why) => {
    const c: { holders?: string[]; email?: string; broken?: boolean } = claim;
    const service = examService(h).failNext('exam_invite', serviceError('ambiguous', 'exam_invite'));
    const listWorkflowIds = () =>
      c.broken ? Promise.reject(new Error('visibility unavailable')) : Promise.resolve(c.holders ?? []);
    await withJourney(h, { service, listWorkflowIds }, async (j) => {
      await j.waitFor('needs attention', (x) => x.stage === 'needs_attention');
      await j.deliver({
        event: 1,
        patientExamId: 777_003,
        examId: GFE_EXAM.id,
        examStatus: 'Approved',
        rxStatus: null,
        examUrl: null,
        providerName: null,
        reason: null,
        patientEmail: c.email ?? PATIENT.email,
      });
      if (c.broken) await j.env.sleep(30 * MINUTE);
      const s = await j.waitFor('held', (x) => x.events.some((e) => e.disposition === 'held'), 30_000);
      expect(s.exams).toEqual([]);
      expect(s.attention.map((a) => a.code)).toEqual(['invite_ambiguous', 'callback_held']);
      expect(s.attention[1]!.message).toMatch(why);
      expect(PHI_VALUES.filter((v) => JSON.stringify(s.attention).includes(v))).toEqual([]);
      expect(j.service.count('exam_invite')).toBe(1);
    });
  });

  it('never adopts on an answer too fresh to trust: a holder visibility shows a moment after the claim keeps it', async () => {
    const service = examService(h).failNext('exam_invite', serviceError('ambiguous', 'exam_invite'));
    // Another journey named the patient exam just before the claim came; visibility shows it two seconds later.
    let claimedAt = Infinity;
    const listWorkflowIds = () => Promise.resolve(Date.now() >= claimedAt + 2_000 ? ['journey-holder'] : []);
    await withJourney(h, { service, listWorkflowIds }, async (j) => {
      await j.waitFor('needs attention', (x) => x.stage === 'needs_attention');
      claimedAt = Date.now();
      await j.deliver(claimOf(777_004));
      const s = await j.waitFor('settled', (x) => x.exams.length > 0 || x.attention.length > 1, 30_000);
      expect(s.exams).toEqual([]);
      expect(s.attention.map((a) => a.code)).toEqual(['invite_ambiguous', 'callback_held']);
      expect(s.attention[1]!.message).toMatch(/another journey holds it/);
    });
  });

  it('adopts nothing while visibility cannot be read, asks again, and adopts once it can tell', async () => {
    const service = examService(h).failNext('exam_invite', serviceError('ambiguous', 'exam_invite'));
    let readable = false;
    const listWorkflowIds = () =>
      readable ? Promise.resolve([]) : Promise.reject(new Error('visibility unavailable'));
    await withJourney(h, { service, listWorkflowIds }, async (j) => {
      await j.waitFor('needs attention', (x) => x.stage === 'needs_attention');
      await j.deliver(claimOf(777_005));
      // Longer than an activity's own retries: the claim waits, neither adopted nor handed to a person.
      await j.env.sleep(10 * MINUTE);
      const waiting = await j.snapshot();
      expect(waiting.exams).toEqual([]);
      expect(waiting.attention.map((a) => a.code)).toEqual(['invite_ambiguous']);
      expect(waiting.events).toEqual([expect.objectContaining({ disposition: 'buffered' })]);
      readable = true;
      const result = await j.handle.result();
      expect(result.stage).toBe('completed');
      expect(result.exams).toEqual([expect.objectContaining({ patientExamId: 777_005, status: 'Approved' })]);
      expect(j.service.count('exam_invite')).toBe(1);
    });
  });

  it('adopts a prescription exam whose event 2 comes first, then applies its event 1 and 2 in order', async () => {
    const service = examService(h).failNext('exam_invite', serviceError('ambiguous', 'exam_invite'));
    await withJourney(h, { service, input: journeyInput('urgent_care') }, async (j) => {
      await j.waitFor('needs attention', (x) => x.stage === 'needs_attention');
      await j.deliver({
        event: 2,
        patientExamId: 777_002,
        examId: URGENT_CARE_EXAM.id,
        rxStatus: 'Pharmacy Confirmed',
        prescribedOrderSetId: null,
        prescriptions: [PRESCRIPTIONS[0]!],
        patientEmail: PATIENT.email,
      });
      const adopted = await j.waitFor('adopted', (x) => x.exams.length === 1);
      expect(adopted.stage).toBe('awaiting_consultation');
      expect(adopted.events).toEqual([expect.objectContaining({ event: 2, disposition: 'buffered' })]);
      // The doubt is settled: a retry, which would send a second invite, is refused.
      expect(await refusal(j.handle.executeUpdate(retryUpdate, { args: [{}] }))).toMatch(/does not need attention/);
      await j.deliver({
        event: 1,
        patientExamId: 777_002,
        examId: URGENT_CARE_EXAM.id,
        examStatus: 'Approved',
        rxStatus: null,
        examUrl: 'https://records.example.test/r.pdf',
        providerName: 'Dr. Provider',
        reason: 'ok',
      });
      const result = await j.handle.result();
      expect(result.stage).toBe('completed');
      expect(result.exams[0]).toMatchObject({ status: 'Approved', rxStatus: 'Pharmacy Confirmed' });
      expect(j.service.count('exam_invite')).toBe(1);
    });
  });

  it('ends as abandoned when the operator abandons it, still with the one invite call', async () => {
    const service = examService(h).failNext('exam_invite', serviceError('ambiguous', 'exam_invite'));
    await withJourney(h, { service }, async (j) => {
      await j.waitFor('needs attention', (x) => x.stage === 'needs_attention');
      await expect(
        j.handle.executeUpdate(abandonUpdate, { args: [{ actor: 'ops-2', note: 'INC-42: service outage' }] }),
      ).resolves.toEqual({ stage: 'abandoned' });
      const result = await j.handle.result();
      expect(result.stage).toBe('abandoned');
      expect(result.attention).toEqual([]);
      // Who, when, what and why, in the journey.
      expect(result.actions).toEqual([
        {
          at: expect.any(String),
          action: 'abandon',
          actor: 'ops-2',
          note: 'INC-42: service outage',
          detail: 'abandoned while: invite_ambiguous',
        },
      ]);
      expect(j.service.count('exam_invite')).toBe(1);
      expect(await searchAttributesOf(j.handle)).toMatchObject({ JourneyStage: 'abandoned', NeedsAttention: false });
    });
  });

  it('is sent exactly once more when the operator retries, and the journey proceeds', async () => {
    const service = examService(h).failNext('exam_invite', serviceError('server', 'exam_invite'));
    await withJourney(h, { service }, async (j) => {
      await j.waitFor('needs attention', (x) => x.stage === 'needs_attention');
      await j.handle.executeUpdate(retryUpdate, { args: [{ actor: 'ops-2' }] });
      const s = await j.waitFor('awaiting consultation', (x) => x.stage === 'awaiting_consultation');
      expect(j.service.count('exam_invite')).toBe(2);
      expect(s.attention).toEqual([]);
      expect(s.actions).toEqual([
        expect.objectContaining({ action: 'retry', actor: 'ops-2', detail: expect.stringMatching(/^retried: \w+/) }),
      ]);

      await j.consultation(s.exams[0]!.patientExamId, 'Approved');
      expect((await j.handle.result()).stage).toBe('completed');
      expect(j.service.count('exam_invite')).toBe(2);
    });
  });
});

describe('an invite that was not sent', () => {
  it('is retried by the workflow until it goes through', async () => {
    const service = examService(h).failNext('exam_invite', serviceError('not_sent', 'exam_invite'), 2);
    await withJourney(h, { service }, async (j) => {
      await j.env.sleep(MINUTE);
      const s = await j.waitFor('awaiting consultation', (x) => x.stage === 'awaiting_consultation');
      expect(j.service.count('exam_invite')).toBe(3);
      expect(s.exams).toHaveLength(1);
      expect(s.attention).toEqual([]);
    });
  });

  it('parks as service_unavailable once the retries are used up; retry tries again', async () => {
    const service = examService(h).failAlways('exam_invite', serviceError('not_sent', 'exam_invite'));
    await withJourney(h, { service }, async (j) => {
      await j.env.sleep(10 * MINUTE);
      const s = await j.waitFor('needs attention', (x) => x.stage === 'needs_attention');
      expect(s.attention).toEqual([expect.objectContaining({ code: 'service_unavailable' })]);
      expect(j.service.count('exam_invite')).toBe(7);

      j.service.stopFailing('exam_invite');
      await j.handle.executeUpdate(retryUpdate, { args: [{}] });
      await j.waitFor('awaiting consultation', (x) => x.stage === 'awaiting_consultation');
      expect(j.service.count('exam_invite')).toBe(8);
    });
  });
});

describe('account setup', () => {
  it('parks until the clinic fixed its portal and an operator retries; then the invite is created', async () => {
    const service = examService(h).failAlways(
      'exam_invite',
      serviceError('account_setup', 'exam_invite', { setupCode: 'prescriptive_contract_unsigned' }),
    );
    await withJourney(h, { service, input: journeyInput('urgent_care') }, async (j) => {
      const s = await j.waitFor('needs attention', (x) => x.stage === 'needs_attention');
      expect(s.attention).toEqual([
        expect.objectContaining({
          code: 'account_setup',
          message: expect.stringContaining('prescriptive_contract_unsigned'),
          facts: expect.objectContaining({ setupCode: 'prescriptive_contract_unsigned', httpStatus: 401 }),
        }),
      ]);
      expect(j.service.count('exam_invite')).toBe(1);

      // An impatient retry while the portal is still not fixed parks it again, after one more call.
      await j.handle.executeUpdate(retryUpdate, { args: [{}] });
      await j.waitForCalls('exam_invite', 2);
      await j.waitFor('needs attention again', (x) => x.stage === 'needs_attention');

      j.service.stopFailing('exam_invite');
      await j.handle.executeUpdate(retryUpdate, { args: [{ actor: 'ops-3', note: 'contract signed' }] });
      const ok = await j.waitFor('awaiting consultation', (x) => x.stage === 'awaiting_consultation');
      expect(j.service.count('exam_invite')).toBe(3);
      expect(ok.exams[0]).toMatchObject({ examId: URGENT_CARE_EXAM.id, status: 'pending' });
      expect(await waitForSearchAttributes(j.handle, 'awaiting_consultation')).toMatchObject({ NeedsAttention: false });
    });
  });
});

describe('a refused invite', () => {
  it('fails the journey at once, naming the field, without a retry and without PHI', async () => {
    const service = examService(h).failNext(
      'exam_invite',
      serviceError('validation', 'exam_invite', { field: 'phone_number' }),
    );
    await withJourney(h, { service }, async (j) => {
      const result = await j.handle.result();
      expect(result.stage).toBe('failed');
      expect(result.lastError).toMatchObject({ kind: 'validation', operation: 'exam_invite', field: 'phone_number' });
      expect(result.lastError!.message).toContain('phone_number');
      expect(j.service.count('exam_invite')).toBe(1);
      expect(PHI_VALUES.filter((v) => JSON.stringify(result).includes(v))).toEqual([]);
      expect(await searchAttributesOf(j.handle)).toMatchObject({ JourneyStage: 'failed', NeedsAttention: false });
    });
  });
});

describe('the catalog check', () => {
  it.each([
    {
      what: 'two prescription exams',
      input: () => journeyInput('urgent_care', { exams: [URGENT_CARE_EXAM.id, OWN_PHARMACY_EXAM.id] }),
      field: 'exams',
      says: 'only one prescription exam',
    },
    {
      what: 'a gfe journey with a prescription exam',
      input: () => journeyInput('gfe', { exams: [GFE_EXAM.id, URGENT_CARE_EXAM.id] }),
      field: 'scenario.type',
      says: 'rx_type 1 exams only',
    },
    {
      what: 'a prescription journey without a prescription exam',
      input: () => journeyInput('partner_pharmacy', { exams: [GFE_EXAM.id] }),
      field: 'scenario.type',
      says: 'needs one prescription exam',
    },
    {
      what: 'a missing required attachment',
      input: () => journeyInput('gfe', { exams: [GFE_WITH_LAB.id], attachments: [] }),
      field: 'attachments',
      says: 'missing Lab',
    },
    {
      what: 'an exam the clinic does not have',
      input: () => journeyInput('gfe', { exams: [GFE_EXAM.id, 999] }),
      field: 'exams.1',
      says: 'exam 999 is not in',
    },
  ])('fails $what with the field named, before any invite', async ({ input, field, says }) => {
    const service = examService(h);
    await withJourney(h, { service, input: input() }, async (j) => {
      const result = await j.handle.result();
      expect(result.stage).toBe('failed');
      expect(result.lastError).toMatchObject({ kind: 'validation', operation: 'catalog_check', field });
      expect(result.lastError!.message).toContain(says);
      expect(result.exams).toEqual([]);
      expect(j.service.count('exam_list')).toBe(1);
      expect(j.service.count('exam_invite')).toBe(0);
    });
  });

  it('parks when the exam list cannot be read (bad key), and proceeds on retry once it can', async () => {
    const service = examService(h).failNext('exam_list', serviceError('unauthorized', 'exam_list'));
    await withJourney(h, { service }, async (j) => {
      const s = await j.waitFor('needs attention', (x) => x.stage === 'needs_attention');
      expect(s.attention).toEqual([expect.objectContaining({ code: 'unauthorized' })]);
      expect(j.service.count('exam_invite')).toBe(0);
      await j.handle.executeUpdate(retryUpdate, { args: [{}] });
      await j.waitFor('awaiting consultation', (x) => x.stage === 'awaiting_consultation');
      expect(j.service.count('exam_list')).toBe(2);
      expect(j.service.count('exam_invite')).toBe(1);
    });
  });
});

describe('operator updates', () => {
  it('refuses retry and abandon when nothing needs attention', async () => {
    await withJourney(h, {}, async (j) => {
      await j.waitFor('awaiting consultation', (x) => x.stage === 'awaiting_consultation');
      expect(await refusal(j.handle.executeUpdate(retryUpdate, { args: [{}] }))).toBe(
        'the journey does not need attention (stage awaiting_consultation)',
      );
      expect(await refusal(j.handle.executeUpdate(abandonUpdate, { args: [{}] }))).toBe(
        'the journey does not need attention (stage awaiting_consultation)',
      );
      expect((await j.snapshot()).stage).toBe('awaiting_consultation');
    });
  });
});
