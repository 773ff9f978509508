/** A small seedable random source (mulberry32) so fault injection and generated ids can be replayed. */
export class SandboxRandom {
  private state = 0;

  constructor(seed: number) {
    this.reseed(seed);
  }

  reseed(seed: number): void {
    this.state = seed >>> 0;
  }

  /** Uniform in [0, 1). */
  next(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }

  /** True with probability `share`; 0 and 1 never draw, so a fixed setting does not shift the sequence. */
  chance(share: number): boolean {
    if (share <= 0) return false;
    if (share >= 1) return true;
    return this.next() < share;
  }

  int(maxExclusive: number): number {
    return Math.floor(this.next() * maxExclusive);
  }

  hex(length: number): string {
    let out = '';
    for (let i = 0; i < length; i++) out += this.int(16).toString(16);
    return out;
  }

  /** An RFC 4122 version-4 shaped UUID drawn from this source. */
  uuid(): string {
    const variant = (8 + this.int(4)).toString(16);
    return `${this.hex(8)}-${this.hex(4)}-4${this.hex(3)}-${variant}${this.hex(3)}-${this.hex(12)}`;
  }
}
