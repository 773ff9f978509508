// What every attachment store is: the claim check's interface (put, get, delete, a clinic's usage and quota, the sweep
// of uploads no journey took), what it stores about an attachment, and its refs. Two stores implement it, both on
// AttachmentStoreBase (base.ts): the local folder (files.ts, the default) and an S3-compatible bucket (s3.ts).
// Attachments are PHI (ID cards, lab results): both seal the bytes and the metadata with the payload key ring, and,
// once the patient is known (the journey that takes an upload, or an upload to a running journey), with the patient's
// own data key instead (src/patient-keys): an erasure destroys that key, and every copy of the document with it.
import { randomBytes } from 'node:crypto';
import type { AttachmentRef } from '../contract/journey-request';
import type { PatientRef } from '../patient-keys/envelope';
import type { PatientKeys } from '../patient-keys/patient-keys';
import type { AttachmentQuota, AttachmentUsage, OrphanSweepOptions, OrphanSweepResult } from './ledger';

export {
  AttachmentQuotaExceededError,
  type AttachmentQuota,
  type AttachmentUsage,
  type OrphanSweepOptions,
  type OrphanSweepResult,
} from './ledger';

export interface AttachmentMeta {
  /** File-kind label the exam expects (ID, Lab, a picture name). */
  kind: string;
  fileName: string;
  contentType: string;
  /** The clinic that uploaded it: a clinic may only use its own attachments. */
  clinicId?: string;
}

export interface StoredAttachmentMeta extends AttachmentMeta {
  ref: string;
  size: number;
  sha256: string;
  storedAt: string;
}

export interface PutOptions {
  /** The clinic's bounds: an upload that would pass them is refused (AttachmentQuotaExceededError) before it is written. */
  quota?: AttachmentQuota;
  /** The patient it belongs to (an upload to a running journey): sealed under their data key from the start. */
  patient?: PatientRef;
  /** The journey's data key: sealed under that key only (refused once it is destroyed, never a later key's). */
  dekId?: string;
}

/** What the stores use of the patient keys: sealing under a patient's data key, and opening. */
export type AttachmentPatientKeys = Pick<PatientKeys, 'sealBytes' | 'openBytes'>;

/** A journey's start names an upload that another patient's journey took (sealed under that patient's key). */
export class AttachmentOfAnotherPatientError extends Error {
  constructor(readonly ref: string) {
    super(`attachment ${ref} belongs to another patient's journey`);
    this.name = 'AttachmentOfAnotherPatientError';
  }
}

export interface AttachmentStore {
  /** Stores an attachment; with a clinic in `meta`, counted in its usage (and held to `options.quota`). */
  put(bytes: Uint8Array, meta: AttachmentMeta, options?: PutOptions): Promise<AttachmentRef>;
  /** Undefined when the ref is unknown (or not a ref at all), or its patient was erased. */
  get(ref: string): Promise<StoredAttachment | undefined>;
  /**
   * Seals an upload under the data key of the patient whose journey takes it (the start request names it), and removes
   * what was stored before (earlier versions included). Nothing to do when it already is; an upload sealed for another
   * patient is refused (AttachmentOfAnotherPatientError). Without patient keys, nothing changes.
   */
  sealForPatient(ref: string, patient: PatientRef, dekId?: string): Promise<void>;
  /** The journey that took an upload (claim), if one has. */
  takerOf(clinicId: string, ref: string): Promise<string | undefined>;
  /** Removes an attachment (retention, a refused upload) and its usage; an unknown ref is no error. */
  delete(ref: string): Promise<void>;
  /** What the clinic keeps stored: attachments and their bytes (those stored since usage is kept). */
  usage(clinicId: string): Promise<AttachmentUsage>;
  /** A journey takes an uploaded attachment (its start request names it): the orphan sweep leaves it alone. */
  claim(attachment: { ref: string; clinicId: string; size: number }, journeyId: string): Promise<void>;
  /** The uploads a journey took (claimed), by ref. */
  takenBy(clinicId: string, journeyId: string): Promise<string[]>;
  /** Deletes the uploads no journey took within the grace, and what is left of uploads that never finished. */
  sweepOrphans(options: OrphanSweepOptions): Promise<OrphanSweepResult>;
}

export interface StoredAttachment {
  bytes: Buffer;
  meta: StoredAttachmentMeta;
  /** The patient it is sealed for (a journey took it, or it was uploaded to one); absent under the payload keys. */
  patient?: PatientRef;
}

const REF = /^att_[A-Za-z0-9_-]{8,64}$/;

export function isAttachmentRef(ref: string): boolean {
  return REF.test(ref);
}

export function newAttachmentRef(): string {
  return `att_${randomBytes(18).toString('base64url')}`;
}
