import { profileText } from '../profile/json';
import type { Profile } from '../profile/model';
import { callgrindText } from './callgrind';
import { cpuProfileJson } from './cpuprofile';
import { functionsCsv, linesCsv } from './csv';
import { profileDot } from './dot';
import { foldedStacks } from './folded';
import { gmonBytes } from './gmon';
import { pprofBytes } from './pprof';
import { speedscopeJson } from './speedscope';

/**
 * Every export format, one entry each: the command line, the editor's quick pick and the tests read
 * this list, so a format added here appears everywhere.
 */
export interface ExportFormat {
  id: ExportFormatId;
  label: string;
  /** File name ending, with the dot. */
  extension: string;
  /** Which tools open the file, in words for the quick pick. */
  opensIn: string;
  write(p: Profile): string | Uint8Array;
}

export type ExportFormatId =
  'callgrind' | 'pprof' | 'speedscope' | 'folded' | 'cpuprofile' | 'gmon' | 'csv' | 'csv-lines' | 'dot' | 'json';

export const EXPORT_FORMATS: readonly ExportFormat[] = [
  {
    id: 'callgrind',
    label: 'Callgrind',
    extension: '.callgrind',
    opensIn: 'KCachegrind, QCachegrind, callgrind_annotate',
    write: callgrindText,
  },
  {
    id: 'pprof',
    label: 'pprof',
    extension: '.pb.gz',
    opensIn: 'go tool pprof, pprof web UI, Grafana Pyroscope',
    write: pprofBytes,
  },
  {
    id: 'speedscope',
    label: 'speedscope',
    extension: '.speedscope.json',
    opensIn: 'speedscope (speedscope.app or the speedscope command)',
    write: speedscopeJson,
  },
  {
    id: 'folded',
    label: 'Folded stacks',
    extension: '.folded',
    opensIn: 'flamegraph.pl, inferno, speedscope, CycleLens flame graph',
    write: foldedStacks,
  },
  {
    id: 'cpuprofile',
    label: 'Chrome CPU profile',
    extension: '.cpuprofile',
    opensIn: "VS Code's profile viewer, Chrome DevTools (1 count shown as 1 µs)",
    write: cpuProfileJson,
  },
  {
    id: 'gmon',
    label: 'gprof gmon.out',
    extension: '.gmon.out',
    opensIn: 'gprof of the target toolchain (arm-none-eabi-gprof, riscv64-unknown-elf-gprof) with the ELF',
    write: (p) => gmonBytes(p),
  },
  {
    id: 'csv',
    label: 'CSV, per function',
    extension: '.functions.csv',
    opensIn: 'spreadsheets, pandas',
    write: functionsCsv,
  },
  {
    id: 'csv-lines',
    label: 'CSV, per source line',
    extension: '.lines.csv',
    opensIn: 'spreadsheets, pandas',
    write: linesCsv,
  },
  {
    id: 'dot',
    label: 'Annotated call graph (DOT)',
    extension: '.dot',
    opensIn: 'Graphviz (dot -Tsvg), xdot',
    write: profileDot,
  },
  {
    id: 'json',
    label: 'CycleLens profile (JSON)',
    extension: '.profile.json',
    opensIn: 'CycleLens (Open Result Set…, cyclelens export), any JSON reader',
    write: profileText,
  },
];

export function exportFormat(id: string): ExportFormat | undefined {
  return EXPORT_FORMATS.find((f) => f.id === id);
}

export function formatIds(): string {
  return EXPORT_FORMATS.map((f) => f.id).join(', ');
}
