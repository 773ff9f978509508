// Throttling before identity: requests whose token is missing or refused are counted per source address
// (audit/refusals.ts). Past the limit a source is answered 429 (with Retry-After) before its token is looked at or its
// body read, and its refusals go on the audit trail in aggregate, one record per source and window.
import { RefusalCounter, type RefusalCounterOptions } from '../audit/refusals';
import { ApiProblem } from './problem';

export type SourceGuardOptions = Omit<RefusalCounterOptions, 'bulkAction'>;

export class SourceGuard extends RefusalCounter {
  constructor(o: SourceGuardOptions) {
    super({ ...o, bulkAction: 'sign-in.refused-in-bulk' });
  }

  /** Throws 429 while the source is past its limit (its request is not authenticated, its body not read). */
  admit(source: string): void {
    const retryAfter = this.throttled(source);
    if (retryAfter === undefined) return;
    throw new ApiProblem(
      429,
      'too-many-refused-sign-ins',
      `more than ${this.maxFailures} requests from this address were refused sign-in within ` +
        `${Math.round(this.windowMs / 1000)} s; retry in ${retryAfter} s`,
      { headers: { 'retry-after': String(retryAfter), connection: 'close' } },
    );
  }
}
