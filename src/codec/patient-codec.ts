// Every payload of a journey sealed under its patient's data key (src/patient-keys): the journey's input, its
// activities' arguments and results, its signals, updates, queries and the failures that carry data. The SDK names
// the workflow each payload belongs to (its serialization context); the journey's binding names the patient. Destroying
// the patient's key (an erasure) leaves every copy of those payloads unreadable: histories, visibility's copies and
// backups alike.
//
// A payload of a workflow bound to no patient (a journey started before patients had keys, any other workflow) is
// sealed by the master key ring as before (`inner`, the EncryptionCodec), and either kind decodes wherever it is met.
// The payload's metadata names the patient (a keyed hash) and the data key, never the patient in clear, so a reader
// without the workflow's context (the codec server the Temporal UI calls) finds the key too.
import type { Payload, PayloadCodec, SerializationContext } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import { ERASED_MARKER, isDataKeyId, isPatientRef, type PatientRef } from '../patient-keys/envelope';
import type { JourneyKey, PatientKeys } from '../patient-keys/patient-keys';

export const PATIENT_SEALED_ENCODING = 'binary/patient-sealed';
export const METADATA_PATIENT_REF = 'patient-ref';
export const METADATA_DATA_KEY_ID = 'data-key-id';
/** What an erased payload's marker names: the erasure (no patient data). */
export const METADATA_ERASURE_ID = 'erasure-id';
/** The purpose a payload is sealed for (bound into its tag). */
export const PAYLOAD_PURPOSE = 'temporal-payload';
const PURPOSE = PAYLOAD_PURPOSE;

const utf8 = (s: string) => new TextEncoder().encode(s);
const text = (b: Uint8Array | null | undefined) => (b ? new TextDecoder().decode(b) : undefined);

/** The patient keys a codec uses. */
export type PayloadPatientKeys = Pick<PatientKeys, 'journeyKey' | 'sealBytes' | 'openBytes'>;

/** A payload whose patient's data key was destroyed: readers that act on data (a worker, the API) stop here. */
export class PayloadErasedError extends Error {
  override name = 'PayloadErasedError';
  constructor(
    readonly patientRef: PatientRef,
    readonly erasureId: string,
    readonly erasedAt: string,
  ) {
    super(`this payload's patient data was erased (${erasureId}, ${erasedAt}): it can no longer be read`);
  }
}

export interface PatientCodecOptions {
  /**
   * What decoding an erased payload gives: `throw` (PayloadErasedError; a worker, the API) or `marker` (the JSON
   * string `[erased]`, its erasure id in the metadata; the codec server, so the UI shows it in place of the data).
   */
  erased: 'throw' | 'marker';
}

export class PatientCodec implements PayloadCodec {
  constructor(
    readonly keys: PayloadPatientKeys,
    readonly inner: PayloadCodec,
    readonly o: PatientCodecOptions = { erased: 'throw' },
  ) {}

  async encode(payloads: Payload[], context?: SerializationContext): Promise<Payload[]> {
    const workflowId = context?.workflowId;
    const journey = workflowId ? await this.keys.journeyKey(workflowId) : undefined;
    if (!journey) return this.inner.encode(payloads, context);
    const patient = journey.patientRef;
    return Promise.all(
      payloads.map(async (payload) => {
        const plain = temporal.api.common.v1.Payload.encode(payload).finish();
        // Under the journey's own key only: once it is destroyed, nothing of the journey is sealed again.
        const { dekId, data } = await this.keys.sealBytes(patient, PURPOSE, plain, journey.dekId);
        return {
          metadata: {
            encoding: utf8(PATIENT_SEALED_ENCODING),
            [METADATA_PATIENT_REF]: utf8(patient),
            [METADATA_DATA_KEY_ID]: utf8(dekId),
          },
          data,
        };
      }),
    );
  }

  async decode(payloads: Payload[], context?: SerializationContext): Promise<Payload[]> {
    return Promise.all(
      payloads.map(async (payload) => {
        if (text(payload.metadata?.encoding) !== PATIENT_SEALED_ENCODING) {
          return (await this.inner.decode([payload], context))[0]!;
        }
        const patientRef = text(payload.metadata?.[METADATA_PATIENT_REF]);
        const dekId = text(payload.metadata?.[METADATA_DATA_KEY_ID]);
        if (!isPatientRef(patientRef) || !isDataKeyId(dekId)) {
          throw new Error('a patient-sealed payload without its patient or data key in the metadata');
        }
        const opened = await this.keys.openBytes(patientRef, dekId, PURPOSE, Buffer.from(payload.data ?? []));
        if (opened.state === 'open') return temporal.api.common.v1.Payload.decode(opened.value);
        if (this.o.erased === 'throw') throw new PayloadErasedError(patientRef, opened.erasureId, opened.erasedAt);
        return erasedMarker(opened.erasureId);
      }),
    );
  }
}

/** What an erased payload reads as where a value is shown: the JSON string `[erased]`, the erasure beside it. */
export function erasedMarker(erasureId: string): Payload {
  return {
    metadata: { encoding: utf8('json/plain'), [METADATA_ERASURE_ID]: utf8(erasureId) },
    data: utf8(JSON.stringify(ERASED_MARKER)),
  };
}

/** What a person whose role may not read patient data sees in place of a payload (the codec server). */
export const REDACTED_MARKER = '[redacted for this role]';

export function redactedMarker(): Payload {
  return { metadata: { encoding: utf8('json/plain') }, data: utf8(JSON.stringify(REDACTED_MARKER)) };
}

/** Whether a payload is sealed for a patient (and which), without opening it. */
/** The patient and data key a payload is sealed under; undefined for a payload not sealed for a patient. */
export function sealedKeyOf(payload: Payload): { patientRef: PatientRef; dekId: string } | undefined {
  const patientRef = sealedPatientOf(payload);
  const dekId = text(payload.metadata?.[METADATA_DATA_KEY_ID]);
  return patientRef && dekId ? { patientRef, dekId } : undefined;
}

export function sealedPatientOf(payload: Payload): PatientRef | undefined {
  if (text(payload.metadata?.encoding) !== PATIENT_SEALED_ENCODING) return undefined;
  const ref = text(payload.metadata?.[METADATA_PATIENT_REF]);
  return isPatientRef(ref) ? ref : undefined;
}

/**
 * Patient keys that a process opens after its clients exist: the API opens them once its audit trail is open (each
 * key it makes goes on the trail first), while its Temporal client is made before. Every call waits for them; with
 * none provided (PATIENT_KEY_STORE=off), a journey's payloads are sealed by the master key ring and a patient-sealed
 * payload cannot be read here.
 */
export class PatientKeysWhenReady implements PayloadPatientKeys {
  #provide!: (keys: PayloadPatientKeys | undefined) => void;
  #fail!: (err: unknown) => void;
  readonly ready = new Promise<PayloadPatientKeys | undefined>((resolve, reject) => {
    this.#provide = resolve;
    this.#fail = reject;
  });

  constructor() {
    // Rejected only when the keys could not be opened; whoever waits on them is told then.
    this.ready.catch(() => undefined);
  }

  provide(keys: PayloadPatientKeys | undefined): void {
    this.#provide(keys);
  }

  /** The keys could not be opened: every payload of a journey is refused rather than sealed without them. */
  fail(err: unknown): void {
    this.#fail(err);
  }

  async journeyKey(workflowId: string): Promise<JourneyKey | undefined> {
    return (await this.ready)?.journeyKey(workflowId);
  }

  async sealBytes(...args: Parameters<PayloadPatientKeys['sealBytes']>): ReturnType<PayloadPatientKeys['sealBytes']> {
    const keys = await this.ready;
    if (!keys) throw new Error('this process has no patient keys (PATIENT_KEY_STORE=off)');
    return keys.sealBytes(...args);
  }

  async openBytes(...args: Parameters<PayloadPatientKeys['openBytes']>): ReturnType<PayloadPatientKeys['openBytes']> {
    const keys = await this.ready;
    if (!keys) {
      throw new Error(
        'a payload sealed for a patient, and this process has no patient keys (PATIENT_KEY_STORE=off): configure the store',
      );
    }
    return keys.openBytes(...args);
  }
}
