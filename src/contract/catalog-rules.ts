// Checks a journey request against the clinic's live exam catalog before anything is sent to the service.
// Pure: used by the workflow before the invite and by the API to answer a 400 at once.
import type { JourneyInput } from './journey-request';
import type { RequestRule } from './request-rules';

export interface CatalogEntry {
  examId: number;
  title: string;
  rxType: 1 | 2;
  attachmentsRequired: number;
  attachments: string[];
}

export interface CatalogIssue {
  field: string;
  message: string;
  /** The rule of the API's document it breaks. */
  rule: RequestRule;
}

export function checkAgainstCatalog(
  req: Pick<JourneyInput, 'exams' | 'scenario' | 'attachments'>,
  catalog: CatalogEntry[],
): CatalogIssue[] {
  const issues: CatalogIssue[] = [];
  const byId = new Map(catalog.map((c) => [c.examId, c]));
  const chosen: CatalogEntry[] = [];
  req.exams.forEach((examId, i) => {
    const entry = byId.get(examId);
    if (entry) chosen.push(entry);
    else {
      issues.push({
        field: `exams.${i}`,
        message: `exam ${examId} is not in the clinic's exam list`,
        rule: 'exam-in-list',
      });
    }
  });
  const rx = chosen.filter((c) => c.rxType === 2);
  if (rx.length > 1) {
    issues.push({
      field: 'exams',
      message: `only one prescription exam (rx_type 2) per invite; got ${rx.map((c) => c.examId).join(', ')}`,
      rule: 'one-prescription-exam',
    });
  }
  if (req.scenario.type === 'gfe' && rx.length > 0) {
    issues.push({
      field: 'scenario.type',
      message: `a gfe journey takes rx_type 1 exams only; exam ${rx[0]!.examId} is a prescription exam`,
      rule: 'scenario-fits-exams',
    });
  }
  if (req.scenario.type !== 'gfe' && rx.length === 0) {
    issues.push({
      field: 'scenario.type',
      message: `a ${req.scenario.type} journey needs one prescription exam (rx_type 2)`,
      rule: 'scenario-fits-exams',
    });
  }
  for (const entry of chosen) {
    if (entry.attachmentsRequired !== 2) continue;
    const given = new Set(
      (req.attachments ?? []).filter((a) => a.examId === entry.examId).map((a) => a.attachment.kind),
    );
    const missing = entry.attachments.filter((name) => !given.has(name));
    if (missing.length > 0) {
      issues.push({
        field: 'attachments',
        message: `exam ${entry.examId} requires attachments: missing ${missing.join(', ')}`,
        rule: 'attachments-required',
      });
    }
  }
  return issues;
}
