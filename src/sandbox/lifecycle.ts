/**
 * The simulated provider and pharmacy: verdicts, the provider-wait countdown, prescription confirmation and
 * shipment, cancellation, and the events each of them emits. Test mode drives these on the clock; the control
 * surface drives them for everyone else.
 */
import type { SandboxClock } from './clock';
import type { SandboxConfig } from './config';
import type { CallbackDelivery } from './delivery';
import { event1, event2, event3, inLayout, type EventContext } from './events';
import type { SandboxFaults } from './faults';
import { ALTERNATIVE_LAYOUTS, type CallbackLayout } from './layouts';
import type { SandboxRandom } from './random';
import {
  PARTNER_PHARMACY_CONTACTS,
  PARTNER_PHARMACY_LOCATIONS,
  SEED_PARTNER_PHARMACIES,
  SEED_QUESTIONS,
  SEED_REGIMENS,
  SEED_TREATMENT_PACKAGES,
  TEST_PROVIDER_NAME,
  type SeedDrug,
} from './seed';
import type {
  Meeting,
  PatientExamRecord,
  PatientExamStatus,
  SandboxStore,
  StoredPrescription,
  TestOutcome,
  Verdict,
} from './store';

/** A control-surface or state-machine refusal; `code` becomes the HTTP status on the control surface. */
export class LifecycleError extends Error {
  constructor(
    readonly code: 404 | 409 | 400,
    message: string,
  ) {
    super(message);
  }
}

export interface LifecycleDeps {
  store: SandboxStore;
  clock: SandboxClock;
  config: SandboxConfig;
  random: SandboxRandom;
  delivery: CallbackDelivery;
  faults: () => SandboxFaults;
  publicUrl: () => string;
}

const DEFAULT_REASONS: Record<Verdict | 'Missed', string> = {
  Approved: 'Patient is a suitable candidate; treatment approved.',
  Rejected: 'Contraindication reported during screening; treatment not approved.',
  'Deferred to Medical Director': 'Referred to the medical director for review.',
  NA: 'No provider was available and the call could not be completed.',
  Missed: 'The patient waited and no provider became available.',
};

/** The spec's 400 message for an operation on an exam past pending (cancel, resend and others). */
export function statusMessage(status: PatientExamStatus): string {
  switch (status) {
    case 'Approved':
      return 'Exam status is already approved.';
    case 'Rejected':
      return 'Exam status is already rejected.';
    case 'cancelled':
      return 'Exam status is already cancelled.';
    default:
      return `Exam status is already ${status}.`;
  }
}

/**
 * What the test provider does with a prescription (rx_type 2) or a non-prescription exam for each keyword.
 * Approve and Prescription Approve approve every exam (and the prescription exam is prescribed); Reject rejects
 * every exam; Prescription Reject rejects the prescription exam and approves the GFEs; N/A gives NA to every exam.
 */
export function testVerdict(outcome: TestOutcome, rxType: number): Verdict {
  switch (outcome) {
    case 'Approve':
    case 'Prescription Approve':
      return 'Approved';
    case 'Reject':
      return 'Rejected';
    case 'Prescription Reject':
      return rxType === 2 ? 'Rejected' : 'Approved';
    case 'N/A':
      return 'NA';
  }
}

export class ExamLifecycle {
  /** Events held back by the out-of-order fault, per patient exam, oldest first. */
  private readonly held = new Map<number, { receiver: string; payload: Record<string, unknown> }[]>();
  private readonly recordLinks = new Map<string, { patientExamId: number; expiresAt: number }>();
  /** The next alternative layout `rotate` gives an invite. */
  private rotation = 0;

  constructor(private readonly deps: LifecycleDeps) {}

  reset(): void {
    this.rotation = 0;
    this.held.clear();
    this.recordLinks.clear();
  }

  // ------------------------------------------------------------------------------------------------ test mode

  /** Schedules the test provider for every exam of a test-mode invite whose name carried a keyword. */
  scheduleTestProvider(meeting: Meeting): void {
    const outcome = meeting.test_outcome;
    if (!meeting.test_mode || !outcome) return;
    const { clock, config } = this.deps;
    for (const id of meeting.patient_exam_ids) {
      const record = this.deps.store.patientExam(id);
      if (!record) continue;
      const handle = clock.schedule(
        config.providerDelayMs,
        () => this.runTestProvider(record, outcome),
        `test provider ${record.patient_exam_id}`,
      );
      record.handles.push(handle);
    }
  }

  private async runTestProvider(record: PatientExamRecord, outcome: TestOutcome): Promise<void> {
    if (record.status !== 'pending') return;
    const verdict = testVerdict(outcome, record.rx_type);
    await this.giveVerdict(record, verdict, { providerName: TEST_PROVIDER_NAME });
    if (verdict !== 'Approved' || record.rx_type !== 2) return;
    const { clock, config } = this.deps;
    record.handles.push(
      clock.schedule(
        config.prescriptionDelayMs,
        async () => {
          await this.confirmPrescription(record);
          if (record.fulfilment !== 'partner') return;
          record.handles.push(
            clock.schedule(config.shipmentDelayMs, () => this.ship(record), `ship ${record.patient_exam_id}`),
          );
        },
        `confirm prescription ${record.patient_exam_id}`,
      ),
    );
  }

  // ------------------------------------------------------------------------------------------------ transitions

  /**
   * pending -> Approved | Rejected | Deferred to Medical Director | NA, then event 1. A deferred exam gets its final
   * verdict the same way (the medical director's): Approved, Rejected or NA, with event 1 again.
   */
  async giveVerdict(
    record: PatientExamRecord,
    verdict: Verdict,
    options: { reason?: string; providerName?: string } = {},
  ): Promise<void> {
    const finalOfDeferred =
      record.status === 'Deferred to Medical Director' && verdict !== 'Deferred to Medical Director';
    if (record.status !== 'pending' && !finalOfDeferred) throw new LifecycleError(409, statusMessage(record.status));
    const meeting = this.deps.store.meetingOf(record);
    const clinic = this.deps.store.clinicById(record.clinic_id);
    record.status = verdict;
    record.decided_at = this.deps.clock.now().toISOString();
    record.reason = options.reason ?? DEFAULT_REASONS[verdict];
    if (verdict === 'NA') {
      record.provider_name = null;
      record.exam_url = null;
    } else {
      record.provider_name =
        options.providerName ?? (meeting.test_mode ? TEST_PROVIDER_NAME : (clinic?.providerName ?? null));
      record.exam_url = this.issueRecordLink(record);
      // The provider completed the questionnaire in the call for anything the patient had not answered.
      this.completeAnswersInCall(record);
    }
    const redirect = {
      Approved: meeting.redirects.approve,
      Rejected: meeting.redirects.reject,
      NA: meeting.redirects.na,
      'Deferred to Medical Director': null,
    }[verdict];
    record.redirected_to = redirect;
    this.stopWaitIfDone(meeting);
    await this.emit(record, event1(this.context(record)));
  }

  /** The patient joins the meeting and waits; when the countdown ends, every exam still pending is Missed. */
  startWait(meeting: Meeting): void {
    if (meeting.waiting_since) throw new LifecycleError(409, 'The patient is already waiting for a provider.');
    const pending = meeting.patient_exam_ids.some((id) => this.deps.store.patientExam(id)?.status === 'pending');
    if (!pending) throw new LifecycleError(409, 'No exam of this meeting is pending.');
    meeting.waiting_since = this.deps.clock.now().toISOString();
    meeting.wait_handle = this.deps.clock.schedule(
      this.deps.config.providerWaitMs,
      () => this.expireWait(meeting),
      `provider wait ${meeting.meeting_uuid}`,
    );
  }

  private async expireWait(meeting: Meeting): Promise<void> {
    meeting.wait_handle = undefined;
    for (const id of meeting.patient_exam_ids) {
      const record = this.deps.store.patientExam(id);
      if (!record || record.status !== 'pending') continue;
      record.status = 'Missed';
      record.decided_at = this.deps.clock.now().toISOString();
      record.reason = DEFAULT_REASONS.Missed;
      record.provider_name = null;
      record.exam_url = null;
      record.redirected_to = meeting.redirects.missed;
      for (const handle of record.handles) this.deps.clock.cancel(handle);
      await this.emit(record, event1(this.context(record)));
    }
  }

  /** Approved prescription exam -> prescriptions written and confirmed at the pharmacy, then event 2. */
  async confirmPrescription(record: PatientExamRecord, options: { orderSetId?: string } = {}): Promise<void> {
    if (record.rx_type !== 2) throw new LifecycleError(409, 'Only prescription exams (rx_type 2) get prescriptions.');
    if (record.status !== 'Approved') {
      throw new LifecycleError(409, `Only Approved exams get prescriptions; this exam is ${record.status}.`);
    }
    if (record.rx_status !== null) throw new LifecycleError(409, 'The prescription is already confirmed.');
    const { drugs, prescribedOsId } = this.prescriptionPlan(record, options.orderSetId);
    const createdAt = this.deps.clock.now().toISOString();
    record.prescribed_os_id = prescribedOsId;
    record.prescriptions = drugs.map((drug) => this.writePrescription(record, drug, createdAt));
    record.rx_status = 'Pharmacy Confirmed';
    await this.emit(record, event2(this.context(record), this.issueRecordLink(record)));
  }

  /** Partner pharmacy only: ships confirmed prescriptions (all unshipped, or one), event 3 per prescription. */
  async ship(record: PatientExamRecord, prescriptionId?: number): Promise<void> {
    if (record.fulfilment !== 'partner') {
      throw new LifecycleError(409, 'Only partner pharmacy prescriptions ship; custom pharmacies send no event 3.');
    }
    if (record.rx_status !== 'Pharmacy Confirmed') throw new LifecycleError(409, 'No confirmed prescription to ship.');
    const due = record.prescriptions.filter(
      (p) => p.shipped_at === null && (prescriptionId === undefined || p.prescription_id === prescriptionId),
    );
    if (due.length === 0) {
      throw new LifecycleError(
        prescriptionId === undefined ? 409 : 404,
        prescriptionId === undefined ? 'Every prescription has shipped.' : 'No unshipped prescription with that id.',
      );
    }
    const pharmacyId = record.partner_pharmacy_id ?? 0;
    const location = PARTNER_PHARMACY_LOCATIONS[pharmacyId] ?? 'Austin, TX';
    for (const prescription of due) {
      prescription.shipped_at = this.deps.clock.now().toISOString();
      prescription.tracking_number = `1ZSBX${this.deps.random.hex(12).toUpperCase()}`;
      prescription.order_id = `ORD-${pharmacyId}-${prescription.prescription_id}`;
      await this.emit(record, event3(record, prescription, location));
    }
  }

  /** pending -> cancelled (the invite operation checks the 400 cases before calling this). */
  cancel(record: PatientExamRecord): void {
    record.status = 'cancelled';
    record.cancelled_at = this.deps.clock.now().toISOString();
    for (const handle of record.handles) this.deps.clock.cancel(handle);
    record.handles = [];
    this.stopWaitIfDone(this.deps.store.meetingOf(record));
  }

  // ------------------------------------------------------------------------------------------------ exam records

  /** A link to the consultation PDF that stops working at `expires`. */
  private issueRecordLink(record: PatientExamRecord): string {
    const token = this.deps.random.hex(24);
    const expiresAt = this.deps.clock.nowMs() + this.deps.config.examUrlTtlMs;
    this.recordLinks.set(token, { patientExamId: record.patient_exam_id, expiresAt });
    const expires = encodeURIComponent(new Date(expiresAt).toISOString());
    return `${this.deps.publicUrl()}/records/${token}.pdf?expires=${expires}`;
  }

  /** Looks up an exam_url token: the patient exam, or why the link does not work. */
  resolveRecordLink(token: string): { patientExamId: number } | 'unknown' | 'expired' {
    const link = this.recordLinks.get(token);
    if (!link) return 'unknown';
    if (this.deps.clock.nowMs() > link.expiresAt) return 'expired';
    return { patientExamId: link.patientExamId };
  }

  // ------------------------------------------------------------------------------------------------ internals

  private context(record: PatientExamRecord): EventContext {
    const clinic = this.deps.store.clinicById(record.clinic_id);
    return { record, meeting: this.deps.store.meetingOf(record), clinicName: clinic?.name ?? '' };
  }

  private stopWaitIfDone(meeting: Meeting): void {
    const stillPending = meeting.patient_exam_ids.some((id) => this.deps.store.patientExam(id)?.status === 'pending');
    if (!stillPending && meeting.wait_handle) {
      this.deps.clock.cancel(meeting.wait_handle);
      meeting.wait_handle = undefined;
    }
  }

  private completeAnswersInCall(record: PatientExamRecord): void {
    for (const q of SEED_QUESTIONS[record.exam_id] ?? []) {
      if (record.answers.has(q.no)) continue;
      let answer: string | string[];
      if (q.response_type === 1) answer = 'None';
      else if (q.response_type === 2) answer = q.responses.find((r) => r.input_field === 1)?.response ?? '';
      else answer = [q.responses.find((r) => r.response === 'None')?.response ?? q.responses[0]?.response ?? ''];
      record.answers.set(q.no, { question_id: q.id, no: q.no, question: q.question, answer });
    }
  }

  private prescriptionPlan(
    record: PatientExamRecord,
    orderSetOverride?: string,
  ): { drugs: readonly SeedDrug[]; prescribedOsId: number } {
    if (record.fulfilment === 'partner') {
      const packages = SEED_TREATMENT_PACKAGES.filter(
        (p) => p.exam_id === record.exam_id && p.pharmacy_id === record.partner_pharmacy_id,
      );
      const wanted = orderSetOverride ?? record.order_set_id;
      // Without a preselected package the provider picks the pharmacy's first package for the exam.
      const chosen = (wanted === null ? undefined : packages.find((p) => p.order_set_id === wanted)) ?? packages[0];
      if (orderSetOverride !== undefined && chosen?.order_set_id !== orderSetOverride) {
        throw new LifecycleError(400, `order_set_id ${orderSetOverride} is not a package of this pharmacy and exam.`);
      }
      if (chosen) {
        record.order_set_id = chosen.order_set_id;
        return { drugs: chosen.drugs, prescribedOsId: Number(chosen.order_set_id) };
      }
    }
    const regimen = SEED_REGIMENS[record.exam_id] ?? SEED_REGIMENS[301];
    return { drugs: regimen?.drugs ?? [], prescribedOsId: regimen?.prescribed_os_id ?? 0 };
  }

  private writePrescription(record: PatientExamRecord, drug: SeedDrug, createdAt: string): StoredPrescription {
    const prescriptionId = this.deps.store.allocatePrescriptionId();
    const partner = record.fulfilment === 'partner';
    const pharmacyId = record.partner_pharmacy_id ?? 0;
    const custom = record.custom_pharmacy;
    const pharmacyName = partner
      ? (SEED_PARTNER_PHARMACIES.find((p) => p.pharmacy_id === pharmacyId)?.name ?? 'Partner pharmacy')
      : (custom?.name ?? `Pharmacy NCPDP ${custom?.ncpdpid ?? 'unknown'}`);
    const location = partner
      ? (PARTNER_PHARMACY_LOCATIONS[pharmacyId] ?? null)
      : custom?.city && custom.state
        ? `${custom.city}, ${custom.state}`
        : null;
    const contacts = partner
      ? (PARTNER_PHARMACY_CONTACTS[pharmacyId] ?? [])
      : [{ full_name: null, email: null, phone_number: custom?.phone ?? null, role: 'Pharmacy' }];
    const item = {
      prescription_id: prescriptionId,
      drug_name: drug.drug_name,
      dosage_form_type: drug.dosage_form_type,
      strength: drug.strength,
      size: drug.size,
      quantity: drug.quantity,
      quantity_units: drug.quantity_units,
      directions: drug.directions,
      duration_days: drug.duration_days,
      refill_amount: drug.refill_amount,
      ndc_number: drug.ndc_number,
      gpi_number: drug.gpi_number,
      active_ingredient: drug.active_ingredient,
      inactive_ingredient: drug.inactive_ingredient,
      dispense_number: drug.dispense_number,
      schedule_code: drug.schedule_code,
      pharmacy_name: pharmacyName,
      pharmacy_contacts: contacts.map((c) => ({ ...c })),
      prescription_tracking: [
        {
          rx_number: `RX${prescriptionId}`,
          tracking_number: null,
          ship_carrier: partner ? 'UPS' : null,
          delivery_service: null,
          pharmacy_location: location,
        },
      ],
      created_at: createdAt,
    };
    return {
      prescription_id: prescriptionId,
      drug_name: drug.drug_name,
      item,
      shipped_at: null,
      tracking_number: null,
      order_id: null,
    };
  }

  /** Whether another event will follow `event` for this exam (what the out-of-order fault holds back for). */
  private laterEventExpected(record: PatientExamRecord, event: number): boolean {
    if (event === 1) return record.status === 'Approved' && record.rx_type === 2;
    if (event === 2) return record.fulfilment === 'partner';
    if (event === 3) return record.prescriptions.some((p) => p.shipped_at === null);
    return false;
  }

  private async emit(record: PatientExamRecord, payload: Record<string, unknown>): Promise<void> {
    const event = typeof payload.event === 'number' ? payload.event : 0;
    record.events_emitted.push(event);
    const receiver = this.deps.store.meetingOf(record).webhook_url;
    if (!receiver) return;
    const held = this.held.get(record.patient_exam_id) ?? [];
    if (this.deps.faults().outOfOrderCallbacks && this.laterEventExpected(record, event)) {
      held.push({ receiver, payload });
      this.held.set(record.patient_exam_id, held);
      return;
    }
    this.held.delete(record.patient_exam_id);
    // The newest event first, then what was held back, newest to oldest: 3 before 2 before 1.
    const batch = [{ receiver, payload }, ...held.reverse()];
    for (const item of batch) await this.send(item.receiver, record.patient_exam_id, item.payload);
  }

  /** The layout of an invite's callbacks: its own (control surface), else the faults' setting (`rotate`: fixed at the
   * invite's first callback). */
  layoutOf(meeting: Meeting): CallbackLayout {
    if (meeting.callback_layout) return meeting.callback_layout;
    const setting = this.deps.faults().callbackLayout;
    if (setting !== 'rotate') return setting;
    meeting.callback_layout = ALTERNATIVE_LAYOUTS[this.rotation++ % ALTERNATIVE_LAYOUTS.length]!;
    return meeting.callback_layout;
  }

  /** Sends one event in the invite's layout (the flat prescription layout sends event 2 once per drug). */
  private async send(receiver: string, patientExamId: number, payload: Record<string, unknown>): Promise<void> {
    const record = this.deps.store.patientExam(patientExamId);
    const layout = record ? this.layoutOf(this.deps.store.meetingOf(record)) : 'interface';
    for (const callback of inLayout(payload, layout, this.deps.clock.now().toISOString())) {
      const about = {
        patientExamId,
        layout,
        ...(callback.prescriptionId === undefined ? {} : { prescriptionId: callback.prescriptionId }),
      };
      await this.deps.delivery.send(receiver, about, callback.body);
    }
  }

  /** Sends whatever the out-of-order fault still holds (when that fault is switched off). */
  async flushHeld(): Promise<void> {
    const entries = [...this.held.entries()];
    this.held.clear();
    for (const [patientExamId, held] of entries) {
      for (const item of held.reverse()) await this.send(item.receiver, patientExamId, item.payload);
    }
  }
}
