// Loaded by path into the workflow bundle: failure messages and stack traces go into an encoded payload, so the
// payload codec encrypts them like everything else.
import { DefaultFailureConverter } from '@temporalio/common';

export const failureConverter = new DefaultFailureConverter({ encodeCommonAttributes: true });
