import type { DecodedInstruction } from '../../arch/codec';
import type { InjectionWarning } from '../../../common/dapCustom';
import { hex, refusal, warning } from './errors';
import { reachableDisplaced } from './planSupport';
import type { ProgramModel } from './programModel';
import type { FunctionCfg } from './cfg';
import type {
  BypassSite,
  CaveReach,
  FunctionCode,
  FunctionPlan,
  InjectionArch,
  InjectionRefusal,
  PatchShape,
  PatchSite,
} from './types';

/**
 * What the hooks need of the planner: plan a neighbour, cover a site, and its cached analyses of a
 * function. InjectionPlanner is one; the hooks name only this, so planner.ts alone imports the other.
 */
export interface HookPlanner {
  readonly model: ProgramModel;
  readonly arch: InjectionArch;
  readonly cave: CaveReach;
  planFunction(target: string | number): FunctionPlan | InjectionRefusal;
  coverSite(fn: FunctionCode, address: number, shape: PatchShape, free: number): PatchSite | InjectionRefusal;
  liveOf(fn: FunctionCode): Uint32Array | undefined;
  cfgOf(fn: FunctionCode): FunctionCfg;
}

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
        `${fn.name} is called with x${link} and with x${l} as the link register (${from.mnemonic} ` +
          `at ${hex(e.from)}); an entry patch hooks one of them. Its instructions count in the ` +
          `inclusive time of the functions that call it.`,
        e.from,
      );
    }
    link = l;
    if (l !== standard && (((arch.alternateLinks ?? 0) >>> l) & 1) === 0) {
      return refusal(
        'alternateLink',
        `${from.mnemonic} at ${hex(e.from)} calls ${fn.name} with x${l} as its link register (a ` +
          `millicode convention), and the ${arch.family} stubs hook only ` +
          `x${standard}${arch.alternateLinks ? ' and the millicode link' : ''}. ` +
          'Its instructions count in the inclusive time of the functions that call it.',
        e.from,
      );
    }
  }
  if (link !== undefined && link !== standard && tail) {
    return refusal(
      'alternateLink',
      `${fn.name} is called with x${link} as the link register and also jumped to (${tail.mnemonic} ` +
        `at ${hex(tail.address)}), which links nothing; the stub could not tell where it returns. ` +
        `Its instructions count in the inclusive time of the functions that reach it.`,
      tail.address,
    );
  }
  return link ?? standard;
}

/**
 * The instruction of another function's code that ends at `fn`'s entry and falls through into it:
 * a label inside a longer symbol (aliased millicode entries share their code), or undefined.
 */
export function fallThroughInto(
  model: ProgramModel,
  fn: FunctionCode,
): { insn: DecodedInstruction; from: FunctionCode } | undefined {
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
  // A jump to the next instruction runs on into it like any other (the trace cannot tell them apart).
  if (i.kind === 'branch' && i.target === i.address + i.length) return true;
  return (
    i.kind !== 'branch' &&
    i.kind !== 'return' &&
    i.kind !== 'indirectBranch' &&
    i.kind !== 'tableBranch' &&
    i.kind !== 'exceptionReturn'
  );
}

/**
 * When `fn`'s entry is reached by falling through from another function's code, a patch on the
 * last instructions before the entry sends that code to a copy of the rest of it (the family's
 * folded epilogue on RV32; on Thumb that code relocated ahead of the entry's displaced instructions),
 * so its passes never run the entry patch: they are not calls of `fn`. On Thumb, where fewer bytes
 * precede the entry than a patch needs, a 4-byte jump there goes through a literal in the entry
 * patch, which `widen` plans one word longer. Undefined when nothing falls through; a warning when
 * the code cannot be diverted (its passes then count as calls, as they did before bypasses existed).
 */
export function planBypass(
  model: ProgramModel,
  arch: InjectionArch,
  cave: CaveReach,
  fn: FunctionCode,
  freeAt: (f: FunctionCode, address: number) => number,
  entry?: PatchSite,
  widen?: (shape: PatchShape) => PatchSite | InjectionRefusal,
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
    const blocked = blockedAt(model, arch, ft.from, x, x + covered);
    if (blocked) {
      why = blocked;
      break;
    }
    const copy =
      arch.foldedEpilogue?.(ft.from, x) ??
      (arch.relocatesFallThrough ? relocatedCode(arch, ft.from, fn, x, shape.length, cave) : undefined);
    if (copy === undefined || typeof copy === 'string') {
      why = copy ?? `the ${arch.family} payloads have no copy of such code`;
      break;
    }
    const original = model.imageBytes(x, covered);
    if (!original) return refusal('memory', `The bytes at ${hex(x)} are not in the ELF image.`, x);
    return copy instanceof Uint8Array
      ? { address: x, shape, original, from: ft.from.name, copy }
      : { address: x, shape, original, from: ft.from.name, copy: new Uint8Array(0), code: copy };
  }
  // Fewer bytes precede the entry than a patch needs: a short jump through a literal that the entry
  // patch, one word longer, holds (Thumb).
  const far = entry && widen && arch.farBypass ? farBypass(model, arch, cave, fn, ft.from, entry, widen) : undefined;
  if (typeof far === 'object') return far;
  if (far) why = `${why}; ${far}`;
  return warning(
    'fallThroughCounted',
    `${ft.from.name}'s code falls through into ${fn.name}'s entry (${ft.insn.mnemonic} at ${hex(ft.insn.address)}: ` +
      `aliased labels share their code) and cannot be diverted around the entry patch (${why}): ` +
      `its passes count as calls of ${fn.name} here, while the trace counts them in ${ft.from.name}.`,
  );
}

/**
 * Thumb: an entry patch's displaced code runs on into `next`'s entry. When `next`'s own entry can
 * be patched, the stub runs the instructions that patch displaces too (PatchSite.divertCode), so
 * those passes never reach it; otherwise they run on into `next` as they are.
 */
export function divertInto(planner: HookPlanner, site: PatchSite, next: FunctionCode): void {
  const plan = planner.planFunction(next.start);
  if (!plan.ok || plan.kind !== 'function') return;
  const e = plan.entry;
  const trial = planner.arch.relocator.relocate(reachableDisplaced(e.displaced), planner.cave.start, {
    patched: { start: e.address, end: e.address + e.shape.length },
  });
  if (!trial.ok) return;
  site.divertCode = e.displaced;
  site.divertResume = e.resume;
}

/**
 * When `fn` runs on into the next function's entry within the bytes a long patch needs (libgcc's
 * `__aeabi_fsub`: 4 bytes before `__addsf3`), what lets a short one fit; '' otherwise.
 */
export function shortBeforeEntryHint(
  model: ProgramModel,
  arch: InjectionArch,
  fn: FunctionCode,
  shape: PatchShape,
): string {
  const next = model.functions.find((f) => f.start > fn.start && f.start < fn.start + shape.length);
  if (!next || !arch.farBypass || fallThroughInto(model, next)?.from !== fn) return '';
  return (
    ` Only ${next.start - fn.start} byte(s) of ${fn.name} run before it falls through into ${next.name}: ` +
    `with the reserved memory within B.W's +/-16 MiB of the code (the default takes unused code ` +
    `memory after the image), a 4-byte patch fits.`
  );
}

/** Why [x, end) of `from` cannot be overwritten (a label or a branch target inside it), or undefined. */
function blockedAt(
  model: ProgramModel,
  arch: InjectionArch,
  from: FunctionCode,
  x: number,
  end: number,
): string | undefined {
  if (arch.predicated?.(from).has(x))
    return `the instruction at ${hex(x)} is predicated by an IT block, which a patch there would split`;
  const label = model.functions.find((f) => f.start > x && f.start < end);
  if (label)
    return (
      `the entry of ${label.name} at ${hex(label.start)} lies inside the bytes a patch at ${hex(x)} ` +
      `would overwrite`
    );
  const into = model.edgesInto(x, end);
  if (into.length > 0)
    return (
      `${into[0]!.mnemonic} at ${hex(into[0]!.from)} jumps to ${hex(into[0]!.target)}, inside the ` +
      `bytes a patch at ${hex(x)} would overwrite`
    );
  return undefined;
}

/**
 * Thumb: the instructions of `from` from `x` up to `fn`'s entry, which the stub relocates ahead of
 * the entry's displaced code, or why they cannot move. A last `b` to the entry is left out.
 */
function relocatedCode(
  arch: InjectionArch,
  from: FunctionCode,
  fn: FunctionCode,
  x: number,
  length: number,
  cave: CaveReach,
): DecodedInstruction[] | string {
  const code = from.instructions.filter((i) => i.address >= x && i.address < fn.start);
  let at = x;
  for (const i of code) {
    if (i.address !== at) return `the code from ${hex(x)} to ${fn.name}'s entry runs into data at ${hex(at)}`;
    at += i.length;
  }
  if (at !== fn.start) return `the code from ${hex(x)} does not end at ${fn.name}'s entry`;
  const moved = withoutJumpTo(code, fn.start);
  if (moved.length === 0) return code;
  const trial = arch.relocator.relocate(moved, cave.start, { patched: { start: x, end: x + length } });
  if (!trial.ok) return `cannot move ${trial.reason}`;
  if (!trial.fallsThrough) return `the code from ${hex(x)} leaves before it reaches ${fn.name}'s entry`;
  return code;
}

/** `code` without a last unconditional jump to `entry` (the instruction after it: a fall-through). */
export function withoutJumpTo(code: readonly DecodedInstruction[], entry: number): DecodedInstruction[] {
  const last = code.at(-1);
  return last && last.kind === 'branch' && last.target === entry ? code.slice(0, -1) : [...code];
}

/** The 4-byte patch right before the entry and the entry patch widened to hold its literal, or why not. */
function farBypass(
  model: ProgramModel,
  arch: InjectionArch,
  cave: CaveReach,
  fn: FunctionCode,
  from: FunctionCode,
  entry: PatchSite,
  widen: (shape: PatchShape) => PatchSite | InjectionRefusal,
): BypassSite | string {
  const x = fn.start - 4;
  if (!from.instructions.some((i) => i.address === x))
    return `no instruction of ${from.name} starts 4 bytes before the entry, where a short jump would go`;
  const blocked = blockedAt(model, arch, from, x, fn.start);
  if (blocked) return blocked;
  const shapes = arch.farBypass!(entry.shape, fn.start, x);
  if (typeof shapes === 'string') return shapes;
  const code = relocatedCode(arch, from, fn, x, 4, cave);
  if (typeof code === 'string') return code;
  const widened = widen(shapes.entry);
  if ('ok' in widened) return `the entry patch with room for the literal: ${widened.reason}`;
  const original = model.imageBytes(x, 4);
  if (!original) return `the bytes at ${hex(x)} are not in the ELF image`;
  return {
    address: x,
    shape: shapes.bypass,
    original,
    from: from.name,
    copy: new Uint8Array(0),
    code,
    entry: { ...widened, ...(entry.keptRegisters !== undefined ? { keptRegisters: entry.keptRegisters } : {}) },
  };
}

/**
 * A function that loads its return address before it reads the one it was called with, and then
 * returns through it: a shared epilogue other functions jump to (`__riscv_restore_N`, the
 * -msave-restore millicode). An entry stub's substituted return address would be overwritten, so
 * the stub must hook the stack slot it is loaded from instead (`InjectionArch.returnSlot`).
 * `liveAtEntry`: the registers live at the function's first instruction.
 */
export function reloadsReturnAddress(
  fn: FunctionCode,
  arch: InjectionArch,
  liveAtEntry: number | undefined,
): InjectionRefusal | undefined {
  const l = arch.liveness;
  if (!l || liveAtEntry === undefined) return undefined;
  const link = arch.returnAddressRegister;
  if ((liveAtEntry & (1 << link)) !== 0 || !fn.instructions.some((x) => x.kind === 'return')) return undefined;
  const load = fn.instructions.find((x) => x.kind !== 'call' && (l.effects(x).defs & (1 << link)) !== 0);
  return refusal(
    'alternateLink',
    `${fn.name} loads its return address${load ? ` (${load.mnemonic} at ${hex(load.address)})` : ''} ` +
      `instead of returning to the one it was called with: it is an epilogue shared by the ` +
      `functions that jump to it (-msave-restore millicode), and the stub cannot hook where it ` +
      `loads it from. Its instructions count in those functions' inclusive time.`,
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
export function planBodyEntries(
  planner: HookPlanner,
  fn: FunctionCode,
  link: number,
  kept: number,
  warnings: InjectionWarning[],
): PatchSite[] {
  const { model, arch, cave } = planner;
  const out: PatchSite[] = [];
  const live = planner.liveOf(fn);
  const cfg = planner.cfgOf(fn);
  const seen = new Set<number>();
  for (const e of model.edgesInto(fn.start, fn.end)) {
    const from = model.functionContaining(e.from);
    const jump = model.instructionAt(e.from);
    if (
      !from ||
      !jump ||
      from === fn ||
      e.kind !== 'branch' ||
      model.functionContaining(e.target) !== fn ||
      seen.has(e.from)
    )
      continue;
    seen.add(e.from);
    const k = cfg.index.get(e.target);
    const keep =
      (kept | (live && k !== undefined ? live[k]! : 0xffffffff)) &
      (arch.liveness?.callDefs ?? 0) &
      ~(1 << arch.returnAddressRegister);
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
        `${from.name} jumps into ${fn.name}'s body (${jump.mnemonic} at ${hex(e.from)}) and that ` +
          `jump cannot be hooked${site && 'ok' in site ? ` (${site.reason})` : ''}: the trace counts ` +
          `the instructions after it in ${fn.name}'s inclusive time, this measurement does not.`,
      ),
    );
  }
  return out;
}
