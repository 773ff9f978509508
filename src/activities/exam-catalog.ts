// The clinic's exam list: read from the service, kept briefly per clinic, and seen by the journey as its catalog
// entries. The API (its catalog route and the start's check) and the activities (the workflow's check) share this.
import type { CatalogEntry } from '../contract/catalog-rules';
import type { Exam } from '../exam-service/schemas';

/** An exam as the journey's catalog rules read it (rx_type is already 1 or 2: the schema normalizes it). */
export function catalogEntry(e: Exam): CatalogEntry {
  return {
    examId: e.id,
    title: e.title,
    rxType: e.rx_type,
    attachmentsRequired: e.attachments_required,
    attachments: e.attachments,
  };
}

/** Each clinic's exam list, at most `ttlMs` old; a failed read is not kept. */
export class ExamCatalogCache {
  readonly #lists = new Map<string, { at: number; exams: Exam[] }>();

  constructor(
    private readonly ttlMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  async exams(clinicId: string, read: () => Promise<{ exams: Exam[] }>): Promise<Exam[]> {
    const cached = this.#lists.get(clinicId);
    if (cached && this.now() - cached.at < this.ttlMs) return cached.exams;
    const { exams } = await read();
    this.#lists.set(clinicId, { at: this.now(), exams });
    return exams;
  }
}
