/**
 * Profile error as the TIP paper reports it (Gottschall et al., MICRO 2021):
 *   e = (C_total - C_correct) / C_total
 * where C_correct is what the measured profile attributes to the right symbol. With both profiles
 * scaled to the same total, the correctly attributed part of a symbol is min(measured, oracle), so
 * e is 0 for a perfect profile and 1 when nothing lands on the right symbol.
 */
export function profileError(measured: ReadonlyMap<string, number>, oracle: ReadonlyMap<string, number>): number {
  const total = sum(oracle.values());
  const measuredTotal = sum(measured.values());
  if (total === 0) return measuredTotal === 0 ? 0 : 1;
  if (measuredTotal === 0) return 1;
  const scale = total / measuredTotal;
  let correct = 0;
  for (const [symbol, c] of oracle) correct += Math.min(c, (measured.get(symbol) ?? 0) * scale);
  return (total - correct) / total;
}

function sum(values: Iterable<number>): number {
  let s = 0;
  for (const v of values) s += v;
  return s;
}
