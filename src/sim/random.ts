/**
 * Seeded randomness for the simulator. Everything the model draws comes from here so that
 * the same seed and the same sequence of calls give byte-identical answers.
 */

/** mulberry32: tiny, fast, and good enough for simulation draws (not for secrets). */
function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Spreads (seed, stream) so that neighbouring seeds do not give correlated streams. */
function mixSeed(seed: number, stream: number): number {
  let h = (Math.imul(seed | 0, 0x9e3779b1) ^ Math.imul(stream + 1, 0x85ebca77)) >>> 0;
  h = Math.imul(h ^ (h >>> 16), 0x7feb352d) >>> 0;
  h = Math.imul(h ^ (h >>> 15), 0x846ca68b) >>> 0;
  return (h ^ (h >>> 16)) >>> 0;
}

export class Rng {
  private readonly next: () => number;

  /**
   * Separate streams keep unrelated draws independent: ids drawn for request ids must not
   * shift which tasks fail, or a test that adds one unkeyed call would change every outcome.
   */
  constructor(seed: number, stream = 0) {
    this.next = mulberry32(mixSeed(seed, stream));
  }

  /** Uniform in [0, 1). */
  uniform(): number {
    return this.next();
  }

  /** Standard normal by Box–Muller; the second value is dropped so each draw costs exactly two uniforms. */
  normal(): number {
    const u1 = 1 - this.next(); // (0, 1]: log stays finite
    const u2 = this.next();
    return Math.sqrt(-2 * Math.log(u1)) * Math.cos(2 * Math.PI * u2);
  }

  /** Lognormal with the given median (e^mu) and sigma of the underlying normal. */
  lognormal(median: number, sigma: number): number {
    return median * Math.exp(sigma * this.normal());
  }

  hex(chars: number): string {
    let s = '';
    while (s.length < chars)
      s += Math.floor(this.next() * 0x100000000)
        .toString(16)
        .padStart(8, '0');
    return s.slice(0, chars);
  }
}
