import type { CallGraphEdge, CallGraphFunction, CallGraphResponse } from '../../common/dapCustom';
import { isUnsupported } from '../arch/archPlugin';
import { archPlugin } from '../arch/registry';
import type { ElfImage } from '../elf';
import { ProgramModel } from './injection/programModel';
import type { FunctionCode, JumpTableInfo } from './injection/types';

/**
 * The static call graph of a linked program (docs/design.md, "Call-graph descent"): every sized function
 * with its source location, direct calls and tail calls as edges with their sites, and the
 * functions whose indirect calls leave their callees unknown. Pure over the ELF and the static
 * disassembly the injection engine already made (ProgramModel): nothing is decoded twice.
 */

/** What the call graph needs from a static disassembly; ProgramModel provides it. */
export interface DisassembledProgram {
  readonly functions: readonly FunctionCode[];
  /** Register jumps recognised as switch tables (their targets stay inside the function). */
  readonly jumpTables?: readonly JumpTableInfo[];
}

export interface IncompleteFunction {
  name: string;
  /** Where decoding stopped: edges after it are unknown. */
  address: number;
  reason: string;
}

/** A jump into the middle of another function: neither a call nor a tail call, kept as a tail edge. */
export interface CrossJump {
  from: number;
  caller: string;
  target: number;
  callee: string;
}

export interface StaticCallGraph extends CallGraphResponse {
  /** Functions whose decoding stopped early (their edges are incomplete). */
  incomplete: IncompleteFunction[];
  /** Branches that land inside another function rather than at its entry. */
  crossJumps: CrossJump[];
  /**
   * Functions whose code may run on into another's without a branch: into the next one where the
   * last instruction does not end the flow, and into a symbol that starts inside its range (libgcc's
   * RV32 millicode: `__riscv_restore_10` lies inside `__riscv_restore_12`). Not edges: nothing
   * calls there.
   */
  fallThrough: { caller: string; callee: string }[];
}

/** A last instruction after which execution cannot go on to the next address. */
const ENDS_FLOW = new Set(['branch', 'return', 'indirectBranch', 'exceptionReturn', 'tableBranch']);

/** The static disassembly for the families that have one (Cortex-M Thumb-2, RV32IMC). */
export function programModelFor(elf: ElfImage): ProgramModel {
  const callGraph = archPlugin(elf.family).callGraph;
  if (isUnsupported(callGraph)) throw new Error(`${elf.path}: ${callGraph.unsupported}`);
  return new ProgramModel(elf, callGraph.disassembly());
}

export function buildCallGraph(elf: ElfImage, program: DisassembledProgram): StaticCallGraph {
  const fns = [...program.functions].sort((a, b) => a.start - b.start);
  const names = uniqueNames(fns);
  const byStart = new Map<number, FunctionCode>();
  for (const f of fns) byStart.set(f.start, f);
  const containing = (address: number): FunctionCode | undefined => {
    // Sorted, non-overlapping in practice: binary search for the last start <= address.
    let lo = 0;
    let hi = fns.length - 1;
    let found: FunctionCode | undefined;
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1;
      if (fns[mid]!.start <= address) {
        found = fns[mid];
        lo = mid + 1;
      } else {
        hi = mid - 1;
      }
    }
    return found && address < found.end ? found : undefined;
  };

  const edges = new Map<string, CallGraphEdge>();
  const addEdge = (caller: string, callee: string, kind: 'call' | 'tail', site: number): void => {
    const key = `${caller}\u0000${callee}\u0000${kind}`;
    const e = edges.get(key);
    if (e) e.sites.push(site);
    else edges.set(key, { caller, callee, kind, sites: [site] });
  };
  const indirect = new Set<string>();
  const crossJumps: CrossJump[] = [];
  const incomplete: IncompleteFunction[] = [];

  for (const fn of fns) {
    const caller = names.get(fn)!;
    if (fn.undecodable) incomplete.push({ name: caller, ...fn.undecodable });
    for (const insn of fn.instructions) {
      if (insn.kind === 'indirectCall') {
        indirect.add(caller);
        continue;
      }
      // A register jump that is not a switch inside the function may leave through a pointer:
      // an indirect tail call (`jr a5`, `bx r3`) whose callee returns to our caller.
      if (insn.kind === 'indirectBranch' && !switchInside(program.jumpTables, insn.address, fn)) {
        indirect.add(caller);
        continue;
      }
      if (insn.target === undefined) continue;
      if (insn.kind === 'call') {
        // A call always transfers to a callee, even one that starts in the middle of a symbol.
        const callee = byStart.get(insn.target) ?? containing(insn.target);
        if (callee) addEdge(caller, names.get(callee)!, 'call', insn.address);
        continue;
      }
      if (insn.kind !== 'branch' && insn.kind !== 'condBranch') continue;
      const inside = insn.target >= fn.start && insn.target < fn.end;
      if (inside) continue;
      const entry = byStart.get(insn.target);
      if (entry) {
        // A jump without link to another function's entry: the callee returns to our caller.
        addEdge(caller, names.get(entry)!, 'tail', insn.address);
        continue;
      }
      const other = containing(insn.target);
      if (other) {
        const callee = names.get(other)!;
        crossJumps.push({ from: insn.address, caller, target: insn.target, callee });
        addEdge(caller, callee, 'tail', insn.address);
      }
    }
  }

  const fallThrough: StaticCallGraph['fallThrough'] = [];
  for (let i = 0; i < fns.length; i++) {
    const fn = fns[i]!;
    // A symbol that starts inside this one's range (an inner entry point) is run into from it.
    for (let j = i + 1; j < fns.length && fns[j]!.start < fn.end; j++)
      if (fns[j]!.start > fn.start) fallThrough.push({ caller: names.get(fn)!, callee: names.get(fns[j]!)! });
    const next = byStart.get(fn.end);
    const last = fn.instructions.at(-1);
    if (next && next !== fn && !fn.undecodable && last && !ENDS_FLOW.has(last.kind))
      fallThrough.push({ caller: names.get(fn)!, callee: names.get(next)! });
  }

  const functions: CallGraphFunction[] = fns.map((f) => ({
    name: names.get(f)!,
    address: f.start,
    size: f.end - f.start,
    ...sourceOf(elf, f),
  }));
  const sortedEdges = [...edges.values()]
    .map((e) => ({ ...e, sites: e.sites.sort((a, b) => a - b) }))
    .sort((a, b) => a.sites[0]! - b.sites[0]! || a.callee.localeCompare(b.callee));
  return {
    functions,
    edges: sortedEdges,
    indirectCallers: fns.map((f) => names.get(f)!).filter((n) => indirect.has(n)),
    incomplete,
    crossJumps,
    fallThrough,
  };
}

/** Convenience for the adapter's `cyclelens/callGraph` handler: ELF in, graph out. */
export function staticCallGraph(elf: ElfImage): StaticCallGraph {
  return buildCallGraph(elf, programModelFor(elf));
}

/**
 * Static functions of different files may share a name; the graph is keyed by name, so later
 * ones (by address) become `name@0xADDRESS`, which `cyclelens/inject` accepts as an address.
 */
function uniqueNames(fns: readonly FunctionCode[]): Map<FunctionCode, string> {
  const seen = new Set<string>();
  const out = new Map<FunctionCode, string>();
  for (const f of fns) {
    const name = seen.has(f.name) ? `${f.name}@0x${f.start.toString(16)}` : f.name;
    seen.add(f.name);
    out.set(f, name);
  }
  return out;
}

function sourceOf(elf: ElfImage, fn: FunctionCode): { path?: string; line?: number } {
  if (!elf.hasDebugInfo) return {};
  try {
    const loc = elf.lineTable.lookup(fn.start);
    if (loc && loc.line > 0) return { path: loc.file, line: loc.line };
  } catch {
    // Corrupt DWARF costs the source link, not the graph.
  }
  return {};
}

function switchInside(tables: readonly JumpTableInfo[] | undefined, branch: number, fn: FunctionCode): boolean {
  const t = tables?.find((x) => x.branch === branch);
  if (t === undefined) return false;
  return t.resolved
    ? t.targets.length > 0 && t.targets.every((a) => a >= fn.start && a < fn.end)
    : t.switchShaped === true;
}
