// The attachment store the configuration asks for: the local folder (default) or an S3-compatible bucket.
import type { RecordSealer } from '../codec/at-rest';
import type { Config } from '../config';
import { S3AttachmentStore } from './s3';
import { LocalFolderAttachmentStore } from './files';
import type { AttachmentPatientKeys, AttachmentStore } from './types';

/** The store; with patient keys, documents whose patient is known are sealed under the patient's data key. */
export function createAttachmentStore(
  config: Pick<Config, 'attachmentsDir' | 'attachmentStore'>,
  sealer: RecordSealer,
  patientKeys?: AttachmentPatientKeys,
): AttachmentStore {
  const o = config.attachmentStore;
  if (o.kind === 's3') {
    return new S3AttachmentStore({
      bucket: o.bucket,
      prefix: o.prefix,
      region: o.region,
      sealer,
      ...(patientKeys ? { patientKeys } : {}),
      ...(o.endpoint ? { endpoint: o.endpoint } : {}),
    });
  }
  return new LocalFolderAttachmentStore(config.attachmentsDir, sealer, patientKeys);
}
