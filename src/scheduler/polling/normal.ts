/**
 * The normal distribution: all the poll schedule (schedule.ts) and the latency model
 * (latency.ts, logEstimate.ts, hintRegression.ts) need of statistics. The CDF's `erf`
 * was simple-statistics' `errorFunction` and nothing else of that package (a dependency for one function); this is the same
 * formula, Numerical Recipes' erfc by Chebyshev fit (|error| < 1.2e-7), kept term for term
 * so that every seeded simulation and bench figure stays exactly as it was.
 * (simple-statistics, ISC licence, src/error_function.js.)
 */
export function erf(x: number): number {
  const t = 1 / (1 + 0.5 * Math.abs(x));
  const tau =
    t *
    Math.exp(
      -x * x +
        ((((((((0.17087277 * t - 0.82215223) * t + 1.48851587) * t - 1.13520398) * t + 0.27886807) * t - 0.18628806) * t + 0.09678418) * t +
          0.37409196) *
          t +
          1.00002368) *
          t -
        1.26551223,
    );
  return x >= 0 ? 1 - tau : tau - 1;
}

export const normalCdf = (z: number): number => 0.5 * (1 + erf(z / Math.SQRT2));

const normalPdf = (z: number): number => Math.exp(-0.5 * z * z) / Math.sqrt(2 * Math.PI);

/** A latency x with ln(x) ~ N(mu, sigma²). */
export interface LogNormal {
  /** Mean of ln(x). */
  readonly mu: number;
  /** Standard deviation of ln(x). */
  readonly sigma: number;
}

/** E[x] and E[x²] of x ~ N(mu, sigma²) given lo < x ≤ hi. */
export function truncatedMoments(lo: number, hi: number, mu: number, sigma: number): { ex: number; ex2: number } {
  const a = (lo - mu) / sigma;
  const b = (hi - mu) / sigma;
  const finiteA = Number.isFinite(a);
  const z = normalCdf(b) - (finiteA ? normalCdf(a) : 0);
  if (z > 1e-9) {
    const pa = finiteA ? normalPdf(a) : 0;
    const pb = normalPdf(b);
    const apa = finiteA ? a * pa : 0;
    const ex = mu + (sigma * (pa - pb)) / z;
    // E[(x − mu)²] = σ²(1 + (aφ(a) − bφ(b))/Z)
    const ex2 = sigma * sigma * (1 + (apa - b * pb) / z) + 2 * mu * ex - mu * mu;
    return { ex, ex2 };
  }
  // Far outside what we believe: take the interval's end as a plain sample.
  const ex = finiteA ? (lo + hi) / 2 : hi;
  return { ex, ex2: ex * ex };
}
