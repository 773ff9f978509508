// What every attachment store is: the claim check's interface (put, get, delete, a clinic's usage and quota, the sweep
// of uploads no journey took), what it stores about an attachment, and its refs. Two stores implement it, both on
// AttachmentStoreBase (base.ts): the local folder (files.ts, the default) and an S3-compatible bucket (s3.ts).
// Attachments are PHI (ID cards, lab results): both seal the bytes and the metadata with the payload key ring.
import { randomBytes } from 'node:crypto';
import type { AttachmentRef } from '../contract/journey-request';
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
}

export interface AttachmentStore {
  /** Stores an attachment; with a clinic in `meta`, counted in its usage (and held to `options.quota`). */
  put(bytes: Uint8Array, meta: AttachmentMeta, options?: PutOptions): Promise<AttachmentRef>;
  /** Undefined when the ref is unknown (or not a ref at all). */
  get(ref: string): Promise<StoredAttachment | undefined>;
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
}

const REF = /^att_[A-Za-z0-9_-]{8,64}$/;

export function isAttachmentRef(ref: string): boolean {
  return REF.test(ref);
}

export function newAttachmentRef(): string {
  return `att_${randomBytes(18).toString('base64url')}`;
}
