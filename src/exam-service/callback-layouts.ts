// Callbacks as the service has been seen to send them, beside the interface document's layouts (see
// docs/callback-layouts.md for each layout and where public receivers were written for it). Only callbacks are read
// this leniently: what we send to the service keeps the strict contract of schemas.ts.
import { z } from 'zod';
import { EXAM_STATUSES, type ExamStatus } from './schemas';

/** Ids arrive as integers or digit strings, whatever the layout. */
const LooseId = z.union([
  z.int().nonnegative(),
  z
    .string()
    .trim()
    .regex(/^\d+$/)
    .refine((s) => Number.isSafeInteger(Number(s))),
]);
const Text = z.string().trim().min(1);
/** Descriptive values some layouts send as numbers (quantity, dispense number). */
const TextOrNumber = z.union([z.string(), z.number()]).transform(String);

/** Reads an optional descriptive field: its value when it has the expected type, else null (never a refusal). */
function optionalText(value: unknown): string | null {
  if (typeof value === 'string') return value;
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  return null;
}

export function readId(value: unknown): number | undefined {
  const r = LooseId.safeParse(value);
  return r.success ? Number(r.data) : undefined;
}

/** The body's event number: an integer or a string of digits; undefined when there is none. */
export function readEventNumber(value: unknown): number | undefined {
  if (typeof value === 'number') return Number.isSafeInteger(value) ? value : undefined;
  if (typeof value === 'string' && /^\s*-?\d{1,9}\s*$/.test(value)) return Number(value);
  return undefined;
}

// ---------------------------------------------------------------------------------------------------------------
// Verdicts

/** Every spelling of a verdict public receivers were written for, lower case, spaces collapsed. */
const VERDICT_SPELLINGS: Record<string, ExamStatus> = {
  approved: 'Approved',
  approve: 'Approved',
  rejected: 'Rejected',
  reject: 'Rejected',
  'deferred to medical director': 'Deferred to Medical Director',
  deferred: 'Deferred to Medical Director',
  na: 'NA',
  'n/a': 'NA',
  'not applicable': 'NA',
  'not available': 'NA',
  missed: 'Missed',
};

/** One of the five verdicts for any spelling seen in the wild, or null for anything else. */
export function normalizeVerdict(value: unknown): ExamStatus | null {
  if (typeof value !== 'string') return null;
  if ((EXAM_STATUSES as readonly string[]).includes(value)) return value as ExamStatus;
  return (
    VERDICT_SPELLINGS[
      value
        .trim()
        .toLowerCase()
        .replace(/[\s_]+/g, ' ')
    ] ?? null
  );
}

// ---------------------------------------------------------------------------------------------------------------
// Alternative layouts, read field by field

/** A drug of event 2: the interface's item, or the flat layout's `drug_details` beside `prescription_id`. */
export interface LooseDrug {
  prescriptionId: number;
  drugName: string;
  strength: string | null;
  quantity: string | null;
  pharmacyName: string | null;
  /** The rx number of its prescription_tracking, when the item carries one. */
  rxNumber?: string;
}

/** The first rx number of an item's (or a shipment's) prescription_tracking. */
function trackingRxNumber(value: unknown): string | undefined {
  if (!Array.isArray(value)) return undefined;
  for (const t of value) {
    const rx = t !== null && typeof t === 'object' ? Text.safeParse((t as Record<string, unknown>).rx_number) : null;
    if (rx?.success) return rx.data;
  }
  return undefined;
}

const DrugDetails = z.looseObject({ drug_name: Text, strength: z.unknown().optional() });

function readDrug(item: Record<string, unknown>): LooseDrug | undefined {
  const prescriptionId = readId(item.prescription_id);
  const details = DrugDetails.safeParse(item.drug_details);
  const drugName = Text.safeParse(item.drug_name).data ?? (details.success ? details.data.drug_name : undefined);
  if (prescriptionId === undefined || drugName === undefined) return undefined;
  const rxNumber = trackingRxNumber(item.prescription_tracking);
  return {
    prescriptionId,
    drugName,
    strength: optionalText(item.strength) ?? (details.success ? optionalText(details.data.strength) : null),
    quantity: TextOrNumber.safeParse(item.quantity).data ?? null,
    pharmacyName: optionalText(item.pharmacy_name),
    ...(rxNumber ? { rxNumber } : {}),
  };
}

export interface LooseShipment {
  trackingNumber: string;
  deliveryService: string | null;
  pharmacyLocation: string | null;
  orderId: string | null;
  /** The pharmacy's rx number (a tracking array's entry): the journey pairs it with event 2's prescriptions. */
  rxNumber?: string;
}

function readShipment(entry: unknown, orderId: string | null): LooseShipment | undefined {
  if (entry === null || typeof entry !== 'object') return undefined;
  const e = entry as Record<string, unknown>;
  const trackingNumber = Text.safeParse(e.tracking_number).data;
  if (trackingNumber === undefined) return undefined;
  const rxNumber = Text.safeParse(e.rx_number).data;
  return {
    trackingNumber,
    // The tracking array names the carrier apart from the speed; either tells the clinic how it travels.
    deliveryService: optionalText(e.delivery_service) ?? optionalText(e.ship_carrier),
    pharmacyLocation: optionalText(e.pharmacy_location),
    orderId: optionalText(e.order_id) ?? orderId,
    ...(rxNumber ? { rxNumber } : {}),
  };
}

export type LooseEvent =
  | {
      event: 1;
      patientExamId: number;
      examId: number | null;
      examStatus: ExamStatus;
      rxStatus: string | null;
      examUrl: string | null;
      providerName: string | null;
      reason: string | null;
      layout: string[];
    }
  | {
      event: 2;
      patientExamId: number;
      examId: number | null;
      rxStatus: string | null;
      prescribedOrderSetId: number | null;
      drugs: LooseDrug[];
      /** One drug per callback (the flat layout). */
      partial: boolean;
      layout: string[];
    }
  | {
      event: 3;
      patientExamId?: number;
      prescriptionId?: number;
      shipments: LooseShipment[];
      layout: string[];
    };

export type LooseReading = { ok: true; event: LooseEvent } | { ok: false; patientExamId?: number; reason: string };

/**
 * Reads a callback body (already JSON) whose interface layout did not parse, by what public receivers read: the
 * verdict in any known spelling, event 2 with one drug at the top level, event 3 as a tracking array without ids.
 * Says why when even that fails (field names only, never values).
 */
export function readLooseCallback(body: Record<string, unknown>, event: number): LooseReading {
  const patientExamId = readId(body.patient_exam_id);
  const fail = (reason: string): LooseReading => ({
    ok: false,
    reason,
    ...(patientExamId !== undefined ? { patientExamId } : {}),
  });
  switch (event) {
    case 1: {
      if (patientExamId === undefined) return fail('event 1 without a readable patient_exam_id');
      const examStatus = normalizeVerdict(body.exam_status);
      if (examStatus === null) return fail('exam_status is not one of the five verdicts in any known spelling');
      return {
        ok: true,
        event: {
          event: 1,
          patientExamId,
          examId: readId(body.exam_id) ?? null,
          examStatus,
          rxStatus: optionalText(body.rx_status),
          examUrl: optionalText(body.exam_url),
          providerName: optionalText(body.provider_name),
          reason: optionalText(body.reason),
          layout: [body.exam_status === examStatus ? 'loose-fields' : 'verdict-spelling'],
        },
      };
    }
    case 2: {
      if (patientExamId === undefined) return fail('event 2 without a readable patient_exam_id');
      const common = {
        event: 2 as const,
        patientExamId,
        examId: readId(body.exam_id) ?? null,
        rxStatus: optionalText(body.rx_status),
        prescribedOrderSetId: readId(body.prescribed_os_id) || null,
      };
      if (Array.isArray(body.prescription)) {
        const drugs = body.prescription.map((item: unknown) =>
          item !== null && typeof item === 'object' ? readDrug(item as Record<string, unknown>) : undefined,
        );
        if (drugs.length === 0 || drugs.some((d) => d === undefined)) {
          return fail('event 2 prescription entries without a readable prescription_id and drug_name');
        }
        return {
          ok: true,
          event: { ...common, drugs: drugs as LooseDrug[], partial: false, layout: ['loose-fields'] },
        };
      }
      const drug = readDrug(body);
      if (!drug) return fail('event 2 with neither a prescription array nor a top-level prescription_id and drug');
      return { ok: true, event: { ...common, drugs: [drug], partial: true, layout: ['flat-prescription'] } };
    }
    case 3: {
      const orderId = optionalText(body.order_id);
      const prescriptionId = readId(body.prescription_id);
      const ids = {
        ...(patientExamId !== undefined ? { patientExamId } : {}),
        ...(prescriptionId !== undefined ? { prescriptionId } : {}),
      };
      if (Array.isArray(body.prescription_tracking)) {
        const shipments = body.prescription_tracking.map((e: unknown) => readShipment(e, orderId));
        if (shipments.length === 0 || shipments.some((s) => s === undefined)) {
          return fail('event 3 prescription_tracking entries without a tracking_number');
        }
        if (prescriptionId !== undefined && shipments.length > 1) {
          return fail('event 3 names one prescription_id but carries several shipments');
        }
        return {
          ok: true,
          event: { event: 3, ...ids, shipments: shipments as LooseShipment[], layout: ['tracking-array'] },
        };
      }
      const shipment = readShipment(body, orderId);
      if (!shipment) return fail('event 3 without a tracking_number');
      return {
        ok: true,
        event: {
          event: 3,
          ...ids,
          shipments: [shipment],
          layout: [patientExamId === undefined ? 'no-patient-exam-id' : 'loose-fields'],
        },
      };
    }
    default:
      return fail(`event ${event} is none of the interface's events 1, 2 and 3`);
  }
}
