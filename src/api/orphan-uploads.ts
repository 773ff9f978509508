// Uploads no journey took are deleted once older than ATTACHMENTS_ORPHAN_GRACE_MS (24 h by default): pre-uploads never
// named in a start request, and those whose claiming journey does not exist (a start that failed after taking them).
// The API sweeps at start and every hour, any replica; each deletion goes on the audit trail. docs/api.md
import type { OrphanSweepResult } from '../attachments/types';
import type { ApiContext } from './context';

/**
 * How much older than the grace an untaken upload must be before the sweep deletes it (10 min, or the grace when it is
 * shorter). A start refuses an untaken upload past the grace (rule attachment-in-time) and takes those within it in
 * seconds, so the sweep never deletes an upload a start is taking.
 */
export const ORPHAN_SWEEP_MARGIN_MS = 10 * 60_000;

export const orphanSweepMarginMs = (graceMs: number) => Math.min(ORPHAN_SWEEP_MARGIN_MS, graceMs);

export function sweepOrphanUploads(
  ctx: Pick<ApiContext, 'attachments' | 'journeys' | 'config' | 'now' | 'audit'>,
): Promise<OrphanSweepResult> {
  return ctx.attachments.sweepOrphans({
    olderThan: new Date(
      ctx.now().getTime() -
        ctx.config.attachmentOrphanGraceMs -
        orphanSweepMarginMs(ctx.config.attachmentOrphanGraceMs),
    ),
    journeyExists: async (journeyId) => (await ctx.journeys.describe(journeyId)) !== undefined,
    // On the record before each deletion: a trail that cannot be written keeps the upload.
    onDeleting: (orphan) =>
      ctx.audit?.({
        action: 'attachment.orphan-expire',
        subject: 'retention',
        roles: [],
        outcome: 'ok',
        details: {
          attachment: orphan.ref,
          reason: orphan.reason,
          size: orphan.size,
          ...(orphan.clinicId !== undefined ? { clinicId: orphan.clinicId } : {}),
        },
      }),
  });
}
