/**
 * What public integrations of the live service send that the contract schemas do not take, read into the contract's
 * form before the sandbox validates with those same schemas (docs/exam-service.md, "Calls the sandbox accepts from
 * real clients"). Our own client never relies on this: it validates against the contract before sending.
 */
import type { ExamServiceOperation } from '../exam-service/schemas';

const DIGITS = /^\d{1,15}$/;
const ID_FIELDS = ['patient_exam_id', 'exam_id', 'pharmacy_id'] as const;

/** A digit string as its number; anything else unchanged (the schema then names what is wrong). */
const asId = (v: unknown): unknown => (typeof v === 'string' && DIGITS.test(v.trim()) ? Number(v.trim()) : v);

/** A list of ids, or a lone id as a list of one (callers send `exams: 101`). */
const asIdList = (v: unknown): unknown => {
  if (Array.isArray(v)) return v.map(asId);
  const id = asId(v);
  return typeof id === 'number' ? [id] : v;
};

export function normaliseRealClientBody(
  operation: ExamServiceOperation,
  body: Record<string, unknown>,
): Record<string, unknown> {
  const out: Record<string, unknown> = { ...body };
  for (const field of ID_FIELDS) if (out[field] !== undefined) out[field] = asId(out[field]);
  if (operation === 'exam_invite' && out.exams !== undefined) out.exams = asIdList(out.exams);
  if (operation === 'partner_pharmacy_treatment_packages') {
    // The live form names the ids in lists (a lone id too); the document's fields win when both are given.
    for (const [list, single] of [
      ['pharmacy_ids', 'pharmacy_id'],
      ['exam_ids', 'exam_id'],
    ] as const) {
      if (out[list] === undefined) continue;
      out[list] = asIdList(out[list]);
      const first = Array.isArray(out[list]) ? (out[list] as unknown[])[0] : undefined;
      if (out[single] === undefined && first !== undefined) out[single] = first;
    }
  }
  return out;
}
