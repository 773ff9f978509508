// From a callback body, in whichever layout the service sent it, to what the journey acts on. The raw payload travels
// beside it for audit.
import { readEventNumber, readLooseCallback, type LooseEvent } from '../exam-service/callback-layouts';
import { parseCallback, type NormalizedCallback } from '../exam-service/schemas';
import type { JourneyCallback, UnreadCallback } from '../workflows/journey-state';

const str = (v: string | number | null | undefined): string | null =>
  v === undefined || v === null ? null : String(v);

export function toJourneyCallback(cb: NormalizedCallback): JourneyCallback {
  switch (cb.event) {
    case 1:
      return {
        event: 1,
        patientExamId: cb.patientExamId,
        examId: cb.examId,
        examStatus: cb.examStatus,
        rxStatus: cb.payload.rx_status ?? null,
        examUrl: cb.payload.exam_url ?? null,
        providerName: cb.payload.provider_name ?? null,
        reason: cb.payload.reason ?? null,
      };
    case 2:
      return {
        event: 2,
        patientExamId: cb.patientExamId,
        examId: cb.examId,
        rxStatus: cb.payload.rx_status ?? null,
        prescribedOrderSetId:
          cb.payload.prescribed_os_id === undefined ? null : Number(cb.payload.prescribed_os_id) || null,
        prescriptions: cb.payload.prescription.map((rx) => {
          const rxNumber = rx.prescription_tracking?.find((t) => t.rx_number)?.rx_number;
          return {
            prescriptionId: Number(rx.prescription_id),
            drugName: rx.drug_name,
            strength: rx.strength ?? null,
            quantity: rx.quantity ?? null,
            pharmacyName: rx.pharmacy_name ?? null,
            ...(rxNumber ? { rxNumber } : {}),
          };
        }),
      };
    case 3:
      return {
        event: 3,
        patientExamId: cb.patientExamId,
        prescriptionId: cb.prescriptionId,
        trackingNumber: cb.payload.tracking_number,
        deliveryService: cb.payload.delivery_service ?? null,
        pharmacyLocation: cb.payload.pharmacy_location ?? null,
        orderId: str(cb.payload.order_id),
      };
  }
}

export type CallbackReading =
  | {
      ok: true;
      /** The body's event number. */
      event: number;
      /** What the journey gets: one of the interface's events, or `unread` (held for a person, with the reason). */
      callback: JourneyCallback | UnreadCallback;
      /** The parsed JSON body, for the audit trail. */
      raw: unknown;
    }
  | { ok: false; issues: string[] };

/**
 * Reads a webhook body in every layout the service has been seen to send (docs/callback-layouts.md). Any JSON object
 * with an event number is a callback: read into the interface's event, or `unread` with why. Only a body that is not
 * JSON, or JSON without an event number, is refused.
 */
export function readCallback(rawBody: string): CallbackReading {
  let value: unknown;
  try {
    value = JSON.parse(rawBody) as unknown;
  } catch {
    return { ok: false, issues: ['(body): is not JSON'] };
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    return { ok: false, issues: ['(body): is not a JSON object'] };
  }
  const body = value as Record<string, unknown>;
  const event = readEventNumber(body.event);
  if (event === undefined) return { ok: false, issues: ['event: is not an event number'] };
  const stringEvent = typeof body.event === 'string';
  const strict = parseCallback(stringEvent ? { ...body, event } : body);
  if (strict.ok) {
    const callback = toJourneyCallback(strict.event);
    return { ok: true, event, raw: value, callback: stringEvent ? { ...callback, layout: 'string-event' } : callback };
  }
  const loose = readLooseCallback(body, event);
  if (!loose.ok) {
    const unread: UnreadCallback = {
      event,
      unread: true,
      reason: loose.reason,
      ...(loose.patientExamId !== undefined ? { patientExamId: loose.patientExamId } : {}),
    };
    return { ok: true, event, raw: value, callback: unread };
  }
  const layout = [...(stringEvent ? ['string-event'] : []), ...loose.event.layout].join('+');
  return { ok: true, event, raw: value, callback: fromLoose(loose.event, layout) };
}

function fromLoose(e: LooseEvent, layout: string): JourneyCallback {
  switch (e.event) {
    case 1:
      return {
        event: 1,
        patientExamId: e.patientExamId,
        // The journey does not act on exam_id; 0 stands for a layout without it.
        examId: e.examId ?? 0,
        examStatus: e.examStatus,
        rxStatus: e.rxStatus,
        examUrl: e.examUrl,
        providerName: e.providerName,
        reason: e.reason,
        layout,
      };
    case 2:
      return {
        event: 2,
        patientExamId: e.patientExamId,
        examId: e.examId ?? 0,
        rxStatus: e.rxStatus,
        prescribedOrderSetId: e.prescribedOrderSetId,
        prescriptions: e.drugs,
        ...(e.partial ? { partial: true } : {}),
        layout,
      };
    case 3: {
      const [first, ...more] = e.shipments;
      return {
        event: 3,
        ...(e.patientExamId !== undefined ? { patientExamId: e.patientExamId } : {}),
        ...(e.prescriptionId !== undefined ? { prescriptionId: e.prescriptionId } : {}),
        ...first!,
        ...(more.length > 0 ? { moreTracking: more } : {}),
        layout,
      };
    }
  }
}
