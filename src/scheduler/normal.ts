/**
 * The standard normal CDF, all the poll schedule (schedule.ts) and the latency model
 * (latency.ts) need of statistics. It was simple-statistics' `errorFunction` and nothing
 * else of that package (issue 13: a dependency for one function); this is the same
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
