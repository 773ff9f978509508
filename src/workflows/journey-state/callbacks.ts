// The service's callbacks: idempotency, causal order (buffer until the predecessor is there), the verdict, prescription
// and tracking rules, adopting the patient exams an invite in doubt created, and the record of every delivery.
import {
  isUnread,
  type AnyCallback,
  type Attention,
  type EventDisposition,
  type ExamStatus,
  type JourneyCallback,
  type JourneyState,
  type MeetingState,
  type PatientExamState,
  type PendingCallback,
  type ReceivedEvent,
  type ShipmentFacts,
  type Tracking,
  type Verdict,
} from '../../contract/journey-types';
import { findExam, newExam, updateExam } from './exams';

export function receiveCallback(state: JourneyState, p: { deliveryId: string; at: string; callback: AnyCallback }) {
  // The same HTTP delivery again (the webhook's signal landed although it spooled a copy): nothing new happened.
  if (state.received.some((r) => r.deliveryId === p.deliveryId)) return state;
  const cb = p.callback;
  if (isUnread(cb)) return hold(state, p, cb.reason);
  const pending: PendingCallback = { ...p, callback: cb };
  const key = callbackKey(cb);
  if (state.seen.includes(key) || shipmentAlreadyApplied(state, cb)) {
    // A copy of a shipment the journey has: recorded against the prescription that has it, whatever ids it lacks.
    const owner = cb.event === 3 ? shipmentOwner(state, cb) : undefined;
    return record(state, p, 'duplicate', undefined, owner);
  }
  let s = { ...state, seen: [...state.seen, key] };
  if (!s.inviteInFlight && evidenceFor(s, cb)) {
    if (s.provesOwnership) return claim(s, pending);
    const a = adopt(s, cb, p.at);
    if ('why' in a) return hold(s, p, a.why);
    s = a.state;
  }
  const r = applyCallback(s, pending);
  if (r.kind === 'applied') return drainPending(record(r.state, p, 'applied', undefined, r.resolved));
  if (r.kind === 'reject') return record(s, p, 'ignored', r.why);
  if (r.kind === 'hold') return hold(s, p, r.why);
  if (namesUnknownExam(s, cb) && !s.inviteInFlight && s.meetings.length > 0) {
    return record(s, p, 'foreign', 'not a patient exam of this journey');
  }
  return record({ ...s, pending: [...s.pending, pending] }, p, 'buffered', r.why);
}

/** Applies buffered callbacks whose predecessors have now arrived, until nothing moves. */
export function drainPending(state: JourneyState): JourneyState {
  let s = state;
  for (let moved = true; moved;) {
    moved = false;
    for (const p of s.pending) {
      const without = { ...s, pending: s.pending.filter((q) => q !== p) };
      const r = applyCallback(without, p);
      if (r.kind === 'wait') continue;
      if (r.kind === 'applied') s = record(r.state, p, 'applied', undefined, r.resolved);
      else if (r.kind === 'hold') s = hold(without, p, r.why);
      else s = record(without, p, 'ignored', r.why);
      moved = true;
      break;
    }
  }
  // Once no invite is on the wire, a callback for a patient exam we never created is not ours, unless it proves an
  // invite in doubt was created.
  if (!s.inviteInFlight) {
    for (const p of s.pending.filter((q) => namesUnknownExam(s, q.callback))) {
      if (!namesUnknownExam(s, p.callback)) continue;
      if (evidenceFor(s, p.callback)) {
        if (s.provesOwnership) {
          if (!checking(s, p.callback)) s = claim({ ...s, pending: s.pending.filter((q) => q !== p) }, p);
          continue;
        }
        const a = adopt(s, p.callback, p.at);
        s = 'state' in a ? drainPending(a.state) : hold({ ...s, pending: s.pending.filter((q) => q !== p) }, p, a.why);
        continue;
      }
      s = record(
        { ...s, pending: s.pending.filter((q) => q !== p) },
        p,
        'foreign',
        'not a patient exam of this journey',
      );
    }
  }
  return s;
}

/** Idempotency key of a callback. Event 1 includes the verdict: a deferred exam may later get its final verdict. */
export function callbackKey(cb: JourneyCallback): string {
  switch (cb.event) {
    case 1:
      return `${cb.patientExamId}:1:${cb.examStatus}`;
    case 2:
      // One drug per callback: each drug is its own event 2.
      return cb.partial
        ? `${cb.patientExamId}:2:${cb.prescriptions[0]?.prescriptionId ?? ''}`
        : `${cb.patientExamId}:2`;
    case 3:
      // Without a prescription id the tracking number tells copies of one shipment from another shipment.
      return cb.prescriptionId === undefined
        ? `${cb.patientExamId ?? '?'}:3:tracking:${cb.trackingNumber}`
        : `${cb.patientExamId ?? '?'}:3:${cb.prescriptionId}`;
  }
}

const FINAL_VERDICTS: readonly ExamStatus[] = ['Approved', 'Rejected', 'Deferred to Medical Director', 'NA', 'Missed'];
const VERDICTS: readonly string[] = FINAL_VERDICTS;

type Applied =
  | { kind: 'applied'; state: JourneyState; resolved?: { patientExamId: number; prescriptionId?: number } }
  | { kind: 'wait'; why: string }
  | { kind: 'reject'; why: string }
  | { kind: 'hold'; why: string };

/** Applies one callback when its causal predecessor is there; otherwise says why it must wait or be dropped. */
function applyCallback(state: JourneyState, p: PendingCallback): Applied {
  const cb = p.callback;
  if (cb.event === 3 && cb.patientExamId === undefined) {
    const exam = trackingExam(state, cb);
    if ('kind' in exam) return exam;
    return applyTracking(state, p, exam, cb);
  }
  const exam = findExam(state, cb.patientExamId!);
  if (!exam) return { kind: 'wait', why: 'unknown patient exam' };
  if (cb.event === 1) {
    if (!VERDICTS.includes(cb.examStatus)) return { kind: 'hold', why: 'exam_status is not one of the five verdicts' };
    const verdict = cb.examStatus as Verdict;
    if (exam.status === 'cancelled' || exam.status === 'expired') {
      return { kind: 'reject', why: `exam already ${exam.status}` };
    }
    // A deferred exam may still get its final verdict; any other verdict stands.
    const mayChange = exam.status === 'pending' || exam.status === 'Deferred to Medical Director';
    if (!mayChange && exam.verdictSource === 'callback')
      return { kind: 'reject', why: `verdict already ${exam.status}` };
    return {
      kind: 'applied',
      state: updateExam(state, exam.patientExamId, (e) => ({
        ...e,
        status: verdict,
        rxStatus: cb.rxStatus ?? e.rxStatus,
        verdictAt: e.verdictSource === 'cancel_response' && e.status === verdict ? e.verdictAt : p.at,
        verdictSource: 'callback',
        examUrl: cb.examUrl,
        reason: cb.reason,
        providerName: cb.providerName,
      })),
    };
  }
  if (cb.event === 2) {
    if (exam.rxType !== 2) return { kind: 'reject', why: 'not a prescription exam' };
    if (exam.status !== 'Approved') return { kind: 'wait', why: 'event 2 before the approval of event 1' };
    if (cb.partial && exam.prescriptionConfirmedAt !== null) {
      // A further drug of an exam already confirmed (one drug per callback).
      const known = new Set(exam.prescriptions.map((rx) => rx.prescriptionId));
      const added = cb.prescriptions.filter((rx) => !known.has(rx.prescriptionId));
      if (added.length === 0) return { kind: 'reject', why: 'prescription already confirmed' };
      const grown = updateExam(state, exam.patientExamId, (e) => ({
        ...e,
        oneDrugPerEvent2: true,
        lastDrugAt: p.at,
        prescriptions: [...e.prescriptions, ...added.map((rx) => ({ ...rx, tracking: null }))],
      }));
      return {
        kind: 'applied',
        state: state.callbackRules === 2 ? moveShipmentsToTheirDrugs(grown, exam.patientExamId) : grown,
      };
    }
    return {
      kind: 'applied',
      state: updateExam(state, exam.patientExamId, (e) => ({
        ...e,
        rxStatus: cb.rxStatus ?? 'Pharmacy Confirmed',
        prescriptionConfirmedAt: p.at,
        prescriptions: cb.prescriptions.map((rx) => ({ ...rx, tracking: null })),
        ...(cb.partial ? { oneDrugPerEvent2: true, lastDrugAt: p.at } : {}),
      })),
    };
  }
  if (exam.fulfilment === 'custom') return { kind: 'reject', why: 'no tracking for a custom pharmacy' };
  if (exam.prescriptionConfirmedAt === null) return { kind: 'wait', why: 'event 3 before event 2' };
  return applyTracking(state, p, exam, cb);
}

/** The partner prescription exam an event 3 without patient_exam_id is for, or why there is none (yet). */
function trackingExam(
  state: JourneyState,
  cb: Extract<JourneyCallback, { event: 3 }>,
): PatientExamState | { kind: 'wait' | 'hold'; why: string } {
  const partner = state.exams.filter((e) => e.fulfilment === 'partner');
  const confirmed = partner.filter((e) => e.status === 'Approved' && e.prescriptionConfirmedAt !== null);
  const byDrug = state.callbackRules === 2;
  if (byDrug) {
    // A prescription the journey knows, named by id or rx number, names its exam.
    const named = confirmed.filter(
      (e) =>
        e.prescriptions.some((rx) => rx.prescriptionId === cb.prescriptionId) ||
        shipmentsOf(cb).some((s) => prescriptionByRxNumber(e, s.rxNumber) !== undefined),
    );
    if (named.length === 1) return named[0]!;
  }
  // An exam whose drugs come one per event 2 may still get the drug this shipment is for.
  const open = confirmed.filter(
    (e) => e.prescriptions.some((rx) => rx.tracking === null) || (byDrug && e.oneDrugPerEvent2 === true),
  );
  if (open.length === 1) return open[0]!;
  if (open.length > 1)
    return { kind: 'hold', why: 'no patient_exam_id, and several prescription exams await tracking' };
  const waiting = partner.some(
    (e) => e.status === 'pending' || (e.status === 'Approved' && e.prescriptionConfirmedAt === null),
  );
  if (waiting || state.inviteInFlight || state.meetings.length === 0) {
    return { kind: 'wait', why: 'event 3 without patient_exam_id before its event 2' };
  }
  if (confirmed.length > 0) return { kind: 'hold', why: 'no patient_exam_id, and every prescription has shipped' };
  return { kind: 'hold', why: 'no patient_exam_id, and no partner pharmacy prescription exam in this journey' };
}

/**
 * Event 3 on a confirmed partner exam: the named prescription; without an id, the prescription its rx number names,
 * else the next unshipped ones in event 2's order.
 */
function applyTracking(
  state: JourneyState,
  p: PendingCallback,
  exam: PatientExamState,
  cb: Extract<JourneyCallback, { event: 3 }>,
): Applied {
  const shipments = shipmentsOf(cb);
  // Rule 2: an exam whose drugs come one per event 2 may not know this shipment's drug yet: wait for it.
  const mayGrow = state.callbackRules === 2 && exam.oneDrugPerEvent2 === true;
  let targets: number[];
  if (cb.prescriptionId !== undefined) {
    if (!exam.prescriptions.some((rx) => rx.prescriptionId === cb.prescriptionId)) {
      if (mayGrow) return { kind: 'wait', why: 'event 3 before the event 2 of its drug' };
      return { kind: 'reject', why: 'prescription_id not in event 2' };
    }
    targets = [cb.prescriptionId];
  } else if (state.callbackRules === 2) {
    const named = shipments.map((s) => prescriptionByRxNumber(exam, s.rxNumber));
    const shipped = named.find(
      (id) => id !== undefined && exam.prescriptions.find((rx) => rx.prescriptionId === id)!.tracking !== null,
    );
    if (
      shipped !== undefined ||
      new Set(named.filter((id) => id !== undefined)).size < named.filter((id) => id !== undefined).length
    ) {
      // The prescription it names has a shipment already: one paired by order may move away once its drug comes.
      if (mayGrow) return { kind: 'wait', why: 'event 3 for a prescription paired with another shipment' };
      return { kind: 'hold', why: 'no prescription_id, and its rx number names a prescription that has shipped' };
    }
    // The others in event 2's order, among the unshipped prescriptions no rx number of theirs rules out.
    const free = exam.prescriptions.filter((rx) => rx.tracking === null && !named.includes(rx.prescriptionId));
    targets = [];
    for (const [i, s] of shipments.entries()) {
      const id =
        named[i] ??
        free.find((rx) => !targets.includes(rx.prescriptionId) && !(rx.rxNumber && s.rxNumber))?.prescriptionId;
      if (id === undefined) {
        if (mayGrow) return { kind: 'wait', why: 'event 3 before the event 2 of its drug' };
        const unshipped = exam.prescriptions.filter((rx) => rx.tracking === null).length;
        if (unshipped === 0) return { kind: 'reject', why: 'every prescription has shipped' };
        return {
          kind: 'hold',
          why: `no prescription_id, and ${shipments.length} shipments for ${unshipped} unshipped prescriptions`,
        };
      }
      targets.push(id);
    }
  } else {
    const unshipped = exam.prescriptions.filter((rx) => rx.tracking === null).map((rx) => rx.prescriptionId);
    if (unshipped.length === 0) return { kind: 'reject', why: 'every prescription has shipped' };
    if (shipments.length > unshipped.length) {
      return {
        kind: 'hold',
        why: `no prescription_id, and ${shipments.length} shipments for ${unshipped.length} unshipped prescriptions`,
      };
    }
    targets = unshipped.slice(0, shipments.length);
  }
  const tracking = new Map(
    targets.map((id, i) => {
      const s = shipments[i]!;
      const t: Tracking = {
        trackingNumber: s.trackingNumber,
        deliveryService: s.deliveryService,
        pharmacyLocation: s.pharmacyLocation,
        orderId: s.orderId,
        shippedAt: p.at,
        ...(cb.prescriptionId === undefined && s.rxNumber ? { rxNumber: s.rxNumber } : {}),
      };
      return [id, t];
    }),
  );
  return {
    kind: 'applied',
    state: updateExam(state, exam.patientExamId, (e) => ({
      ...e,
      prescriptions: e.prescriptions.map((rx) => ({ ...rx, tracking: tracking.get(rx.prescriptionId) ?? rx.tracking })),
    })),
    ...(cb.patientExamId === undefined || cb.prescriptionId === undefined
      ? { resolved: { patientExamId: exam.patientExamId, prescriptionId: targets[0]! } }
      : {}),
  };
}

/**
 * A shipment paired with a prescription by event 2's order (its rx number named no prescription the journey knew)
 * moves to the drug its rx number names once that drug's own event 2 has come; the received events follow it.
 */
function moveShipmentsToTheirDrugs(state: JourneyState, patientExamId: number): JourneyState {
  const exam = findExam(state, patientExamId)!;
  const moves = new Map<number, Tracking>();
  const freed = new Set<number>();
  for (const rx of exam.prescriptions) {
    const t = rx.tracking;
    if (!t?.rxNumber) continue;
    const owner = prescriptionByRxNumber(exam, t.rxNumber);
    if (owner === undefined || owner === rx.prescriptionId || moves.has(owner)) continue;
    const target = exam.prescriptions.find((x) => x.prescriptionId === owner)!;
    if (target.tracking !== null && !freed.has(owner)) continue;
    moves.set(owner, t);
    freed.add(rx.prescriptionId);
  }
  if (moves.size === 0) return state;
  const moved = updateExam(state, patientExamId, (e) => ({
    ...e,
    prescriptions: e.prescriptions.map((rx) => ({
      ...rx,
      tracking: moves.get(rx.prescriptionId) ?? (freed.has(rx.prescriptionId) ? null : rx.tracking),
    })),
  }));
  const ownerOf = new Map([...moves].map(([id, t]) => [t.trackingNumber, id]));
  return {
    ...moved,
    received: moved.received.map((r) =>
      r.event === 3 && r.trackingNumber !== undefined && ownerOf.has(r.trackingNumber)
        ? { ...r, patientExamId, prescriptionId: ownerOf.get(r.trackingNumber)! }
        : r,
    ),
  };
}

/** The shipments of an event 3: the first, then any further entries of its tracking array. */
function shipmentsOf(cb: Extract<JourneyCallback, { event: 3 }>): ShipmentFacts[] {
  return [cb, ...(cb.moreTracking ?? [])];
}

/**
 * The prescription of the exam a shipment's rx number names: the one event 2 gave that rx number, else the one whose
 * id it spells (`RX<prescription_id>`, as the sandbox sends it). Only ever a prescription the journey knows.
 */
function prescriptionByRxNumber(exam: PatientExamState, rxNumber: string | null | undefined): number | undefined {
  const rx = rxNumber?.trim();
  if (!rx) return undefined;
  const exact = exam.prescriptions.find((p) => p.rxNumber?.trim() === rx);
  if (exact) return exact.prescriptionId;
  const digits = /^(?:rx)?[\s#-]*0*(\d{1,15})$/i.exec(rx)?.[1];
  return digits === undefined
    ? undefined
    : exam.prescriptions.find((p) => String(p.prescriptionId) === digits)?.prescriptionId;
}

/** The exam and prescription that already have the first shipment of an event 3 (its tracking number), if any. */
function shipmentOwner(
  state: JourneyState,
  cb: Extract<JourneyCallback, { event: 3 }>,
): { patientExamId: number; prescriptionId: number } | undefined {
  for (const e of state.exams) {
    if (cb.patientExamId !== undefined && e.patientExamId !== cb.patientExamId) continue;
    const rx = e.prescriptions.find(
      (x) =>
        x.tracking?.trackingNumber === cb.trackingNumber &&
        (cb.prescriptionId === undefined || x.prescriptionId === cb.prescriptionId),
    );
    if (rx) return { patientExamId: e.patientExamId, prescriptionId: rx.prescriptionId };
  }
  return undefined;
}

/**
 * Whether an event 3 only repeats shipments the journey has (its tracking numbers, on the exam it names or any): a copy
 * in another layout, with or without its ids, is a duplicate, not a new shipment to hold for a person.
 */
function shipmentAlreadyApplied(state: JourneyState, cb: JourneyCallback): boolean {
  if (cb.event !== 3) return false;
  const exams =
    cb.patientExamId === undefined ? state.exams : state.exams.filter((e) => e.patientExamId === cb.patientExamId);
  const known = new Set(
    exams.flatMap((e) =>
      e.prescriptions
        .filter((rx) => cb.prescriptionId === undefined || rx.prescriptionId === cb.prescriptionId)
        .flatMap((rx) => (rx.tracking ? [rx.tracking.trackingNumber] : [])),
    ),
  );
  return [cb, ...(cb.moreTracking ?? [])].every((t) => known.has(t.trackingNumber));
}

/** Whether a buffered callback names a patient exam this journey never created (and so cannot be its own). */
function namesUnknownExam(state: JourneyState, cb: JourneyCallback): boolean {
  return cb.patientExamId !== undefined && !findExam(state, cb.patientExamId);
}

/**
 * The exams a callback naming an unknown patient exam may prove created: those of the invite in doubt, or those of a
 * meeting known from evidence that still lack their patient exam. Undefined when the callback proves nothing.
 */
function evidenceFor(
  state: JourneyState,
  cb: JourneyCallback,
): { examIds: number[]; meeting?: MeetingState } | undefined {
  if (!state.adoptsEvidence || !namesUnknownExam(state, cb)) return undefined;
  if (state.ambiguousInvite) return { examIds: state.ambiguousInvite };
  for (const m of state.meetings) {
    if (!m.evidenceOf) continue;
    const have = new Set(m.patientExamIds.map((id) => findExam(state, id)?.examId));
    const missing = m.evidenceOf.filter((id) => !have.has(id));
    if (missing.length > 0) return { examIds: missing, meeting: m };
  }
  return undefined;
}

/** Whether a check that the patient exam a callback names is this journey's own is open. */
function checking(state: JourneyState, cb: AnyCallback): boolean {
  return state.ownershipChecks.some((c) => c.patientExamId === cb.patientExamId);
}

/**
 * Today's rules: a callback naming an unknown patient exam while the invite is in doubt adopts nothing by itself. One
 * that names one of the exams in doubt opens a check, which the workflow settles (its patient, and no other journey
 * holding that patient exam: settleOwnership); it and later callbacks for that patient exam wait for the answer. A
 * shipment, or a callback for another exam, cannot prove the invite created: it goes to a person.
 */
function claim(state: JourneyState, p: PendingCallback): JourneyState {
  const cb = p.callback;
  const id = cb.patientExamId!;
  const wait = (s: JourneyState, why: string) => record({ ...s, pending: [...s.pending, p] }, p, 'buffered', why);
  if (checking(state, cb)) return wait(state, `waiting for the check that patient exam ${id} is this journey's own`);
  if (cb.event === 3) {
    const why = `names patient exam ${id}, unknown to this journey; a shipment cannot prove the invite in doubt created it`;
    // The service's event 1 or 2 for the same patient exam can (delivered after it, as the out-of-order fault does):
    // it waits for that proof, and goes to a person with the check's reason if the proof is refused.
    if (state.shipmentsAwaitProof) return wait(state, `${why}; waiting for a callback of patient exam ${id} that can`);
    return hold(state, p, why);
  }
  const evidence = evidenceFor(state, cb)!;
  if (!evidence.examIds.includes(cb.examId)) {
    return hold(
      state,
      p,
      `names patient exam ${id} of exam ${cb.examId}, not an exam the invite in doubt asked for (${evidence.examIds.join(', ')})`,
    );
  }
  const check = { patientExamId: id, examId: cb.examId, deliveryId: p.deliveryId };
  return wait(
    { ...state, ownershipChecks: [...state.ownershipChecks, check] },
    `checking that patient exam ${id} is this journey's own: its patient, and no other journey holding it`,
  );
}

/**
 * The workflow's answer to a check: proven, the patient exam is adopted and its callbacks applied in order; refused,
 * they go to a person with the reason. A new invite attempt started meanwhile leaves them waiting for its end.
 */
export function settleOwnership(
  state: JourneyState,
  ev: { at: string; patientExamId: number; refused?: string },
): JourneyState {
  const check = state.ownershipChecks.find((c) => c.patientExamId === ev.patientExamId);
  if (!check) return state;
  const s = { ...state, ownershipChecks: state.ownershipChecks.filter((c) => c !== check) };
  const waiting = s.pending.filter((q) => q.callback.patientExamId === ev.patientExamId);
  const holdAll = (why: string) =>
    waiting.reduce((acc, q) => hold(acc, q, why), { ...s, pending: s.pending.filter((q) => !waiting.includes(q)) });
  if (ev.refused) return holdAll(`claims patient exam ${ev.patientExamId} for the invite in doubt, but ${ev.refused}`);
  if (s.inviteInFlight) return s;
  const claimant =
    waiting.find((q) => q.deliveryId === check.deliveryId) ?? waiting.find((q) => q.callback.event !== 3);
  if (!claimant || !evidenceFor(s, claimant.callback)) return drainPending(s);
  const a = adopt(s, claimant.callback, ev.at, "its patient and exam are this journey's and no other journey holds it");
  return 'why' in a ? holdAll(a.why) : drainPending(a.state);
}

/**
 * Adopts the patient exam a callback names: the invite in doubt was created (only it carried the journey's URL). Its
 * exam is the one named, else the invite's only one, else the callback is for a person; the doubt's attention settles.
 */
function adopt(
  state: JourneyState,
  cb: JourneyCallback,
  at: string,
  proof = "it came on the journey's own URL",
): { state: JourneyState } | { why: string } {
  const evidence = evidenceFor(state, cb)!;
  const named = cb.event === 3 ? undefined : cb.examId;
  const examId =
    named !== undefined && evidence.examIds.includes(named)
      ? named
      : evidence.examIds.length === 1 && (named === undefined || !state.examIds.includes(named))
        ? evidence.examIds[0]
        : undefined;
  if (examId === undefined) {
    return {
      why: `proves the invite in doubt was created, but not which of its exams (${evidence.examIds.join(', ')}) patient exam ${cb.patientExamId} is`,
    };
  }
  const title = state.catalog?.find((c) => c.examId === examId)?.title ?? `exam ${examId}`;
  const exam = newExam(state, { patientExamId: cb.patientExamId!, examId, examTitle: title }, '');
  const meetings = evidence.meeting
    ? state.meetings.map((m) =>
        m === evidence.meeting ? { ...m, patientExamIds: [...m.patientExamIds, exam.patientExamId] } : m,
      )
    : [
        ...state.meetings,
        {
          meetingUuid: '',
          meetingUrl: '',
          createdAt: at,
          patientExamIds: [exam.patientExamId],
          remindersSent: 0,
          expiryHandled: false,
          evidenceOf: evidence.examIds,
        },
      ];
  const why = `a callback named patient exam ${exam.patientExamId} (exam ${examId}) and ${proof}: the invite was created`;
  const settled = state.attention.filter((a) => a.code === 'invite_ambiguous');
  return {
    state: {
      ...state,
      exams: [...state.exams, exam],
      meetings,
      ambiguousInvite: null,
      attention: state.attention.filter((a) => a.code !== 'invite_ambiguous'),
      resolvedAttention: [
        ...state.resolvedAttention,
        ...settled.map((a) => ({
          code: a.code,
          since: a.since,
          resolvedAt: at,
          why,
          patientExamId: exam.patientExamId,
        })),
      ],
    },
  };
}

function record(
  state: JourneyState,
  p: { deliveryId: string; at: string; callback: AnyCallback },
  disposition: EventDisposition,
  note?: string,
  resolved?: { patientExamId: number; prescriptionId?: number },
): JourneyState {
  const cb = p.callback;
  const existing = state.received.findIndex((r) => r.deliveryId === p.deliveryId);
  const unread = isUnread(cb);
  const named = unread
    ? undefined
    : cb.event === 3
      ? cb.prescriptionId
      : cb.event === 2 && cb.partial
        ? cb.prescriptions[0]?.prescriptionId
        : undefined;
  const prescriptionId = resolved?.prescriptionId ?? named;
  const entry: ReceivedEvent = {
    deliveryId: p.deliveryId,
    event: cb.event,
    patientExamId: resolved?.patientExamId ?? cb.patientExamId ?? null,
    ...(prescriptionId !== undefined ? { prescriptionId } : {}),
    ...(!unread && cb.event === 3 ? { trackingNumber: cb.trackingNumber } : {}),
    receivedAt: existing >= 0 ? state.received[existing]!.receivedAt : p.at,
    disposition,
    ...(note ? { note } : {}),
    ...(!unread && cb.layout ? { layout: cb.layout } : {}),
  };
  const received = [...state.received];
  if (existing >= 0) received[existing] = entry;
  else received.push(entry);
  return { ...state, received };
}

/** Records a callback for a person: disposition `held`, and an attention entry saying why. */
function hold(state: JourneyState, p: { deliveryId: string; at: string; callback: AnyCallback }, why: string) {
  const cb = p.callback;
  const attention: Attention = {
    code: 'callback_held',
    message: `a callback (event ${cb.event}) was kept but not applied: ${why}; read it in the journey's events, act on the journey, then retry`,
    since: p.at,
    ...(cb.patientExamId !== undefined ? { patientExamId: cb.patientExamId } : {}),
    facts: { deliveryId: p.deliveryId, event: cb.event, reason: why },
  };
  return record({ ...state, attention: [...state.attention, attention] }, p, 'held', why);
}
