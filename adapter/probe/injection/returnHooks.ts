import type { DecodedInstruction } from '../../arch/codec';
import type { InjectionWarning } from '../../../common/dapCustom';
import { hex, refusal, warning } from './errors';
import type { ProgramModel } from './programModel';
import type { InjectionPlanner } from './planner';
import type { BypassSite, CaveReach, FunctionCode, InjectionArch, InjectionRefusal, PatchSite } from './types';

/**
 * Where a function's return can be hooked when it is not the standard one (docs/design.md,
 * "Millicode"): functions called with another link register (RV32 `jal t0, __riscv_save_N`), and
 * shared epilogues that load the return address of the function that jumped to them
 * (`__riscv_restore_N`). Both come from -msave-restore, whose labels are aliases at different
 * entry points into shared code: one label's entry can be reached by falling through from another's.
 */

/** The register the function's callers link through: the standard one, another the stubs support, or why not. */
export function linkOf(model: ProgramModel, arch: InjectionArch, fn: FunctionCode): number | InjectionRefusal {
  const standard = arch.returnAddressRegister;
  let link: number | undefined;
  let tail: DecodedInstruction | undefined;
  for (const e of model.edgesTo(fn.start)) {
    const from = model.instructionAt(e.from);
    if (!from) continue;
    if (e.kind !== 'call') {
      if (model.functionContaining(e.from) !== fn) tail ??= from;
      continue;
    }
    const l = arch.linkRegister(from) ?? standard;
    if (link !== undefined && l !== link) {
      return refusal(
        'alternateLink',
        `${fn.name} is called with x${link} and with x${l} as the link register (${from.mnemonic} at ${hex(e.from)}); an entry patch hooks one of them. Its instructions count in the inclusive time of the functions that call it.`,
        e.from,
      );
    }
    link = l;
    if (l !== standard && (((arch.alternateLinks ?? 0) >>> l) & 1) === 0) {
      return refusal(
        'alternateLink',
        `${from.mnemonic} at ${hex(e.from)} calls ${fn.name} with x${l} as its link register (a millicode convention), and the ${arch.family} stubs hook only x${standard}${arch.alternateLinks ? ' and the millicode link' : ''}. Its instructions count in the inclusive time of the functions that call it.`,
        e.from,
      );
    }
  }
  if (link !== undefined && link !== standard && tail) {
    return refusal(
      'alternateLink',
      `${fn.name} is called with x${link} as the link register and also jumped to (${tail.mnemonic} at ${hex(tail.address)}), which links nothing; the stub could not tell where it returns. Its instructions count in the inclusive time of the functions that reach it.`,
      tail.address,
    );
  }
  return link ?? standard;
}

/**
 * The instruction of another function's code that ends at `fn`'s entry and falls through into it:
 * a label inside a longer symbol (aliased millicode entries share their code), or undefined.
 */
export function fallThroughInto(model: ProgramModel, fn: FunctionCode): { insn: DecodedInstruction; from: FunctionCode } | undefined {
  // The innermost label whose code runs into the entry (the one that owns the instruction before it).
  let best: { insn: DecodedInstruction; from: FunctionCode } | undefined;
  for (const f of model.functions) {
    if (f === fn || f.start >= fn.start || f.end <= fn.start || (best && best.from.start > f.start)) continue;
    const insn = f.instructions.find((i) => i.address + i.length === fn.start);
    if (insn && fallsThrough(insn) && reachable(model, f, insn)) best = { insn, from: f };
  }
  return best;
}

/**
 * Whether `insn` can run: something jumps to it, or the instruction before it falls through and
 * can run. Padding after a return (alignment NOPs before the next label) cannot.
 */
function reachable(model: ProgramModel, f: FunctionCode, insn: DecodedInstruction): boolean {
  let k = f.instructions.indexOf(insn);
  while (k >= 0) {
    const at = f.instructions[k]!;
    if (at.address === f.start || model.edgesTo(at.address).length > 0) return true;
    const before = f.instructions[k - 1];
    if (!before || before.address + before.length !== at.address || !fallsThrough(before)) return false;
    k--;
  }
  return false;
}

function fallsThrough(i: DecodedInstruction): boolean {
  return i.kind !== 'branch' && i.kind !== 'return' && i.kind !== 'indirectBranch' && i.kind !== 'tableBranch' && i.kind !== 'exceptionReturn';
}

/**
 * When `fn`'s entry is reached by falling through from another function's code, a patch on the
 * last instructions before the entry sends that code to a copy of the rest of it (the family's
 * folded epilogue), so its passes never run the entry patch: they are not calls of `fn`. Undefined
 * when nothing falls through; a warning when the code cannot be diverted (its passes then count as
 * calls, as they did before bypasses existed).
 */
export function planBypass(
  model: ProgramModel,
  arch: InjectionArch,
  cave: CaveReach,
  fn: FunctionCode,
  freeAt: (f: FunctionCode, address: number) => number,
): BypassSite | InjectionRefusal | InjectionWarning | undefined {
  const ft = fallThroughInto(model, fn);
  if (!ft) return undefined;
  const insns = ft.from.instructions;
  let why = `${ft.from.name} has no instructions before it`;
  for (let j = insns.indexOf(ft.insn); j >= 0; j--) {
    const x = insns[j]!.address;
    const shape = arch.choosePatch(x, cave, freeAt(ft.from, x));
    if (typeof shape === 'string') {
      why = shape;
      break;
    }
    if (fn.start - x < shape.length) {
      why = `only ${fn.start - x} byte(s) of ${ft.from.name} precede the entry`;
      continue;
    }
    let covered = 0;
    for (let m = j; covered < shape.length; m++) covered += insns[m]!.length;
    const into = model.edgesInto(x, x + covered);
    const entry = model.functions.find((f) => f.start > x && f.start < x + covered);
    if (entry) {
      why = `the entry of ${entry.name} at ${hex(entry.start)} lies inside the bytes a patch at ${hex(x)} would overwrite`;
      break;
    }
    if (into.length > 0) {
      why = `${into[0]!.mnemonic} at ${hex(into[0]!.from)} jumps to ${hex(into[0]!.target)}, inside the bytes a patch at ${hex(x)} would overwrite`;
      break;
    }
    const copy = arch.foldedEpilogue?.(ft.from, x) ?? `the ${arch.family} payloads have no copy of such code`;
    if (typeof copy === 'string') {
      why = copy;
      break;
    }
    const original = model.imageBytes(x, covered);
    if (!original) return refusal('memory', `The bytes at ${hex(x)} are not in the ELF image.`, x);
    return { address: x, shape, original, from: ft.from.name, copy };
  }
  return warning(
    'fallThroughCounted',
    `${ft.from.name}'s code falls through into ${fn.name}'s entry (${ft.insn.mnemonic} at ${hex(ft.insn.address)}: aliased labels share their code) and cannot be diverted around the entry patch (${why}): its passes count as calls of ${fn.name} here, while the trace counts them in ${ft.from.name}.`,
  );
}

/**
 * A function that loads its return address before it reads the one it was called with, and then
 * returns through it: a shared epilogue other functions jump to (`__riscv_restore_N`, the
 * -msave-restore millicode). An entry stub's substituted return address would be overwritten, so
 * the stub must hook the stack slot it is loaded from instead (`InjectionArch.returnSlot`).
 * `liveAtEntry`: the registers live at the function's first instruction.
 */
export function reloadsReturnAddress(fn: FunctionCode, arch: InjectionArch, liveAtEntry: number | undefined): InjectionRefusal | undefined {
  const l = arch.liveness;
  if (!l || liveAtEntry === undefined) return undefined;
  const link = arch.returnAddressRegister;
  if ((liveAtEntry & (1 << link)) !== 0 || !fn.instructions.some((x) => x.kind === 'return')) return undefined;
  const load = fn.instructions.find((x) => x.kind !== 'call' && (l.effects(x).defs & (1 << link)) !== 0);
  return refusal(
    'alternateLink',
    `${fn.name} loads its return address${load ? ` (${load.mnemonic} at ${hex(load.address)})` : ''} instead of returning to the one it was called with: it is an epilogue shared by the functions that jump to it (-msave-restore millicode), and the stub cannot hook where it loads it from. Its instructions count in those functions' inclusive time.`,
    load?.address ?? fn.start,
  );
}

/**
 * Millicode entered by a jump from another label's code into the code this label owns (its
 * aliases share code): the trace counts what follows in this function's inclusive time, not as a
 * call. Each such jump is hooked with the instructions before it, as a second entry whose pass is
 * no call (PatchSite.bodyEntry); what is live where it lands is kept across the stub. A jump that
 * cannot be hooked is a warning.
 */
export function planBodyEntries(planner: InjectionPlanner, fn: FunctionCode, link: number, kept: number, warnings: InjectionWarning[]): PatchSite[] {
  const { model, arch, cave } = planner;
  const out: PatchSite[] = [];
  const live = planner.liveOf(fn);
  const cfg = planner.cfgOf(fn);
  const seen = new Set<number>();
  for (const e of model.edgesInto(fn.start, fn.end)) {
    const from = model.functionContaining(e.from);
    const jump = model.instructionAt(e.from);
    if (!from || !jump || from === fn || e.kind !== 'branch' || model.functionContaining(e.target) !== fn || seen.has(e.from)) continue;
    seen.add(e.from);
    const k = cfg.index.get(e.target);
    const keep = (kept | (live && k !== undefined ? live[k]! : 0xffffffff)) & (arch.liveness?.callDefs ?? 0) & ~(1 << arch.returnAddressRegister);
    let site: PatchSite | InjectionRefusal | undefined;
    for (const x of from.instructions.filter((i) => i.address <= e.from).reverse()) {
      const shape = arch.choosePatch(x.address, cave, 0);
      if (typeof shape === 'string') break;
      if (e.from + jump.length - x.address < shape.length) continue; // the patch would reach past the jump
      site = planner.coverSite(from, x.address, shape, 0);
      if ('ok' in site || site.displaced.at(-1) === jump) break;
    }
    if (site && !('ok' in site) && site.displaced.at(-1) === jump) {
      out.push({ ...site, bodyEntry: true, link, keptRegisters: (keep & ~(1 << link)) >>> 0 });
      continue;
    }
    warnings.push(
      warning(
        'bodyEntryMissed',
        `${from.name} jumps into ${fn.name}'s body (${jump.mnemonic} at ${hex(e.from)}) and that jump cannot be hooked${site && 'ok' in site ? ` (${site.reason})` : ''}: the trace counts the instructions after it in ${fn.name}'s inclusive time, this measurement does not.`,
      ),
    );
  }
  return out;
}
