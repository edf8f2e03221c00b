import type { DecodedInstruction } from '../../arch/codec';
import type { FunctionCode, JumpTableInfo, LivenessModel } from './types';
import { hex } from './errors';

/**
 * A function's control-flow graph at instruction granularity, from the static disassembly:
 * successors inside the function, and the ways control leaves it (return, jump to another
 * function, exception return, an indirect jump with unknown targets, falling off the end).
 */
export type ExitKind = 'return' | 'tail' | 'exceptionReturn' | 'unknown' | 'end';

export interface FunctionCfg {
  fn: FunctionCode;
  index: Map<number, number>;
  succ: number[][];
  /** How control leaves the function after instruction i, if it can. */
  exits: Map<number, ExitKind>;
}

export function buildCfg(
  fn: FunctionCode,
  tables: readonly JumpTableInfo[],
  predicated: ReadonlySet<number> = new Set(),
): FunctionCfg {
  const index = new Map<number, number>();
  fn.instructions.forEach((insn, i) => index.set(insn.address, i));
  const succ: number[][] = [];
  const exits = new Map<number, ExitKind>();
  const n = fn.instructions.length;
  fn.instructions.forEach((insn, i) => {
    const out: number[] = [];
    const next = (): void => {
      const j = index.get(insn.address + insn.length);
      if (j !== undefined) out.push(j);
      else exits.set(i, 'end');
    };
    const to = (target: number | undefined, leave: ExitKind): void => {
      const j = target === undefined ? undefined : index.get(target);
      if (j !== undefined) out.push(j);
      else exits.set(i, leave);
    };
    switch (insn.kind) {
      case 'condBranch':
        next();
        to(insn.target, 'tail');
        break;
      case 'branch':
        to(insn.target, 'tail');
        break;
      case 'return':
        exits.set(i, 'return');
        break;
      case 'exceptionReturn':
        exits.set(i, 'exceptionReturn');
        break;
      case 'indirectBranch':
      case 'tableBranch': {
        const t = tables.find((x) => x.branch === insn.address);
        if (t?.resolved) for (const target of t.targets) to(target, 'unknown');
        else exits.set(i, 'unknown');
        break;
      }
      default:
        next(); // plain, system, it, calls (they return)
    }
    // A predicated instruction (inside an IT block) may not execute: it also falls through.
    if (
      predicated.has(insn.address) &&
      insn.kind !== 'condBranch' &&
      !['plain', 'system', 'call', 'indirectCall', 'it'].includes(insn.kind)
    ) {
      const j = index.get(insn.address + insn.length);
      if (j !== undefined && !out.includes(j)) out.push(j);
    }
    succ.push(out);
  });
  void n;
  return { fn, index, succ, exits };
}

export interface PathCheck {
  /** The end is reached on at least one path. */
  reachesEnd: boolean;
  /** Ways out of the function that avoid the end, with the instruction that takes them. */
  escapes: Array<{ insn: DecodedInstruction; kind: ExitKind }>;
  /** Indirect jumps with unknown targets met on the way: the answer may be incomplete. */
  unknown: DecodedInstruction[];
}

/** Explores every path from instruction `from` that does not pass instruction `end`. */
export function pathsAvoiding(cfg: FunctionCfg, from: number, end: number): PathCheck {
  const seen = new Set<number>();
  const stack = [from];
  const out: PathCheck = { reachesEnd: false, escapes: [], unknown: [] };
  while (stack.length > 0) {
    const i = stack.pop()!;
    if (i === end) {
      out.reachesEnd = true;
      continue;
    }
    if (seen.has(i)) continue;
    seen.add(i);
    const exit = cfg.exits.get(i);
    const insn = cfg.fn.instructions[i]!;
    if (exit === 'unknown') out.unknown.push(insn);
    else if (exit !== undefined) out.escapes.push({ insn, kind: exit });
    for (const j of cfg.succ[i]!) stack.push(j);
  }
  return out;
}

/**
 * Backward liveness over the CFG: live_in(i) = uses(i) | (live_out(i) & ~defs(i)). Calls read
 * the argument registers and clobber the caller-saved ones (the calling convention is what makes
 * a register dead across a call); exits use the convention's live-out sets; an unknown jump keeps
 * everything live.
 */
/** What the program knows about a direct callee: what it writes, and what it reads at its entry. */
export interface CalleeFacts {
  clobberOf(target: number): number | undefined;
  liveAtEntryOf(target: number): number | undefined;
}

export function liveIn(cfg: FunctionCfg, model: LivenessModel, callees?: CalleeFacts): Uint32Array {
  const clobberOf = callees ? (t: number) => callees.clobberOf(t) : undefined;
  const insns = cfg.fn.instructions;
  const n = insns.length;
  const uses = new Uint32Array(n);
  const defs = new Uint32Array(n);
  insns.forEach((insn, i) => {
    const e = model.effects(insn);
    if (insn.kind === 'call' || insn.kind === 'indirectCall') {
      // A known callee reads what is live at its entry (its real arguments), not every argument register.
      const entry = insn.kind === 'call' && insn.target !== undefined ? callees?.liveAtEntryOf(insn.target) : undefined;
      // (Minus the link register: the call writes it before the callee reads it to save it.)
      uses[i] = (e.uses | (entry !== undefined ? entry & ~e.defs : model.callUses)) >>> 0;
      // GCC's inter-procedural register allocation (-fipa-ra, on at -O2) lets a caller keep values in
      // caller-saved registers across a call to a callee known not to write them: a direct call
      // only kills what that callee (transitively) writes.
      const known = insn.kind === 'call' && insn.target !== undefined ? clobberOf?.(insn.target) : undefined;
      defs[i] = (e.defs | (known ?? model.callDefs)) >>> 0;
    } else {
      uses[i] = e.uses;
      defs[i] = e.defs;
    }
  });
  const exitLive = (kind: ExitKind | undefined): number => {
    switch (kind) {
      case undefined:
        return 0;
      case 'return':
        return model.liveAtReturn;
      case 'tail':
        return model.liveAtTail;
      case 'end':
        // Falling off the end follows a call that never returns (board_exit, abort): unreachable.
        return 0;
      default:
        return model.all;
    }
  };
  // A jump to another function's entry passes on what that function reads, plus what its own
  // return keeps (the callee-saved registers).
  const tailLive = (i: number): number | undefined => {
    const t = insns[i]!.target;
    const entry = t !== undefined ? callees?.liveAtEntryOf(t) : undefined;
    return entry === undefined ? undefined : (entry | model.liveAtReturn) >>> 0;
  };
  const live = new Uint32Array(n);
  let changed = true;
  while (changed) {
    changed = false;
    for (let i = n - 1; i >= 0; i--) {
      const kind = cfg.exits.get(i);
      let out = kind === 'tail' ? (tailLive(i) ?? exitLive(kind)) : exitLive(kind);
      for (const j of cfg.succ[i]!) out |= live[j]!;
      const v = (uses[i]! | ((out >>> 0) & ~defs[i]!)) >>> 0;
      if (v !== live[i]) {
        live[i] = v;
        changed = true;
      }
    }
  }
  return live;
}

export function describeExit(e: { insn: DecodedInstruction; kind: ExitKind }): string {
  const what = {
    return: 'returns',
    tail: 'jumps out of the function',
    exceptionReturn: 'returns from the exception',
    unknown: 'jumps to an unknown address',
    end: 'runs off the end of the function',
  }[e.kind];
  return `${e.insn.mnemonic} at ${hex(e.insn.address)} ${what}`;
}

/**
 * Registers each function may write, itself or through its callees (what GCC's -fipa-ra assumes
 * a call clobbers): a fixpoint over the static call graph. Indirect calls and jumps with unknown
 * targets clobber everything the calling convention allows.
 */
export function clobberSets(
  functions: readonly FunctionCode[],
  model: LivenessModel,
  functionAt: (address: number) => FunctionCode | undefined,
  tables: readonly JumpTableInfo[],
): Map<string, number> {
  const own = new Map<string, number>();
  const callees = new Map<string, Set<string>>();
  for (const fn of functions) {
    let m = 0;
    const out = new Set<string>();
    for (const insn of fn.instructions) {
      m |= model.effects(insn).defs;
      const target = insn.target;
      if (insn.kind === 'indirectCall') m |= model.callDefs;
      if (insn.kind === 'indirectBranch' && !tables.some((t) => t.branch === insn.address && t.resolved))
        m |= model.callDefs;
      if ((insn.kind === 'call' || insn.kind === 'branch' || insn.kind === 'condBranch') && target !== undefined) {
        const callee = functionAt(target);
        if (callee && callee !== fn) out.add(callee.name);
        else if (!callee && insn.kind === 'call') m |= model.callDefs;
      }
    }
    own.set(fn.name, m >>> 0);
    callees.set(fn.name, out);
  }
  const clob = new Map(own);
  let changed = true;
  while (changed) {
    changed = false;
    for (const fn of functions) {
      let m = clob.get(fn.name)!;
      for (const c of callees.get(fn.name)!) m |= clob.get(c) ?? model.callDefs;
      m >>>= 0;
      if (m !== clob.get(fn.name)) {
        clob.set(fn.name, m);
        changed = true;
      }
    }
  }
  return clob;
}
