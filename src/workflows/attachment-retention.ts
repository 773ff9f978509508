// Retention of a journey's uploaded documents: started by the journey as it ends (and left running after it), this
// workflow waits out the grace (JOURNEY_ATTACHMENT_GRACE_MS, 7 days by default: time for a clinic to ask about a
// finished journey) and then deletes them from the attachment store. Its own history is the record that it happened;
// the activity writes the deletion to the worker's audit trail too.
import { proxyActivities, sleep } from '@temporalio/workflow';
import type { JourneyActivities } from '../contract/activity-contract';

const retention = proxyActivities<JourneyActivities>({
  startToCloseTimeout: '2 minutes',
  // A store that is away is retried for as long as it takes: documents must not outlive their retention.
  retry: { initialInterval: '30 seconds', backoffCoefficient: 2, maximumInterval: '1 hour' },
});

/** The retention workflow's id for a journey. */
export const attachmentRetentionId = (journeyId: string) => `attachment-retention-${journeyId}`;

export interface AttachmentRetentionInput {
  journeyId: string;
  refs: string[];
  graceMs: number;
}

export async function attachmentRetention(input: AttachmentRetentionInput): Promise<{ deleted: number }> {
  await sleep(input.graceMs, { summary: 'documents kept after the journey ended' });
  return retention.deleteAttachments.executeWithOptions({ summary: "delete the journey's documents" }, [
    { journeyId: input.journeyId, refs: input.refs },
  ]);
}
