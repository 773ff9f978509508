/**
 * The control surface under /_sandbox: drive patients that are not in test mode (verdicts, the provider wait,
 * prescriptions, shipments), inspect patient exams and callback deliveries, set faults, move a manual clock, reset.
 * JSON in and out, no api_key: the sandbox is a development tool.
 */
import type { FastifyInstance, FastifyReply } from 'fastify';
import { z } from 'zod';
import type { SandboxContext } from '../context';
import { SandboxFaults } from '../faults';
import { CALLBACK_LAYOUTS, SERVICE_LAYOUTS } from '../layouts';
import { LifecycleError } from '../lifecycle';
import {
  DEMO_API_KEY,
  SEED_CLINICS,
  SEED_EXAMS,
  SEED_PARTNER_PHARMACIES,
  SEED_RETAIL_PHARMACIES,
  SEED_TREATMENT_PACKAGES,
  STATE_WITHOUT_PROVIDER,
} from '../seed';
import { type PatientExamRecord, VERDICTS, type Verdict } from '../store';

const IdParams = z.object({ id: z.coerce.number().int().positive() });

const VerdictBody = z.strictObject({
  status: z.enum(VERDICTS as [Verdict, ...Verdict[]]),
  reason: z.string().min(1).optional(),
  provider_name: z.string().min(1).optional(),
});

const ConfirmBody = z.strictObject({ order_set_id: z.string().min(1).optional() });
const ShipBody = z.strictObject({ prescription_id: z.number().int().positive().optional() });
const LayoutBody = z.strictObject({ layout: z.enum(CALLBACK_LAYOUTS) });
const ServiceLayoutBody = z.strictObject({ layout: z.enum(SERVICE_LAYOUTS) });
const AdvanceBody = z.strictObject({ ms: z.number().int().min(0) });
const FaultsBody = SandboxFaults.extend({ seed: z.number().int().optional() });

const PatientExamQuery = z.object({
  status: z.string().optional(),
  clinic_id: z.coerce.number().int().optional(),
  meeting_uuid: z.string().optional(),
  /** At most this many, the oldest first (the order they were invited in). */
  limit: z.coerce.number().int().min(1).optional(),
});
const DeliveryQuery = z.object({
  patient_exam_id: z.coerce.number().int().optional(),
  event: z.coerce.number().int().optional(),
  receiver: z.string().optional(),
});

class ControlError extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
  }
}

function parse<S extends z.ZodType>(schema: S, value: unknown): z.infer<S> {
  const parsed = schema.safeParse(value ?? {});
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  const path = issue?.path.map(String).join('.') ?? '';
  throw new ControlError(400, `${path === '' ? 'body' : path}: ${issue?.message ?? 'is invalid'}`);
}

export function controlRoutes(ctx: SandboxContext) {
  return function register(app: FastifyInstance, _options: unknown, done: (err?: Error) => void): void {
    app.setErrorHandler((err, _request, reply) => {
      if (err instanceof ControlError || err instanceof LifecycleError) {
        return reply.code(err.code).send({ http_code: err.code, error_message: err.message });
      }
      const status = (err as { statusCode?: number }).statusCode ?? 500;
      const message = status < 500 && err instanceof Error ? err.message : 'Internal sandbox error.';
      return reply.code(status).send({ http_code: status, error_message: message });
    });

    const recordOf = (params: unknown): PatientExamRecord => {
      const { id } = parse(IdParams, params);
      const record = ctx.store.patientExam(id);
      if (!record) throw new ControlError(404, `No patient exam ${id}.`);
      return record;
    };

    app.get('/_sandbox/health', () => ({ ok: true, now: ctx.clock.now().toISOString() }));

    app.get('/_sandbox/seed', () => ({
      demo_api_key: DEMO_API_KEY,
      state_without_provider: STATE_WITHOUT_PROVIDER,
      clinics: SEED_CLINICS.map((c) => ({
        clinic_id: c.clinic_id,
        name: c.name,
        api_key: c.api_key,
        agreements_signed: c.agreementsSigned,
        prescriptive_contract_signed: c.prescriptiveContractSigned,
        provider_states: c.providerStates.length,
      })),
      exams: SEED_EXAMS,
      partner_pharmacies: SEED_PARTNER_PHARMACIES,
      treatment_packages: SEED_TREATMENT_PACKAGES.map(({ drugs, ...p }) => ({
        ...p,
        drugs: drugs.map((d) => d.drug_name),
      })),
      retail_pharmacies: SEED_RETAIL_PHARMACIES,
    }));

    app.get('/_sandbox/patient-exams', (request) => {
      const q = parse(PatientExamQuery, request.query);
      const list = [];
      for (const r of ctx.store.patientExams.values()) {
        if (q.limit !== undefined && list.length >= q.limit) break;
        if (q.status !== undefined && r.status !== q.status) continue;
        if (q.clinic_id !== undefined && r.clinic_id !== q.clinic_id) continue;
        if (q.meeting_uuid !== undefined && r.meeting_uuid !== q.meeting_uuid) continue;
        list.push(r);
      }
      return { patient_exams: list.map((r) => view(ctx, r)) };
    });

    app.get('/_sandbox/patient-exams/:id', (request) => view(ctx, recordOf(request.params)));

    app.post('/_sandbox/patient-exams/:id/verdict', async (request) => {
      const record = recordOf(request.params);
      const body = parse(VerdictBody, request.body);
      await ctx.lifecycle.giveVerdict(record, body.status, {
        ...(body.reason === undefined ? {} : { reason: body.reason }),
        ...(body.provider_name === undefined ? {} : { providerName: body.provider_name }),
      });
      return view(ctx, record);
    });

    app.post('/_sandbox/patient-exams/:id/wait', (request) => {
      const record = recordOf(request.params);
      const meeting = ctx.store.meetingOf(record);
      ctx.lifecycle.startWait(meeting);
      const missedAt = new Date(ctx.clock.nowMs() + ctx.config.providerWaitMs).toISOString();
      return { meeting_uuid: meeting.meeting_uuid, waiting_since: meeting.waiting_since, missed_at: missedAt };
    });

    app.post('/_sandbox/patient-exams/:id/confirm-prescription', async (request) => {
      const record = recordOf(request.params);
      const body = parse(ConfirmBody, request.body);
      await ctx.lifecycle.confirmPrescription(
        record,
        body.order_set_id === undefined ? {} : { orderSetId: body.order_set_id },
      );
      return view(ctx, record);
    });

    app.post('/_sandbox/patient-exams/:id/ship', async (request) => {
      const record = recordOf(request.params);
      const body = parse(ShipBody, request.body);
      await ctx.lifecycle.ship(record, body.prescription_id);
      return view(ctx, record);
    });

    // The layout of every later callback of this patient exam's invite (the whole meeting), overriding the faults'.
    app.post('/_sandbox/patient-exams/:id/callback-layout', (request) => {
      const record = recordOf(request.params);
      const body = parse(LayoutBody, request.body);
      const meeting = ctx.store.meetingOf(record);
      meeting.callback_layout = body.layout;
      return { meeting_uuid: meeting.meeting_uuid, callback_layout: meeting.callback_layout };
    });

    // The layout the operations on this patient exam's invite (the whole meeting) answer in, overriding the faults'.
    app.post('/_sandbox/patient-exams/:id/service-layout', (request) => {
      const record = recordOf(request.params);
      const body = parse(ServiceLayoutBody, request.body);
      const meeting = ctx.store.meetingOf(record);
      meeting.service_layout = body.layout;
      return { meeting_uuid: meeting.meeting_uuid, service_layout: meeting.service_layout };
    });

    app.get('/_sandbox/deliveries', (request) => {
      const q = parse(DeliveryQuery, request.query);
      const deliveries = ctx.store.deliveries.filter(
        (d) =>
          (q.patient_exam_id === undefined || d.patient_exam_id === q.patient_exam_id) &&
          (q.event === undefined || d.event === q.event) &&
          (q.receiver === undefined || d.receiver === q.receiver),
      );
      return { deliveries };
    });

    app.get('/_sandbox/faults', () => ({ faults: ctx.faults.get(), injected: ctx.faults.injected() }));

    app.post('/_sandbox/faults', async (request) => {
      const { seed, ...faults } = parse(FaultsBody, request.body);
      const before = ctx.faults.get();
      const now = ctx.faults.set(faults);
      if (seed !== undefined) ctx.random.reseed(seed);
      if (before.outOfOrderCallbacks && !now.outOfOrderCallbacks) await ctx.lifecycle.flushHeld();
      return { faults: now };
    });

    app.get('/_sandbox/clock', () => ({
      mode: ctx.clock.mode,
      now: ctx.clock.now().toISOString(),
      scheduled: ctx.clock.pending(),
    }));

    app.post('/_sandbox/clock/advance', async (request, reply: FastifyReply) => {
      const { ms } = parse(AdvanceBody, request.body);
      if (ctx.clock.mode !== 'manual') {
        return reply
          .code(409)
          .send({ http_code: 409, error_message: 'The clock runs in real time (SANDBOX_CLOCK=manual to drive it).' });
      }
      await ctx.clock.advance(ms);
      return { mode: ctx.clock.mode, now: ctx.clock.now().toISOString(), scheduled: ctx.clock.pending() };
    });

    app.post('/_sandbox/reset', () => {
      ctx.clock.clear();
      ctx.store.reset();
      ctx.lifecycle.reset();
      ctx.faults.reset();
      ctx.random.reseed(ctx.config.seed);
      return { ok: true };
    });
    done();
  };
}

/** A patient exam as the control surface shows it. */
export function view(ctx: SandboxContext, r: PatientExamRecord): Record<string, unknown> {
  const meeting = ctx.store.meetingOf(r);
  return {
    patient_exam_id: r.patient_exam_id,
    exam_id: r.exam_id,
    exam_title: r.exam_title,
    rx_type: r.rx_type,
    clinic_id: r.clinic_id,
    meeting_uuid: r.meeting_uuid,
    meeting_url: meeting.meeting_url,
    created_at: r.created_at,
    test_mode: meeting.test_mode,
    test_outcome: meeting.test_outcome,
    status: r.status,
    rx_status: r.rx_status,
    fulfilment: r.fulfilment,
    partner_pharmacy_id: r.partner_pharmacy_id,
    order_set_id: r.order_set_id,
    provider_pos_selection: r.provider_pos_selection,
    custom_pharmacy: r.custom_pharmacy,
    provider_name: r.provider_name,
    reason: r.reason,
    exam_url: r.exam_url,
    decided_at: r.decided_at,
    cancelled_at: r.cancelled_at,
    waiting_since: meeting.waiting_since,
    redirected_to: r.redirected_to,
    webhook_url: meeting.webhook_url,
    invite_deliveries: r.invite_deliveries,
    answers: [...r.answers.values()].sort((a, b) => a.no - b.no),
    questionnaire_skipped: r.questionnaire_skipped,
    attachments: r.attachments,
    prescribed_os_id: r.prescribed_os_id,
    prescriptions: r.prescriptions.map((p) => ({
      prescription_id: p.prescription_id,
      drug_name: p.drug_name,
      shipped_at: p.shipped_at,
      tracking_number: p.tracking_number,
      order_id: p.order_id,
    })),
    events_emitted: r.events_emitted,
  };
}
