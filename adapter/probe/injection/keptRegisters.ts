import type { FunctionCfg } from './cfg';
import type { CallSite, FunctionCode } from './types';

/**
 * Registers that callers keep across a call. The calling convention makes the caller-saved
 * registers dead across any call, but GCC's inter-procedural register allocation (-fipa-ra, on at
 * -O2, and libgcc's callers know libgcc's clobbers the same way) lets a caller keep a value in one
 * across a direct call to a callee that never writes it. A stub that overwrites such a register
 * must give it back: the RV32 stubs save and restore exactly these (trampolineRv32Kept.ts).
 */
export interface KeptAcrossCalls {
  /** Registers (bit mask) some caller keeps live across a call of the function. */
  kept: number;
  /** The first caller found keeping each register: where, for messages. */
  where: Map<number, { caller: string; site: CallSite }>;
}

/** What the analysis needs from the program. */
export interface CallerFacts {
  /** The registers of interest: those a stub would leave changed. */
  registers: number;
  /** What `fn` writes, itself or through its callees. */
  clobberOf(fn: FunctionCode): number | undefined;
  callSitesOf(fn: FunctionCode): readonly CallSite[];
  functionContaining(address: number): FunctionCode | undefined;
  liveOf(fn: FunctionCode): Uint32Array | undefined;
  cfgOf(fn: FunctionCode): FunctionCfg;
  /**
   * A call whose callee runs as part of its caller (millicode called from a prologue with another
   * link): what the caller's own callers keep across it is live through the callee too.
   */
  partOfCaller?(site: CallSite): boolean;
}

/**
 * Tail chains followed upwards: a function reached by a tail jump returns to the tail caller's
 * callers, so their live registers count too. Deeper chains than this are rare enough in compiled
 * code that the analysis stops there (as the refusal it replaces did at two).
 */
const TAIL_DEPTH = 4;

/**
 * Liveness right after each direct call site of `fn` (a call kills only what its callee writes),
 * restricted to the caller-saved registers `fn` does not write: the values a caller keeps there.
 * Indirect calls keep nothing: the compiler cannot know their callee's clobbers.
 */
export function keptAcrossCalls(fn: FunctionCode, facts: CallerFacts): KeptAcrossCalls | undefined {
  const clob = facts.clobberOf(fn);
  if (clob === undefined) return undefined;
  const candidates = (facts.registers & ~clob) >>> 0;
  const result: KeptAcrossCalls = { kept: 0, where: new Map() };
  if (candidates === 0) return result;
  const visited = new Set<string>();
  const visit = (callee: FunctionCode, depth: number): void => {
    if (visited.has(callee.name)) return;
    visited.add(callee.name);
    for (const site of facts.callSitesOf(callee)) {
      const caller = facts.functionContaining(site.address);
      if (!caller) continue;
      if (site.kind === 'tail' || facts.partOfCaller?.(site)) {
        if (depth < TAIL_DEPTH) visit(caller, depth + 1);
        if (site.kind === 'tail') continue;
      }
      const live = facts.liveOf(caller);
      const cfg = facts.cfgOf(caller);
      const i = cfg.index.get(site.address);
      if (!live || i === undefined) continue;
      let after = 0;
      for (const j of cfg.succ[i]!) after |= live[j]!;
      const kept = (after & candidates) >>> 0;
      for (let r = 1; r < 32; r++) {
        if ((kept & (1 << r)) !== 0 && !result.where.has(r)) result.where.set(r, { caller: caller.name, site });
      }
      result.kept = (result.kept | kept) >>> 0;
    }
  };
  visit(fn, 0);
  return result;
}
