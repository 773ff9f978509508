// A value sealed for one patient, as it travels: a small JSON object that names the patient (a keyed hash, never the
// patient in clear) and the data key that sealed it, and holds the value encrypted under that key. Nothing here runs
// crypto or reads a store (patient-keys.ts does), so the workflows may take the type and the shape check without
// Node.js in their bundle: a workflow carries an envelope, it never opens one, and its control flow never depends on
// what is inside (docs/design-notes.md#per-patient-data-keys).

/** A patient as the engine names them across journeys: `pt_` and 22 base64url characters (refs.ts). */
export type PatientRef = `pt_${string}`;

/** What a sealed value is for; bound into its tag, so a value sealed for one use does not open as another. */
export type SealPurpose = string;

export interface SealedEnvelope {
  /** Marks the object as a sealed value, and its format's version. */
  $sealed: 1;
  /** The patient whose data key sealed it. */
  p: PatientRef;
  /** The data key's id (not its wrap: a master key rotation leaves every envelope as it is). */
  k: string;
  /** base64 of iv (12 bytes) | ciphertext | tag (16 bytes). */
  d: string;
}

/** What opening an envelope gives: the value, or the clear marker of a patient whose data key was destroyed. */
export type Opened<T = unknown> =
  { state: 'open'; value: T } | { state: 'erased'; patientRef: PatientRef; erasureId: string; erasedAt: string };

/** The marker an erased value reads as where a value is shown (the codec server, the API): no error, no data. */
export const ERASED_MARKER = '[erased]';

const PATIENT_REF = /^pt_[A-Za-z0-9_-]{22}$/;
const KEY_ID = /^dk_[A-Za-z0-9_-]{22}$/;
const PURPOSE = /^[a-z][a-z0-9.-]{0,63}$/;

export function isPatientRef(value: unknown): value is PatientRef {
  return typeof value === 'string' && PATIENT_REF.test(value);
}

export function isDataKeyId(value: unknown): value is string {
  return typeof value === 'string' && KEY_ID.test(value);
}

export function isSealPurpose(value: unknown): value is SealPurpose {
  return typeof value === 'string' && PURPOSE.test(value);
}

/**
 * Whether a value has an envelope's shape (its four fields, well formed); says nothing of whether it opens. The data
 * is not checked character by character (a 64 KiB value would pay for it on every open): its tag is what proves it.
 */
export function isSealedEnvelope(value: unknown): value is SealedEnvelope {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const v = value as Record<string, unknown>;
  return (
    Object.keys(v).length === 4 &&
    v.$sealed === 1 &&
    isPatientRef(v.p) &&
    isDataKeyId(v.k) &&
    typeof v.d === 'string' &&
    v.d.length >= 40
  );
}
