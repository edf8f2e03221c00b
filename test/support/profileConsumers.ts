import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import Ajv from 'ajv';
import { repoRoot } from './paths';

/**
 * The real programs that read each export format, run on a written file, with their output parsed
 * into per-function figures the tests compare with the profile model.
 */

function run(cmd: string, args: string[]): string {
  const r = spawnSync(cmd, args, { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024, timeout: 120_000 });
  if (r.error) throw r.error;
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} exited with ${r.status}: ${r.stderr}`);
  return r.stdout;
}

const number = (t: string): number => Number(t.replace(/,/g, ''));

/** callgrind_annotate's per-function self (default) and inclusive (--inclusive=yes) totals. */
export function callgrindAnnotate(file: string): {
  self: Map<string, number>;
  inclusive: Map<string, number>;
  total: number;
} {
  const parse = (text: string): Map<string, number> => {
    const out = new Map<string, number>();
    for (const line of text.split('\n')) {
      const m = /^\s*([\d,]+)\s+\(\s*[\d.]+%\)\s+(\S.*)$/.exec(line);
      if (!m || m[2] === 'PROGRAM TOTALS') continue;
      const name = m[2]!.slice(m[2]!.lastIndexOf(':') + 1);
      out.set(name, number(m[1]!));
    }
    return out;
  };
  const selfText = run('callgrind_annotate', ['--auto=no', '--threshold=100', file]);
  const total = number(/^\s*([\d,]+)\s+\(100\.0%\)\s+PROGRAM TOTALS/m.exec(selfText)?.[1] ?? 'NaN');
  return {
    self: parse(selfText),
    inclusive: parse(run('callgrind_annotate', ['--auto=no', '--threshold=100', '--inclusive=yes', file])),
    total,
  };
}

/** `go tool pprof -top`: flat and cum per function, every node shown. */
export function pprofTop(file: string): Map<string, { flat: number; cum: number }> {
  const text = run('go', ['tool', 'pprof', '-top', '-nodecount=1000000', '-nodefraction=0', '-edgefraction=0', file]);
  const out = new Map<string, { flat: number; cum: number }>();
  for (const line of text.split('\n')) {
    const m = /^\s*(\S+)\s+[\d.]+%\s+[\d.]+%\s+(\S+)\s+[\d.]+%\s+(\S.*)$/.exec(line);
    if (!m) continue;
    // Plain counts only: a scaled figure ("1.2k") would lose digits, and the test must see that.
    if (!/^\d+$/.test(m[1]!) || !/^\d+$/.test(m[2]!)) throw new Error(`pprof printed a scaled figure: ${line}`);
    out.set(m[3]!.trim(), { flat: Number(m[1]), cum: Number(m[2]) });
  }
  return out;
}

export function pprofTraces(file: string): string {
  return run('go', ['tool', 'pprof', '-traces', file]);
}

/** speedscope's own JSON schema (shipped in the npm package), checked with ajv. */
export function speedscopeSchemaErrors(json: unknown): string[] {
  const schema = JSON.parse(
    readFileSync(join(repoRoot, 'node_modules', 'speedscope', 'dist', 'release', 'file-format-schema.json'), 'utf8'),
  ) as object;
  const ajv = new Ajv({ allErrors: true, strict: false });
  const validate = ajv.compile(schema);
  return validate(json) ? [] : (validate.errors ?? []).map((e) => `${e.instancePath} ${e.message ?? ''}`);
}

/** gprof's flat profile: self value and calls per function (gprof -b -p ELF gmon.out). */
export function gprofFlat(gprof: string, elf: string, gmon: string): Map<string, { self: number; calls?: number }> {
  const text = run(gprof, ['-b', '-p', elf, gmon]);
  const out = new Map<string, { self: number; calls?: number }>();
  for (const line of text.split('\n')) {
    const t = line.trim().split(/\s+/);
    if (t.length < 4 || !/^[\d.]+$/.test(t[0]!) || !/^[\d.]+$/.test(t[2]!)) continue;
    const name = t[t.length - 1]!;
    out.set(name, { self: Number(t[2]), ...(t.length >= 7 ? { calls: Number(t[3]) } : {}) });
  }
  return out;
}

/** Function symbols of an ELF (name, address, size) from the target's nm. */
export function elfFunctionSymbols(nm: string, elf: string): { name: string; address: number; size: number }[] {
  const out: { name: string; address: number; size: number }[] = [];
  for (const line of run(nm, ['-S', '--defined-only', elf]).split('\n')) {
    const m = /^([0-9a-f]+)\s+([0-9a-f]+)\s+[tTwW]\s+(\S+)$/.exec(line.trim());
    if (m) out.push({ address: parseInt(m[1]!, 16), size: parseInt(m[2]!, 16), name: m[3]! });
  }
  return out;
}

export function dotToSvg(file: string): string {
  return run('dot', ['-Tsvg', file]);
}
