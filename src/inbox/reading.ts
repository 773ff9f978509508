// From a callback body, in whichever layout the service sent it, to what the journey acts on. The raw payload travels
// beside it for audit.
import { hash } from 'node:crypto';
import { readEventNumber, readLooseCallback, type LooseEvent } from '../exam-service/callback-layouts';
import { parseCallback, type NormalizedCallback } from '../exam-service/schemas';
import { HELD_BODY_MAX_BYTES, type CallbackSignal } from '../contract/definitions';
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

/** A callback is four levels deep at most; a body nested deeper is refused before it is parsed. */
export const CALLBACK_MAX_DEPTH = 32;

/**
 * Whether JSON text opens more than `max` arrays and objects inside each other, found in one pass over the text
 * (strings skipped) before any parse: a body of a million brackets costs a scan, not a parse and a stack overflow in
 * whatever writes it again.
 */
export function nestingOver(text: string, max: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c /* \\ */) i++;
      else if (c === 0x22 /* " */) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x7b /* { */ || c === 0x5b /* [ */) {
      if (++depth > max) return true;
    } else if (c === 0x7d /* } */ || c === 0x5d /* ] */) depth--;
  }
  return false;
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
  const depth = nestingOver(rawBody, CALLBACK_MAX_DEPTH);
  if (depth) return { ok: false, issues: [`(body): is nested deeper than ${CALLBACK_MAX_DEPTH} levels`] };
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
    const callback = withPatient(toJourneyCallback(strict.event), body);
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
  return { ok: true, event, raw: value, callback: withPatient(fromLoose(loose.event, layout), body) };
}

/**
 * Events 1 and 2 name the patient (patient_email): a journey whose invite is in doubt adopts a patient exam only for its
 * own patient. Kept only when it can be an address (it travels, sealed, in the journey's history).
 */
function withPatient(callback: JourneyCallback, body: Record<string, unknown>): JourneyCallback {
  const email = body.patient_email;
  if (callback.event === 3 || typeof email !== 'string' || email.length === 0 || email.length > 254) return callback;
  return { ...callback, patientEmail: email };
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

/** The most a normalized callback may take in a journey's history (a real one is well under a kilobyte). */
export const NORMALIZED_MAX_BYTES = 8 * 1024;

/**
 * The signal for a callback that was read, within what a journey's history may take from one callback: the normalized
 * event at most NORMALIZED_MAX_BYTES, and an unread one's body (which a person reads in the history) at most
 * HELD_BODY_MAX_BYTES. Over either, the caller keeps the body as a dead letter instead (`over` says why).
 */
export function callbackSignal(
  reading: Extract<CallbackReading, { ok: true }>,
  delivery: { deliveryId: string; receivedAt: string; rawBody: string },
): { ok: true; signal: CallbackSignal } | { ok: false; over: string } {
  const bytes = Buffer.byteLength(delivery.rawBody);
  const normalized = Buffer.byteLength(JSON.stringify(reading.callback));
  if (normalized > NORMALIZED_MAX_BYTES) {
    return {
      ok: false,
      over: `its fields come to ${normalized} bytes, over the ${NORMALIZED_MAX_BYTES} a journey keeps of a callback`,
    };
  }
  if ('unread' in reading.callback && bytes > HELD_BODY_MAX_BYTES) {
    return {
      ok: false,
      over: `it cannot be read as an event and its body is ${bytes} bytes, over the ${HELD_BODY_MAX_BYTES} a journey holds for a person`,
    };
  }
  return {
    ok: true,
    signal: {
      deliveryId: delivery.deliveryId,
      receivedAt: delivery.receivedAt,
      callback: reading.callback,
      body: { bytes, sha256: hash('sha256', delivery.rawBody, 'hex') },
      raw: reading.raw,
    },
  };
}
