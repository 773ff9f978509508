// The audit trail's hash chain checked: each record follows from the one before it (seq, prev hash) and still has
// the hash it was written with. Lines of a file or rows of the table alike: both stores write the same records.
import { GENESIS, hashOf, type AuditRecord } from './types';

export type ChainCheck = { ok: true; records: number } | { ok: false; records: number; at: number; problem: string };

export interface ChainStart {
  /**
   * `genesis` (default): the trail from its first record (seq 1, prev 64 zeros). `first`: a range of it (an export
   * of part of the trail), checked from its first record's seq and prev on.
   */
  from?: 'genesis' | 'first';
}

/**
 * Checks a trail one record at a time (a table or a file too large to hold): `add` each line in order; the first
 * record that does not follow from the one before is the answer, and later lines are only counted.
 */
export class ChainVerifier {
  #prev: string | undefined;
  #seq: number | undefined;
  #records = 0;
  #failure: { at: number; problem: string } | undefined;

  constructor(start: ChainStart = {}) {
    if ((start.from ?? 'genesis') === 'genesis') {
      this.#prev = GENESIS;
      this.#seq = 0;
    }
  }

  /** One line of the trail (blank lines are skipped); false once the chain is broken. */
  add(line: string): boolean {
    if (line.trim() === '') return this.#failure === undefined;
    const at = ++this.#records;
    if (this.#failure) return false;
    let r: AuditRecord;
    try {
      r = JSON.parse(line) as AuditRecord;
    } catch {
      return this.#fail(at, `line ${at} is not a record`);
    }
    const { hash, ...body } = r;
    const expectedSeq = this.#seq === undefined ? r.seq : this.#seq + 1;
    if (r.seq !== expectedSeq)
      return this.#fail(
        at,
        `record ${at} has seq ${r.seq}, expected ${expectedSeq}: a record is missing or out of place`,
      );
    if (this.#prev !== undefined && r.prev !== this.#prev)
      return this.#fail(at, `record ${r.seq} does not follow the one before it (its prev hash differs)`);
    if (hashOf(body) !== hash)
      return this.#fail(at, `record ${r.seq} was changed after it was written (its hash differs)`);
    this.#prev = hash;
    this.#seq = r.seq;
    return true;
  }

  #fail(at: number, problem: string): false {
    this.#failure = { at, problem };
    return false;
  }

  result(): ChainCheck {
    return this.#failure
      ? { ok: false, records: this.#records, ...this.#failure }
      : { ok: true, records: this.#records };
  }
}

/** Checks a trail's chain from its first record: the first record that does not follow from the one before. */
export function verifyAuditChain(lines: readonly string[], start: ChainStart = {}): ChainCheck {
  const verifier = new ChainVerifier(start);
  for (const line of lines) verifier.add(line);
  return verifier.result();
}
