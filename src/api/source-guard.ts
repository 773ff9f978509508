// Throttling of refused sign-ins: requests whose token is missing or refused are counted per source address
// (audit/refusals.ts). Past the limit a source's requests without a valid token are answered 429 (with Retry-After)
// before their body is read, and its refusals go on the audit trail in aggregate, one record per source and window.
// A valid token is never refused for its source's count: whoever sends from a clinic's address cannot lock it out.
import { RefusalCounter, type RefusalCounterOptions } from '../audit/refusals';
import { ApiProblem } from './problem';

export type SourceGuardOptions = Omit<RefusalCounterOptions, 'bulkAction'>;

export class SourceGuard extends RefusalCounter {
  constructor(o: SourceGuardOptions) {
    super({ ...o, bulkAction: 'sign-in.refused-in-bulk' });
  }

  /**
   * A request refused sign-in: 429 while its source is past its limit (its body not read), else counted for the
   * source. True when the refusal is to be audited on its own.
   */
  refused(source: string): boolean {
    const retryAfter = this.throttled(source);
    if (retryAfter === undefined) return this.failed(source);
    throw new ApiProblem(
      429,
      'too-many-refused-sign-ins',
      `more than ${this.maxFailures} requests from this address were refused sign-in within ` +
        `${Math.round(this.windowMs / 1000)} s; retry in ${retryAfter} s`,
      { headers: { 'retry-after': String(retryAfter), connection: 'close' } },
    );
  }
}
