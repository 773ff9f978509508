// Every side effect of the journey. The workflow sees only the JourneyActivities interface; the api_key stays here,
// looked up by clinic id, so it never enters a workflow history.
import { ApplicationFailure, Context, log, metricMeter, type Info } from '@temporalio/activity';
import type { AuditEvent } from '../audit/types';
import type { ExamServiceApi } from '../exam-service/client';
import { isExamServiceError } from '../exam-service/errors';
import { isPatientBoundQuestions, type ExamInviteInput } from '../exam-service/schemas';
import type { JourneyInput } from '../contract/journey-request';
import { sendNotification, type NotificationSender } from './notify';
import {
  FailureType,
  INVITE_SENDING,
  type CreateInviteInput,
  type CreateInviteResult,
  type FailureFacts,
  type JourneyActivities,
} from '../contract/activity-contract';
import { FAILURES } from '../contract/failures';
import { catalogEntry, ExamCatalogCache } from './exam-catalog';
import { PatientExamHolderCheck, workerJourneys, type OtherJourneys } from './patient-exam-holders';

export { holdersQuery, unnamedHoldingsQuery, type OtherJourneys } from './patient-exam-holders';

/** Reads attachment bytes from the claim-check store. */
export interface AttachmentReader {
  get(ref: string): Promise<{ bytes: Buffer } | undefined>;
  /** Removes an attachment; an unknown ref is no error. */
  delete(ref: string): Promise<void>;
}

export interface ActivityDeps {
  /** The exam-service client acting for a clinic; undefined for a clinic we do not know. */
  examServiceFor(clinicId: string): ExamServiceApi | undefined;
  /** The callback address given to the service for a journey (it carries the journey's webhook token). */
  webhookUrlFor(journeyId: string): string;
  attachments: AttachmentReader;
  /** The clinic's Standard Webhooks secret; notifications are not sent for a clinic without one. */
  notificationSecretFor(clinicId: string): string | undefined;
  catalogTtlMs: number;
  /**
   * Records an activity's heartbeat details with Temporal, resolving once the server has them (src/temporal.ts
   * `heartbeatRecorder`): `sendInvite` records INVITE_SENDING this way before it sends. Given the activity's Info:
   * its details are sealed for the journey's patient like the journey's other payloads.
   */
  recordHeartbeat(
    activity: Pick<Info, 'taskToken' | 'activityId' | 'isLocal' | 'workflowExecution'>,
    details: unknown[],
  ): Promise<void>;
  sendNotification?: NotificationSender;
  now?: () => number;
  /**
   * The ids of the workflows a Temporal visibility query matches, at most `max` (the worker's connection). Without it,
   * a journey in doubt cannot prove a patient exam its own, and holds the callback for a person.
   */
  listWorkflowIds?(query: string, max: number): Promise<string[]>;
  /** Journeys that hold patient exams without naming them, asked or read (default: the worker's own client). */
  journeys?: OtherJourneys;
  /** The worker's audit trail (AUDIT_FILE): retention's deletions. */
  audit?: (event: AuditEvent) => unknown;
}

/** Failures by the engine's own classification, beside the SDK's by activity type (the worker's metrics page). */
function countFailure(kind: string): void {
  try {
    const { activityType, taskQueue } = Context.current().info;
    metricMeter
      .createCounter('journey_activity_failures', 'failures', 'Activity failures by kind (not sent, ambiguous, ...)')
      .add(1, { kind, activity_type: activityType, task_queue: taskQueue });
  } catch {
    // Not inside an activity (a unit test calling the function directly): nothing to count.
  }
}

function fail(kind: keyof typeof FailureType, facts: FailureFacts, message: string, nonRetryable: boolean): never {
  countFailure(FailureType[kind]);
  throw ApplicationFailure.create({ type: FailureType[kind], message, nonRetryable, details: [facts] });
}

/** Turns the client's classified error into a failure the workflow decides on. No PHI, no key in it. */
function rethrow(err: unknown, operation: string, options: { ambiguousOnServerError?: boolean } = {}): never {
  if (!isExamServiceError(err)) throw err;
  let kind = err.kind;
  // A 500 from a non-idempotent call may have done its work: for the invite that is as good as ambiguous.
  if (kind === 'server' && options.ambiguousOnServerError) kind = 'ambiguous';
  const facts: FailureFacts = {
    kind,
    operation,
    ...(err.httpStatus !== undefined ? { httpStatus: err.httpStatus } : {}),
    ...(err.field !== undefined ? { field: err.field } : {}),
    ...(err.setupCode !== undefined ? { setupCode: err.setupCode } : {}),
    ...(err.finalStatus !== undefined ? { finalStatus: err.finalStatus } : {}),
  };
  fail(kind, facts, err.message, !FAILURES[kind].retried);
}

export function toInviteInput(input: JourneyInput, examIds: number[], webhookUrl: string): ExamInviteInput {
  const p = input.patient;
  const s = input.scenario;
  const home = input.homeAddress;
  const ship = input.shippingAddress;
  const r = input.redirects;
  const invite: ExamInviteInput = {
    exams: examIds,
    first_name: p.firstName,
    last_name: p.lastName,
    email: p.email,
    dob: p.dob,
    phone_number: p.phoneNumber,
    // Checked again by the client's schema before anything is sent.
    tele_state: p.teleState,
    webhook_url: webhookUrl,
    ...(p.gender !== undefined ? { gender: p.gender } : {}),
    ...(p.dmvLicenseNumber ? { dmv_license_number: p.dmvLicenseNumber } : {}),
    ...(input.additionalData !== undefined ? { additional_data: input.additionalData } : {}),
    ...(r?.approve ? { redirect_approve: r.approve } : {}),
    ...(r?.reject ? { redirect_reject: r.reject } : {}),
    ...(r?.na ? { redirect_na: r.na } : {}),
    ...(r?.missed ? { redirect_missed: r.missed } : {}),
    ...(home
      ? {
          address_line_1: home.line1,
          ...(home.line2 ? { address_line_2: home.line2 } : {}),
          city: home.city,
          state: home.state,
          zip_code: home.zipCode,
        }
      : p.teleState === 'TE'
        ? { state: 'TE' as const }
        : {}),
    ...(ship
      ? {
          shipping_address_line_1: ship.line1,
          ...(ship.line2 ? { shipping_address_line_2: ship.line2 } : {}),
          shipping_city: ship.city,
          shipping_state: ship.state,
          shipping_zip_code: ship.zipCode,
        }
      : {}),
  };
  if (s.type === 'partner_pharmacy') {
    Object.assign(invite, {
      custom_pharmacy: 2,
      pharmacy_id: s.pharmacyId,
      ...(s.orderSetId ? { order_set_id: s.orderSetId } : {}),
      // Both when the clinic gave both: they name the same package, and live integrations select by exam_pos_id.
      ...(s.examPosId !== undefined ? { exam_pos_id: s.examPosId } : {}),
      ...(s.providerPosSelection !== undefined ? { provider_pos_selection: s.providerPosSelection } : {}),
    });
  } else if (s.type === 'urgent_care' || s.type === 'custom_pharmacy') {
    const ph = s.pharmacy;
    Object.assign(invite, {
      custom_pharmacy: 1,
      ncpdpid: ph.ncpdpid,
      ...(ph.name ? { pharmacy_name: ph.name } : {}),
      ...(ph.addressLine1 ? { pharmacy_address_line_1: ph.addressLine1 } : {}),
      ...(ph.addressLine2 ? { pharmacy_address_line_2: ph.addressLine2 } : {}),
      ...(ph.city ? { pharmacy_city: ph.city } : {}),
      ...(ph.state ? { pharmacy_state: ph.state } : {}),
      ...(ph.zipCode ? { pharmacy_zip_code: ph.zipCode } : {}),
      ...(ph.phone ? { pharmacy_phone: ph.phone } : {}),
      ...(ph.type ? { pharmacy_type: ph.type } : {}),
      ...(s.patientChoice !== undefined ? { custom_pharmacy_patient_choice: s.patientChoice } : {}),
      ...(s.billing
        ? s.billing.billedTo === 'clinic'
          ? { custom_pharmacy_patient_billing: 1, custom_pharmacy_clinic_billing: s.billing.clinicBillingId }
          : { custom_pharmacy_patient_billing: 2 }
        : {}),
      ...(s.deliveryMethod ? { custom_pharmacy_delivery_method: s.deliveryMethod === 'pickup' ? 1 : 2 } : {}),
      ...(s.skipConfirmation !== undefined ? { skip_pharmacy_confirmation: s.skipConfirmation ? 2 : 1 } : {}),
    });
  }
  return invite;
}

export function createActivities(deps: ActivityDeps): JourneyActivities {
  const now = deps.now ?? Date.now;
  const catalogs = new ExamCatalogCache(deps.catalogTtlMs, now);
  const holders = new PatientExamHolderCheck(deps.listWorkflowIds?.bind(deps), deps.journeys ?? workerJourneys());

  const clientFor = (clinicId: string, operation: string): ExamServiceApi => {
    const client = deps.examServiceFor(clinicId);
    if (!client) {
      fail(
        'unauthorized',
        { kind: 'unauthorized', operation },
        `no exam-service credentials for clinic ${clinicId}`,
        true,
      );
    }
    return client;
  };

  async function invite({ input, examIds }: CreateInviteInput): Promise<CreateInviteResult> {
    const client = clientFor(input.clinicId, 'exam_invite');
    try {
      const r = await client.examInvite(toInviteInput(input, examIds, deps.webhookUrlFor(input.journeyId)));
      log.info('invite created', { journeyId: input.journeyId, patientExams: r.patient_exams.length });
      return {
        meetingUuid: r.meeting_uuid,
        meetingUrl: r.meeting_url,
        patientExams: r.patient_exams.map((pe) => ({
          patientExamId: pe.patient_exam_id,
          examId: pe.exam_id,
          examTitle: pe.exam_title,
        })),
      };
    } catch (err) {
      rethrow(err, 'exam_invite', { ambiguousOnServerError: true });
    }
  }

  return {
    async getExamCatalog(clinicId) {
      try {
        const exams = await catalogs.exams(clinicId, () => clientFor(clinicId, 'exam_list').examList());
        return exams.map(catalogEntry);
      } catch (err) {
        rethrow(err, 'exam_list');
      }
    },

    createInvite: invite,

    async sendInvite(req) {
      try {
        await deps.recordHeartbeat(Context.current().info, [INVITE_SENDING]);
      } catch {
        // Nothing went out: the workflow sends it again (the error itself may name the server, nothing more).
        fail(
          'not_sent',
          { kind: 'not_sent', operation: 'exam_invite' },
          'exam service exam_invite: not_sent (Temporal did not record that the invite was about to be sent)',
          true,
        );
      }
      return invite(req);
    },

    async uploadAttachment({ clinicId, patientExamId, attachment }) {
      const stored = await deps.attachments.get(attachment.ref);
      if (!stored) {
        fail(
          'attachment_missing',
          { kind: 'attachment_missing', operation: 'exam_upload_attachment' },
          `attachment ${attachment.ref} is not in the attachment store`,
          true,
        );
      }
      try {
        const r = await clientFor(clinicId, 'exam_upload_attachment').uploadAttachment({
          patient_exam_id: patientExamId,
          kind: attachment.kind,
          file_name: attachment.fileName,
          content_type: attachment.contentType,
          content_base64: stored.bytes.toString('base64'),
        });
        return { attachmentId: r.attachment_id ?? null };
      } catch (err) {
        rethrow(err, 'exam_upload_attachment');
      }
    },

    findPatientExamHolders: ({ patientExamId, workflowId }) => holders.find(patientExamId, workflowId),

    async deleteAttachments({ journeyId, refs }) {
      // On the record before anything is deleted: a trail that cannot be written fails the activity (Temporal retries
      // it) and deletes nothing; a retry after a deletion cut short records it again and finishes it.
      await deps.audit?.({
        action: 'attachments.expire',
        subject: 'retention',
        roles: [],
        outcome: 'ok',
        details: { journeyId, attachments: refs.length },
      });
      for (const ref of refs) await deps.attachments.delete(ref);
      log.info('attachments deleted after the journey ended', { journeyId, count: refs.length });
      return { deleted: refs.length };
    },

    async submitAnswers({ clinicId, meetingUuid, patientExamId, answers }) {
      const client = clientFor(clinicId, 'exam_submit_answers');
      try {
        const q = await client.examQuestions({ meeting_uuid: meetingUuid, patient_exam_id: patientExamId });
        const questions = isPatientBoundQuestions(q) ? q.questions : [];
        const filled = answers.map((a, i) => {
          const match = questions.find((x, pos) => (x.no ?? pos + 1) === a.no);
          if (!match) {
            fail(
              'validation',
              { kind: 'validation', operation: 'exam_submit_answers', field: `answers.${i}.no` },
              `question no ${a.no} is not one of the exam's questions`,
              true,
            );
          }
          return { no: a.no, question: a.question ?? match.question, answer: a.answer };
        });
        const r = await client.submitAnswers({ patient_exam_id: patientExamId, answers: filled });
        return { answered: typeof r.answered === 'number' ? r.answered : filled.length };
      } catch (err) {
        rethrow(err, 'exam_submit_answers');
      }
    },

    async resendInvite({ clinicId, patientExamId, meetingUuid }) {
      try {
        const r = await clientFor(clinicId, 'exam_invite_resend').resendInvite({
          patient_exam_id: patientExamId,
          ...(meetingUuid ? { meeting_uuid: meetingUuid } : {}),
        });
        return { deliveries: typeof r.deliveries === 'number' ? r.deliveries : null };
      } catch (err) {
        rethrow(err, 'exam_invite_resend');
      }
    },

    async cancelInvite({ clinicId, patientExamId }) {
      try {
        const r = await clientFor(clinicId, 'exam_invite_cancel').cancelInvite({ patient_exam_id: patientExamId });
        if (r.alreadyCancelled) return { outcome: 'already_cancelled' };
        return { outcome: 'cancelled', cancelledAt: r.cancelled_at };
      } catch (err) {
        if (isExamServiceError(err) && err.kind === 'already_final' && err.finalStatus) {
          return { outcome: 'already_final', finalStatus: err.finalStatus };
        }
        rethrow(err, 'exam_invite_cancel');
      }
    },

    async notifyClinic({ url, notification }) {
      const secret = deps.notificationSecretFor(notification.clinicId);
      if (!secret) {
        log.warn('no notification secret for clinic; notification skipped', { clinicId: notification.clinicId });
        return { status: 0 };
      }
      const result = await (deps.sendNotification ?? sendNotification)(url, secret, notification);
      if (result.status >= 200 && result.status < 300) return { status: result.status };
      // 4xx other than 408/429 will not get better by retrying.
      const permanent = result.status >= 400 && result.status < 500 && result.status !== 408 && result.status !== 429;
      fail(
        permanent ? 'notification_rejected' : 'server',
        { kind: permanent ? 'notification_rejected' : 'server', operation: 'notify_clinic', httpStatus: result.status },
        `the clinic's notification endpoint answered HTTP ${result.status}`,
        permanent,
      );
    },
  };
}
