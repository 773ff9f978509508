// Dead letters are kept for an operator to read and replay, not for ever: once older than the retention period
// (DEAD_LETTER_RETENTION_DAYS, 30 by default) each is deleted, and each deletion goes on the audit trail. A letter's
// raw body may hold patient data, so nothing is kept longer than someone could still need it.
import type { AuditEvent } from '../audit/types';
import type { DeadLetterStore } from './types';

export interface ExpiryResult {
  removed: number;
}

/** Deletes the dead letters dead-lettered before `olderThan` (oldest first, so it stops at the first younger one). */
export async function expireDeadLetters(
  store: DeadLetterStore,
  o: { olderThan: Date; audit?: (event: AuditEvent) => unknown; pageSize?: number },
): Promise<ExpiryResult> {
  let removed = 0;
  let after: string | undefined;
  for (;;) {
    const page = await store.list({ limit: o.pageSize ?? 100, ...(after ? { after } : {}) });
    for (const letter of page.letters) {
      if (Date.parse(letter.deadLetteredAt) >= o.olderThan.getTime()) return { removed };
      // On the record before it is deleted: a trail that cannot be written keeps the letter and stops the sweep (the
      // next one tries again); a deletion cut short after its record is finished, and recorded again, by the next.
      await o.audit?.({
        action: 'dead-letter.expire',
        subject: 'retention',
        roles: [],
        outcome: 'ok',
        details: {
          deadLetterId: letter.id,
          journeyId: letter.journeyId,
          reason: letter.reason,
          deadLetteredAt: letter.deadLetteredAt,
        },
      });
      // Another replica may have deleted it first (both recorded it).
      if (await store.remove(letter.id)) removed++;
    }
    if (!page.next) return { removed };
    after = page.next;
  }
}
