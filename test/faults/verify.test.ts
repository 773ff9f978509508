// The fault suite's judge on its own: callbacks are keyed by the sandbox's own ids whatever their layout carried (a
// tracking array with no ids, a flat event 2 per drug), and a real lost, unexpected, refused or mispaired callback is
// still reported.
import type { StartedJourney } from './harness/journeys';
import {
  judge,
  type DeadLetterInfo,
  type JourneySnapshot,
  type ReceivedEvent,
  type SandboxDelivery,
  type SandboxPatientExam,
} from './harness/verify';

const J = 'fault-j1';
const PE = 90_001;
const RX = [60_001, 60_002] as const;
const TRACKING = ['1ZSBXAAAA', '1ZSBXBBBB'] as const;
const RECEIVER = `http://127.0.0.1:20700/webhooks/exam-service/${J}/token`;

const journey: StartedJourney = {
  plan: {
    index: 0,
    idempotencyKey: 'k-0',
    scenario: 'partner_pharmacy',
    outcome: 'Prescription Approve',
    startAfterMs: 0,
    twin: false,
  },
  journeyId: J,
  startAttempts: 1,
  created: 1,
  startReplays: 0,
  startFailures: 0,
  attachmentAttempts: 1,
};

const exam: SandboxPatientExam = {
  patient_exam_id: PE,
  exam_id: 201,
  meeting_uuid: 'm-1',
  webhook_url: RECEIVER,
  status: 'Approved',
  rx_status: 'Pharmacy Confirmed',
  prescriptions: RX.map((id, i) => ({
    prescription_id: id,
    shipped_at: '2026-01-01T00:00:00Z',
    tracking_number: TRACKING[i]!,
  })),
  events_emitted: [1, 2, 3, 3],
};

/** The sandbox's callbacks in the all-alternatives layout: event 2 per drug, event 3 as a tracking array, no ids. */
const bodies: { event: number; prescriptionId?: number; payload: Record<string, unknown> }[] = [
  { event: 1, payload: { event: '1', patient_exam_id: String(PE), exam_status: 'approved' } },
  ...RX.map((id) => ({
    event: 2,
    prescriptionId: id,
    payload: { event: '2', patient_exam_id: PE, prescription_id: id, drug_details: { drug_name: `drug ${id}` } },
  })),
  ...RX.map((id, i) => ({
    event: 3,
    prescriptionId: id,
    payload: { event: '3', prescription_tracking: [{ rx_number: `RX${id}`, tracking_number: TRACKING[i] }] },
  })),
];

/** Each callback twice (the duplicate fault), each copy answered 200 on its first attempt. */
function deliveries(): SandboxDelivery[] {
  let n = 0;
  return bodies.flatMap((b) =>
    [1, 2].map((copy) => ({
      delivery_id: ++n,
      receiver: RECEIVER,
      event: b.event,
      patient_exam_id: PE,
      ...(b.prescriptionId === undefined ? {} : { prescription_id: b.prescriptionId }),
      layout: 'all-alternatives',
      copy,
      state: 'delivered' as const,
      created_at: '2026-01-01T00:00:00Z',
      attempts: [{ attempt: 1, at: '2026-01-01T00:00:00Z', status: 200, latency_ms: 3 }],
      payload: b.payload,
    })),
  );
}

let delivery = 0;
const ev = (e: Partial<ReceivedEvent> & Pick<ReceivedEvent, 'event' | 'disposition'>): ReceivedEvent => ({
  deliveryId: `api-${++delivery}`,
  patientExamId: PE,
  ...e,
});

/** What the journey recorded: each callback applied once, its copy a duplicate (a tracking array's copy, arriving
 * while the original waited for event 2, without any ids). */
function events(): ReceivedEvent[] {
  return [
    ev({ event: 1, disposition: 'applied' }),
    ev({ event: 1, disposition: 'duplicate' }),
    ...RX.flatMap((id) => [
      ev({ event: 2, prescriptionId: id, disposition: 'applied' }),
      ev({ event: 2, prescriptionId: id, disposition: 'duplicate' }),
    ]),
    ...RX.flatMap((id, i) => [
      ev({ event: 3, prescriptionId: id, trackingNumber: TRACKING[i], disposition: 'applied' }),
      ev({ event: 3, patientExamId: null, trackingNumber: TRACKING[i], disposition: 'duplicate' }),
    ]),
  ];
}

function snapshot(overrides: Partial<JourneySnapshot> = {}): JourneySnapshot {
  return {
    stage: 'completed',
    exams: [
      {
        patientExamId: PE,
        status: 'Approved',
        rxStatus: 'Pharmacy Confirmed',
        prescriptions: RX.map((id, i) => ({ prescriptionId: id, tracking: { trackingNumber: TRACKING[i]! } })),
      },
    ],
    meetings: [{ meetingUuid: 'm-1' }],
    events: events(),
    attention: [],
    ...overrides,
  };
}

function judged(
  input: {
    snap?: JourneySnapshot;
    deliveries?: SandboxDelivery[];
    deadLetters?: DeadLetterInfo[];
    journey?: StartedJourney;
    exam?: SandboxPatientExam;
  } = {},
) {
  return judge({
    journeys: [input.journey ?? journey],
    snapshots: new Map([[J, input.snap ?? snapshot()]]),
    exams: [input.exam ?? exam],
    deliveries: input.deliveries ?? deliveries(),
    deadLetters: input.deadLetters ?? [],
    decisions: [],
  });
}

describe('the fault suite judge', () => {
  it('keys callbacks without ids by the sandbox ids: a journey in the all-alternatives layout passes', () => {
    const r = judged();
    expect(r.problems).toEqual([]);
    // Event 1, event 2 per drug, event 3 per prescription: each applied exactly once.
    expect(r.callbacks).toMatchObject({ expected: 5, appliedExactlyOnce: 5, answered400: 0, deliveries: 10 });
  });

  it('a late copy kept as a dead letter is matched by its body, and counted by reason', () => {
    const snap = snapshot({
      events: events().filter((e) => !(e.trackingNumber === TRACKING[1] && e.disposition === 'duplicate')),
    });
    const late: DeadLetterInfo = {
      id: 'dl-1',
      journeyId: J,
      reason: 'journey_finished',
      event: 3,
      rawBody: JSON.stringify(bodies[4]!.payload),
    };
    const r = judged({ snap, deadLetters: [late] });
    expect(r.problems).toEqual([]);
    expect(r.callbacks.deadLettersByReason).toEqual({ journey_finished: 1 });
  });

  it('counts a delivery once when the inbox forwarded it again after the journey ended (the same delivery id)', () => {
    const snap = snapshot();
    const first = snap.events.find((e) => e.event === 1)!;
    const again = (id: string, deliveryId: string): DeadLetterInfo => ({
      id,
      journeyId: J,
      reason: 'journey_finished',
      event: 1,
      patientExamId: PE,
      deliveryId,
      rawBody: JSON.stringify(bodies[0]!.payload),
    });
    const r = judged({ snap, deadLetters: [again('dl-1', first.deliveryId), again('dl-2', first.deliveryId)] });
    expect(r.problems).toEqual([]);
    expect(r.callbacks.deadLetteredAgain).toBe(2);
    // Another delivery id is another delivery: more than reached the API.
    expect(judged({ snap, deadLetters: [again('dl-3', 'api-unknown')] }).problems).toEqual([
      `journey ${J} (partner_pharmacy, Prescription Approve): callback ${PE}:1 recorded 3x but at most 2 attempts reached the API`,
    ]);
  });

  it('a journey left short of its end is reported with its events, its exam at the sandbox and the deliveries to it', () => {
    const only1 = (d: SandboxDelivery) => d.event === 1;
    const snap = snapshot({
      stage: 'awaiting_prescription',
      events: events().filter((e) => e.event === 1),
    });
    const atSandbox = { ...exam, rx_status: null, prescriptions: [], events_emitted: [1] };
    const [problem, ...rest] = judged({ snap, exam: atSandbox, deliveries: deliveries().filter(only1) }).problems;
    expect(rest).toEqual([]);
    expect(problem).toBe(
      `journey ${J} (partner_pharmacy, Prescription Approve): ended awaiting_prescription; ` +
        `events: 1@${PE} applied [${snap.events[0]!.deliveryId}]; 1@${PE} duplicate [${snap.events[1]!.deliveryId}]; ` +
        `sandbox exams: ${PE} Approved rx none emitted [1]; ` +
        `deliveries: 1@${PE} #1 copy 1 delivered (200); 1@${PE} #2 copy 2 delivered (200)`,
    );
  });

  it('still reports a lost callback', () => {
    const snap = snapshot({
      events: events().filter(
        (e) => !(e.event === 3 && e.disposition === 'duplicate' && e.trackingNumber === TRACKING[0]),
      ),
    });
    expect(judged({ snap }).problems).toEqual([
      `journey ${J} (partner_pharmacy, Prescription Approve): callback ${PE}:3:${RX[0]} delivered 2x with a 200 but recorded 1x (lost)`,
    ]);
  });

  it('still reports a callback recorded more often than it reached the API', () => {
    const snap = snapshot({
      events: [...events(), ev({ event: 2, prescriptionId: RX[1], disposition: 'duplicate' })],
    });
    expect(judged({ snap }).problems).toEqual([
      `journey ${J} (partner_pharmacy, Prescription Approve): callback ${PE}:2:${RX[1]} recorded 3x but at most 2 attempts reached the API`,
    ]);
  });

  it('still reports a shipment paired with the wrong prescription', () => {
    const snap = snapshot();
    snap.exams[0]!.prescriptions = RX.map((id, i) => ({
      prescriptionId: id,
      tracking: { trackingNumber: TRACKING[1 - i]! },
    }));
    snap.events = events().map((e) =>
      e.event === 3 && e.prescriptionId !== undefined
        ? { ...e, prescriptionId: e.prescriptionId === RX[0] ? RX[1] : RX[0] }
        : e,
    );
    const problems = judged({ snap }).problems;
    expect(problems).toEqual(
      expect.arrayContaining([
        expect.stringContaining(`event 3 applied against prescription ${RX[1]}, the sandbox shipped it for ${RX[0]}`),
        expect.stringContaining(
          `prescription ${RX[0]} has tracking ${TRACKING[1]}, the sandbox shipped ${TRACKING[0]}`,
        ),
      ]),
    );
  });

  it('still reports a callback held for a person, one answered 400, and a dead letter for any other reason', () => {
    const snap = snapshot({
      events: events().map((e, i) =>
        i === 8 ? { ...e, disposition: 'held' as const, note: 'no patient_exam_id' } : e,
      ),
    });
    const refused = deliveries();
    refused[0]!.attempts.unshift({ attempt: 1, at: '2026-01-01T00:00:00Z', status: 400, latency_ms: 2 });
    const letter: DeadLetterInfo = { id: 'dl-2', journeyId: J, reason: 'unreadable', event: 3 };
    const r = judged({ snap, deliveries: refused, deadLetters: [letter] });
    expect(r.callbacks.answered400).toBe(1);
    expect(r.problems).toEqual(
      expect.arrayContaining([
        expect.stringContaining(`callback ${PE}:1 (delivery 1, layout all-alternatives) answered 400`),
        'dead letter dl-2 (unreadable) for journey fault-j1',
        expect.stringContaining(`event ${PE}:3:${RX[1]} left held (no patient_exam_id)`),
      ]),
    );
  });

  it('expects event 2 per drug only when the sandbox sent it so', () => {
    const interfaceDeliveries = deliveries().filter((d) => d.event !== 2);
    const r = judged({ deliveries: interfaceDeliveries });
    expect(r.problems).toEqual(
      expect.arrayContaining([
        `journey ${J} (partner_pharmacy, Prescription Approve): expected event ${PE}:2 applied 0x, not once`,
        `journey ${J} (partner_pharmacy, Prescription Approve): unexpected event ${PE}:2:${RX[0]} applied`,
      ]),
    );
  });

  it('expects a deferral and the medical director’s final verdict: event 1 applied twice, a copy still once', () => {
    const deferred: StartedJourney = { ...journey, plan: { ...journey.plan, scenario: 'gfe', outcome: 'Deferred' } };
    const gfe: SandboxPatientExam = {
      ...exam,
      exam_id: 8101,
      rx_status: null,
      prescriptions: [],
      events_emitted: [1, 1],
    };
    const verdicts = [{ exam_status: 'Deferred to Medical Director' }, { exam_status: 'Approved' }];
    const sent = verdicts.flatMap((v, i) =>
      [1, 2].map((copy) => ({
        ...deliveries()[0]!,
        delivery_id: i * 2 + copy,
        copy,
        payload: { event: 1, patient_exam_id: PE, ...v },
      })),
    );
    const recorded = (applied: number) =>
      snapshot({
        exams: [{ patientExamId: PE, status: 'Approved', rxStatus: null, prescriptions: [] }],
        events: [
          ev({ event: 1, disposition: 'applied' }),
          ev({ event: 1, disposition: 'duplicate' }),
          ev({ event: 1, disposition: applied === 2 ? 'applied' : 'duplicate' }),
          ev({ event: 1, disposition: 'duplicate' }),
        ],
      });
    const ok = judged({ journey: deferred, exam: gfe, deliveries: sent, snap: recorded(2) });
    expect(ok.problems).toEqual([]);
    expect(ok.callbacks).toMatchObject({ expected: 2, appliedExactlyOnce: 2 });
    // The deferral delivered after the final verdict (out of order): recorded as stale, the final verdict kept.
    const late = recorded(2);
    late.events[2] = { ...late.events[0]!, deliveryId: 'api-late' };
    late.events[0] = { ...late.events[0]!, disposition: 'ignored', note: 'verdict already Approved' };
    expect(judged({ journey: deferred, exam: gfe, deliveries: sent, snap: late }).problems).toEqual([]);
    // The deferral held back until the final verdict had completed the journey: a dead letter of the finished one.
    const lettered = recorded(2);
    lettered.events.splice(0, 2);
    const letter: DeadLetterInfo = {
      id: 'dl-late',
      journeyId: J,
      reason: 'journey_finished',
      event: 1,
      patientExamId: PE,
      rawBody: JSON.stringify(sent[0]!.payload),
    };
    expect(
      judged({
        journey: deferred,
        exam: gfe,
        deliveries: sent,
        snap: lettered,
        deadLetters: [letter, { ...letter, id: 'dl-late-copy' }],
      }).problems,
    ).toEqual([]);
    // The final verdict taken for a copy of the deferral: the journey never applied it.
    expect(judged({ journey: deferred, exam: gfe, deliveries: sent, snap: recorded(1) }).problems).toEqual([
      `journey ${J} (gfe, Deferred): expected event ${PE}:1 applied 1x, not 2x`,
    ]);
  });
});
