import type { InjectedMeasurementInfo } from '../../common/dapCustom';

/*
 * How an injected measurement is named and how its warnings reach the user. Pure (no `vscode`), so
 * the rules are unit-tested; InjectedMeasurements and the Measurements view apply them.
 */

/** The adapter names a region after its function and its patch addresses: `fir_filter 0x80000548..0x80000578`. */
const addressRange = /\s*0x[0-9a-f]+\s*\.\.\s*0x[0-9a-f]+\s*$/i;

/**
 * The name a person reads for a measurement. A region marked in the editor is named by its source
 * lines and the function it lies in (`fir_filter (dsp.c:46–51)`); its patch addresses only mean
 * something in the disassembly, so they stay in the log. Without line information the adapter's
 * name is all there is, addresses included.
 */
export function measurementLabel(info: Pick<InjectedMeasurementInfo, 'name' | 'kind' | 'source'>): string {
  if (info.kind !== 'region' || !info.source) return info.name;
  const { path, line, endLine } = info.source;
  const file = path.split(/[\\/]/).pop() || path;
  const lines = endLine !== undefined && endLine !== line ? `${line}–${endLine}` : `${line}`;
  const where = `${file}:${lines}`;
  const fn = info.name.replace(addressRange, '').trim();
  // A name that is nothing but addresses has no function to mention.
  return fn === '' || /^0x[0-9a-f]+$/i.test(fn) ? where : `${fn} (${where})`;
}

/**
 * Whether a warning the adapter attached to an injected measurement changes what its figures mean
 * (calls it cannot count, paths it cannot follow): those are shown as a notification when the
 * measurement is made, because the numbers would mislead without them. Everything else (memory the
 * injector keeps reserved, for one) is information: it goes to the log and the measurement's hover,
 * never a pop-up the user must dismiss for an ordinary measurement.
 */
export function warningNeedsAttention(warning: string): boolean {
  return /\bnot counted\b|\bunknown\b|\bcannot be (?:counted|rewritten|measured)\b|\bmiss(?:es|ed)?\b|\bunreliable\b/i.test(warning);
}
