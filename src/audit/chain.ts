// The audit trail's hash chain checked: each record follows from the one before it (seq, prev hash) and still has
// the hash it was written with. Lines of a file or rows of the table alike: both stores write the same records.
import type { Checkpoint } from './checkpoints';
import { GENESIS, hashOf, type AuditRecord } from './types';

export type ChainCheck = { ok: true; records: number } | { ok: false; records: number; at: number; problem: string };

export interface ChainStart {
  /**
   * `genesis` (default): the trail from its first record (seq 1, prev 64 zeros). `first`: a range of it (an export
   * of part of the trail), checked from its first record's seq and prev on.
   */
  from?: 'genesis' | 'first';
  /**
   * The trail's checkpoints (checkpoints.ts): each record a checkpoint saw must still be there with the hash it had,
   * so a tail cut off or a chain rewritten from some record on (which verifies as whole on its own) is found.
   */
  checkpoints?: readonly Checkpoint[];
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
  /** The checkpoints of each seq a checkpoint saw (several when taken by several processes, or forged). */
  readonly #anchors = new Map<number, Checkpoint[]>();

  constructor(start: ChainStart = {}) {
    for (const c of start.checkpoints ?? []) {
      if (c.seq > 0) this.#anchors.set(c.seq, [...(this.#anchors.get(c.seq) ?? []), c]);
    }
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
    const anchor = this.#anchors.get(r.seq)?.find((c) => c.hash !== hash);
    if (anchor)
      return this.#fail(
        at,
        `record ${r.seq} is not the one the checkpoint of ${anchor.at} saw (its hash differs): the chain was ` +
          `rewritten at or before record ${r.seq}`,
      );
    this.#prev = hash;
    this.#seq = r.seq;
    return true;
  }

  #fail(at: number, problem: string): false {
    this.#failure = { at, problem };
    return false;
  }

  result(): ChainCheck {
    if (this.#failure) return { ok: false, records: this.#records, ...this.#failure };
    // A checkpoint saw records past the last one here: the tail was cut.
    const last = this.#seq ?? 0;
    const beyond = [...this.#anchors.values()]
      .flat()
      .filter((c) => c.seq > last)
      .sort((a, b) => b.seq - a.seq)[0];
    if (beyond) {
      return {
        ok: false,
        records: this.#records,
        at: this.#records,
        problem:
          `the trail ends at record ${last}, but the checkpoint of ${beyond.at} saw record ${beyond.seq}: ` +
          `records ${last + 1} to ${beyond.seq} were cut off`,
      };
    }
    return { ok: true, records: this.#records };
  }
}

/** Checks a trail's chain from its first record: the first record that does not follow from the one before. */
export function verifyAuditChain(lines: readonly string[], start: ChainStart = {}): ChainCheck {
  const verifier = new ChainVerifier(start);
  for (const line of lines) verifier.add(line);
  return verifier.result();
}
