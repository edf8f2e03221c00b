/**
 * The Wilson score interval for a binomial share: k of n samples fell on a symbol. Unlike the
 * normal approximation it stays inside [0, 1] and is honest for shares near 0 or 1 and for small n,
 * which is where a live overlay starts (Wilson, JASA 1927).
 */
export function wilsonInterval(k: number, n: number, z = 1.959963984540054): { low: number; high: number } {
  if (n <= 0) return { low: 0, high: 1 };
  const p = k / n;
  const z2 = z * z;
  const denominator = 1 + z2 / n;
  const centre = (p + z2 / (2 * n)) / denominator;
  const half = (z * Math.sqrt((p * (1 - p)) / n + z2 / (4 * n * n))) / denominator;
  return { low: Math.max(0, centre - half), high: Math.min(1, centre + half) };
}
