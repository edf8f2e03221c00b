import type { InjectedMeasurementInfo, InjectionWarning, InjectionWarningCode } from '../../common/dapCustom';

/*
 * How an injected measurement is named and how its warnings reach the user. Pure (no `vscode`), so
 * the rules are unit-tested; InjectedMeasurements and the Measurements view apply them.
 */

/**
 * The name a person reads for a measurement. A region marked in the editor is named by its source
 * lines and the function it lies in (`fir_filter (dsp.c:46–51)`); its patch addresses only mean
 * something in the disassembly, so they stay in the log. Without line information the adapter's
 * name is all there is, addresses included. The function comes from the region's own fields, never
 * from its name.
 */
export function measurementLabel(info: Pick<InjectedMeasurementInfo, 'name' | 'kind' | 'source' | 'region'>): string {
  if (info.kind !== 'region' || !info.source) return info.name;
  const { path, line, endLine } = info.source;
  const file = path.split(/[\\/]/).pop() || path;
  const lines = endLine !== undefined && endLine !== line ? `${line}–${endLine}` : `${line}`;
  const where = `${file}:${lines}`;
  const fn = info.region?.function;
  return fn ? `${fn} (${where})` : where;
}

/**
 * Which warnings change what a measurement's figures mean (calls it cannot count, paths it cannot
 * follow): those are shown as a notification when the measurement is made, because the numbers
 * would mislead without them. The others (memory the injector keeps reserved, a jump table whose
 * targets are assumed outside the patch) are information: they go to the log and the measurement's
 * hover, never a pop-up the user must dismiss for an ordinary measurement. A code added to the
 * contract does not compile until it is placed here.
 */
const needsAttention: Record<InjectionWarningCode, boolean> = {
  callSitesMissed: true,
  indirectCallsMissed: true,
  pathsUnknown: true,
  jumpTableUnresolved: false,
  memoryPinned: false,
  bodyEntryMissed: true,
  fallThroughCounted: true,
};

export function warningNeedsAttention(warning: Pick<InjectionWarning, 'code'>): boolean {
  return needsAttention[warning.code];
}
