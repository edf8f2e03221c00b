import type { InjectionWarning } from '../../../common/dapCustom';
import type { DecodedInstruction } from '../../arch/codec';
import { buildCfg, clobberSets, describeExit, liveIn, pathsAvoiding, type FunctionCfg } from './cfg';
import { hex, refusal, warning } from './errors';
import { keptAcrossCalls, type KeptAcrossCalls } from './keptRegisters';
import { describeShape, neverReturns, reachableDisplaced, regList, takenAddresses } from './planSupport';
import {
  divertInto,
  fallThroughInto,
  linkOf,
  planBodyEntries,
  planBypass,
  reloadsReturnAddress,
  shortBeforeEntryHint,
} from './returnHooks';
import type { ProgramModel } from './programModel';
import type {
  CallSite,
  CallSiteOffer,
  CallSitePlan,
  CaveReach,
  FunctionCode,
  FunctionPlan,
  InjectionArch,
  InjectionRefusal,
  PatchShape,
  PatchSite,
  RegionPlan,
} from './types';

/**
 * Decides where and how to patch, without touching a target: the patch site and its shape, the
 * displaced instructions and whether they can move, and every reason not to patch. Pure: the
 * inputs are the program's static disassembly and where the cave is.
 */
export class InjectionPlanner {
  private readonly cfgs = new Map<string, FunctionCfg>();
  private readonly lives = new Map<string, Uint32Array>();
  private clobbers: Map<string, number> | undefined;

  constructor(
    readonly model: ProgramModel,
    readonly arch: InjectionArch,
    readonly cave: CaveReach,
  ) {}

  /** A function by name or by the address of its first instruction. */
  resolveFunction(target: string | number): FunctionCode | InjectionRefusal {
    if (typeof target === 'string') {
      const fn = this.model.functionNamed(target);
      return fn ?? refusal('notFound', `There is no function named '${target}' in ${this.model.elf.path}.`);
    }
    const fn = this.model.functionAt(target);
    if (fn) return fn;
    const inside = this.model.functionContaining(target);
    return refusal(
      'notFound',
      inside
        ? `${hex(target)} is inside ${inside.name} (which starts at ${hex(inside.start)}), not at a ` +
            `function's first instruction.`
        : `No function starts at ${hex(target)}.`,
      target,
    );
  }

  planFunction(target: string | number): FunctionPlan | InjectionRefusal {
    const fn = this.resolveFunction(target);
    if ('ok' in fn) return fn;
    const name = fn.name;
    if (fn.undecodable)
      return refusal(
        'undecodable',
        `${name} cannot be disassembled at ${hex(fn.undecodable.address)} (${fn.undecodable.reason}), ` +
          `so its code cannot be patched safely.`,
        fn.undecodable.address,
      );
    const mret = fn.instructions.find((i) => i.kind === 'exceptionReturn');
    if (mret) {
      return refusal(
        'exceptionReturn',
        `${name} is an exception handler: it returns with ${mret.mnemonic} at ${hex(mret.address)}, ` +
          `not through the return address, so its return cannot be redirected. Measure a region ` +
          `inside it instead.`,
        mret.address,
      );
    }
    const link = linkOf(this.model, this.arch, fn);
    if (typeof link !== 'number') return link;
    for (const e of this.model.edgesTo(fn.start)) {
      const from = this.model.instructionAt(e.from);
      if (from && e.kind !== 'call' && this.model.functionContaining(e.from) === fn) {
        return refusal(
          'entryLoop',
          `${from.mnemonic} at ${hex(e.from)} jumps back to ${name}'s first instruction (a loop ` +
            `through the entry), so the entry payload would run again on every iteration.`,
          e.from,
        );
      }
    }
    // A shared epilogue loads the return address it returns through: the stub hooks that stack slot.
    const reload = reloadsReturnAddress(fn, this.arch, this.liveOf(fn)?.[this.cfgOf(fn).index.get(fn.start) ?? -1]);
    const slot = reload ? this.arch.returnSlot?.(fn, fn.start) : undefined;
    if (reload && (slot === undefined || typeof slot === 'string'))
      return slot ? { ...reload, reason: `${reload.reason} (${slot})` } : reload;
    // Registers callers keep across the call (-fipa-ra): the stubs give them back, and neither the
    // patch nor the jump back may use one. The millicode link is given back as the return address.
    const kept = ((this.keptOf(fn)?.kept ?? 0) & ~(1 << link)) >>> 0;
    const free = this.entryFree(fn, kept, link);
    const shape = this.arch.choosePatch(fn.start, this.cave, free);
    if (typeof shape === 'string') {
      const keptNote = kept
        ? ` (callers keep values in ${regList(kept)} across their calls of ${name}, so those are not free either)`
        : '';
      return refusal('noFreeRegister', `${name}: ${shape}${keptNote}`, fn.start);
    }
    const site = this.coverSite(fn, fn.start, shape, free);
    if (!('ok' in site) && kept) site.keptRegisters = kept;
    if ('ok' in site) {
      // The entry alone is in the way (too short, a branch into the patch, an IT block, code that
      // cannot move): the function's direct calls may still be rewritten.
      const refused =
        site.code === 'memory' || link !== this.standardLink ? site : { ...site, callSites: this.callSiteOffer(fn) };
      return { ...refused, reason: `${refused.reason}${shortBeforeEntryHint(this.model, this.arch, fn, shape)}` };
    }
    if (link !== this.standardLink) site.link = link;
    if (slot && typeof slot !== 'string') site.returnSlot = slot.offset;
    const widen = (s: PatchShape): PatchSite | InjectionRefusal => this.coverSite(fn, fn.start, s, free);
    const diverted = planBypass(this.model, this.arch, this.cave, fn, (f, a) => this.freeAt(f, a), site, widen);
    if (diverted && 'ok' in diverted) return diverted;
    const bypass = diverted && 'copy' in diverted ? diverted : undefined;
    if (bypass?.entry) Object.assign(site, bypass.entry);
    const next = this.model.functionAt(site.resume);
    if (next && fallThroughInto(this.model, next)?.from === fn) {
      const divert = this.arch.foldedEpilogue?.(fn, fn.start);
      if (divert && typeof divert !== 'string') site.divert = divert;
      else if (this.arch.relocatesFallThrough) divertInto(this, site, next);
    }
    const warnings = this.tableWarnings(fn);
    if (diverted && 'message' in diverted) warnings.push(diverted);
    const bodyEntries = link !== this.standardLink ? planBodyEntries(this, fn, link, kept, warnings) : [];
    return {
      ok: true,
      kind: 'function',
      function: fn,
      entry: site,
      ...(bypass ? { bypass } : {}),
      ...(bodyEntries.length ? { bodyEntries } : {}),
      warnings,
    };
  }

  /** The function's direct call sites, when the entry cannot be patched. */
  planCallSites(target: string | number): import('./types').CallSitePlan | InjectionRefusal {
    const fn = this.resolveFunction(target);
    if ('ok' in fn) return fn;
    const ipa = this.ipaHazard(fn);
    if (ipa) return ipa;
    const offer = this.callSiteOffer(fn);
    if (offer.usable.length === 0) {
      const missedSites = offer.missed.map((m) => `${m.mnemonic} at ${hex(m.address)} (${m.refusal})`).join('; ');
      const why = offer.missed.length
        ? ` Its ${offer.missed.length} direct call site(s) cannot be rewritten: ${missedSites}.`
        : ' Nothing in the program calls it directly.';
      return refusal('tooShort', `${fn.name} cannot be measured at its call sites.${why}`, fn.start);
    }
    const sites = offer.usable.map((s) => ({ ...s, original: this.model.imageBytes(s.address, s.length)! }));
    const warnings: InjectionWarning[] = [];
    if (offer.missed.length)
      warnings.push(
        warning(
          'callSitesMissed',
          `${offer.missed.length} direct call site(s) of ${fn.name} cannot be rewritten and are not ` +
            `counted: ${offer.missed.map((m) => `${hex(m.address)} in ${m.caller} (${m.refusal})`).join(', ')}.`,
        ),
      );
    if (offer.indirectCalls.length) {
      const shown = offer.indirectCalls.slice(0, 6).map(hex).join(', ');
      const untold =
        typeof this.takenAddresses === 'string'
          ? ` Whether the program takes its address cannot be told: ${this.takenAddresses}.`
          : '';
      warnings.push(
        warning(
          'indirectCallsMissed',
          `${offer.indirectCalls.length} indirect call(s) in the program may also reach ${fn.name}; ` +
            `they are not counted (at ${shown}${offer.indirectCalls.length > 6 ? ' ...' : ''}).${untold}`,
        ),
      );
    }
    const plan: CallSitePlan = { ok: true, kind: 'callSites', function: fn, sites, offer, warnings };
    return plan;
  }

  planRegion(start: number, end: number): RegionPlan | InjectionRefusal {
    const fn = this.model.functionContaining(start);
    if (!fn) return refusal('notFound', `${hex(start)} is not inside any function of the program.`, start);
    const endFn = this.model.functionContaining(end);
    // One exception to "a region starts and ends in one function": the end at the entry of a
    // function the start's function calls once, as its last instruction (main's last `bl exit`,
    // whose 4 bytes hold no patch).
    // The window then closes where that call lands, and the path check runs to the call.
    const callInto =
      endFn && endFn !== fn && end === endFn.start
        ? fn.instructions.filter((i) => i.kind === 'call' && i.target === endFn.start)
        : [];
    // Only into a function that does not return (the call is the caller's last instruction, or the
    // callee has no way back), so the window closes once: a call of a function that returns could
    // sit in a loop and close it on every pass.
    const lastInsn = fn.instructions
      .filter((i) => i.mnemonic !== 'nop' && !(i.kind === 'branch' && i.target === i.address))
      .at(-1);
    if (callInto.length === 1 && callInto[0] !== lastInsn && !neverReturns(endFn!)) callInto.length = 0;
    if (endFn !== fn && callInto.length !== 1) {
      return refusal(
        'regionPaths',
        `The region start ${hex(start)} is in ${fn.name} but the end ${hex(end)} is ` +
          `${endFn ? `in ${endFn.name}` : 'outside every function'}; a region starts and ends in the same ` +
          'function (or ends at the entry of a function called by its last instruction).',
        end,
      );
    }
    if (endFn && endFn !== fn) return this.planRegionIntoCallee(fn, start, endFn, callInto[0]!.address);
    if (fn.undecodable)
      return refusal(
        'undecodable',
        `${fn.name} cannot be disassembled at ${hex(fn.undecodable.address)} (${fn.undecodable.reason}).`,
        fn.undecodable.address,
      );
    for (const a of [start, end]) {
      if (!this.model.instructionAt(a))
        return refusal('notFound', `${hex(a)} is not the start of an instruction of ${fn.name}.`, a);
    }
    if (start === end)
      return refusal('regionPaths', `The region's start and end are the same instruction (${hex(start)}).`, start);
    const cfg = this.cfgOf(fn);
    const live = this.liveOf(fn);
    const freeAt = (address: number): number => {
      if (!live || !this.arch.liveness) return 0;
      const i = cfg.index.get(address);
      return i === undefined ? 0 : (~live[i]! & ~this.arch.liveness.reserved & this.arch.liveness.all) >>> 0;
    };
    const sites: PatchSite[] = [];
    for (const a of [start, end]) {
      const shape = this.arch.choosePatch(a, this.cave, freeAt(a));
      if (typeof shape === 'string') return refusal('noFreeRegister', `At ${hex(a)}: ${shape}`, a);
      const site = this.coverSite(fn, a, shape, freeAt(a));
      if ('ok' in site) return site;
      // The register the stub jumps back through: dead at the resume point and not written by the
      // displaced code. One the displaced code reads (a saved ra at a handler's entry) is loaded after it.
      const untouched = this.pickResumeRegister(freeAt(site.resume) & ~this.touchedBy(site.displaced));
      const late =
        untouched === undefined
          ? this.pickResumeRegister(freeAt(site.resume) & ~this.writtenBy(site.displaced))
          : undefined;
      if (untouched !== undefined) site.resumeRegister = untouched;
      else if (late !== undefined) {
        site.resumeRegister = late;
        site.resumeRegisterLate = true;
      }
      sites.push(site);
    }
    const [s, e] = sites as [PatchSite, PatchSite];
    if (e.address > s.address && e.address < s.address + s.shape.length) {
      return refusal(
        'regionPaths',
        `The end ${hex(end)} lies inside the ${s.shape.length} bytes the start patch at ${hex(start)} ` +
          `overwrites; choose an end further on.`,
        end,
      );
    }
    if (s.address > e.address && s.address < e.address + e.shape.length) {
      return refusal(
        'regionPaths',
        `The start ${hex(start)} lies inside the ${e.shape.length} bytes the end patch at ${hex(end)} overwrites.`,
        start,
      );
    }
    const warnings = this.tableWarnings(fn);
    const check = pathsAvoiding(cfg, cfg.index.get(start)!, cfg.index.get(end)!);
    if (!check.reachesEnd && check.unknown.length === 0) {
      return refusal('regionPaths', `No path from ${hex(start)} reaches the end ${hex(end)} in ${fn.name}.`, end);
    }
    if (check.escapes.length > 0) {
      const first = check.escapes[0]!;
      const more = check.escapes.length > 1 ? ` (and ${check.escapes.length - 1} more way(s) out)` : '';
      return refusal(
        'regionPaths',
        `Not every path from ${hex(start)} reaches the end ${hex(end)}: ${describeExit(first)} ` +
          `without passing it${more}. ` +
          `A pass would stay open; choose an end every path reaches.`,
        first.insn.address,
      );
    }
    if (check.unknown.length > 0) {
      const unresolved = check.unknown.map((u) => `${u.mnemonic} at ${hex(u.address)}`).join(', ');
      warnings.push(
        warning(
          'pathsUnknown',
          `Whether every path from ${hex(start)} reaches ${hex(end)} is unknown: ${unresolved} jump(s) to ` +
            'addresses the disassembly could not resolve.',
        ),
      );
    }
    return { ok: true, kind: 'region', function: fn, start: s, end: e, warnings };
  }

  /**
   * A region from `start` in `fn` to the entry of `callee`, which `fn` calls once at `callSite`.
   * The start site follows planRegion's rules; the end site is an entry patch of the callee.
   */
  private planRegionIntoCallee(
    fn: FunctionCode,
    start: number,
    callee: FunctionCode,
    callSite: number,
  ): RegionPlan | InjectionRefusal {
    for (const f of [fn, callee]) {
      if (f.undecodable)
        return refusal(
          'undecodable',
          `${f.name} cannot be disassembled at ${hex(f.undecodable.address)} (${f.undecodable.reason}).`,
          f.undecodable.address,
        );
    }
    if (!this.model.instructionAt(start))
      return refusal('notFound', `${hex(start)} is not the start of an instruction of ${fn.name}.`, start);
    const cfg = this.cfgOf(fn);
    const live = this.liveOf(fn);
    const freeAt = (f: FunctionCode, address: number): number => {
      if (f === callee && address === callee.start) return this.arch.freeAtEntry;
      const i = cfg.index.get(address);
      if (!live || !this.arch.liveness || i === undefined) return 0;
      return (~live[i]! & ~this.arch.liveness.reserved & this.arch.liveness.all) >>> 0;
    };
    const sites: PatchSite[] = [];
    for (const [f, a] of [
      [fn, start],
      [callee, callee.start],
    ] as const) {
      const shape = this.arch.choosePatch(a, this.cave, freeAt(f, a));
      if (typeof shape === 'string') return refusal('noFreeRegister', `At ${hex(a)}: ${shape}`, a);
      const site = this.coverSite(f, a, shape, freeAt(f, a));
      if ('ok' in site) return site;
      const resumeFree = f === fn ? freeAt(fn, site.resume) : 0;
      const untouched = this.pickResumeRegister(resumeFree & ~this.touchedBy(site.displaced));
      if (untouched !== undefined) site.resumeRegister = untouched;
      sites.push(site);
    }
    const check = pathsAvoiding(cfg, cfg.index.get(start)!, cfg.index.get(callSite)!);
    if (!check.reachesEnd && check.unknown.length === 0)
      return refusal(
        'regionPaths',
        `No path from ${hex(start)} reaches the call of ${callee.name} at ${hex(callSite)}.`,
        callSite,
      );
    if (check.escapes.length > 0) {
      const first = check.escapes[0]!;
      return refusal(
        'regionPaths',
        `Not every path from ${hex(start)} reaches the call of ${callee.name} at ${hex(callSite)}: ` +
          `${describeExit(first)} without passing it. A pass would stay open.`,
        first.insn.address,
      );
    }
    const warnings = this.tableWarnings(fn);
    if (check.unknown.length > 0) {
      const unresolved = check.unknown.map((u) => `${u.mnemonic} at ${hex(u.address)}`).join(', ');
      warnings.push(
        warning(
          'pathsUnknown',
          `Whether every path from ${hex(start)} reaches ${callee.name} is unknown: ${unresolved} jump(s) to ` +
            'addresses the disassembly could not resolve.',
        ),
      );
    }
    return { ok: true, kind: 'region', function: fn, start: sites[0]!, end: sites[1]!, warnings };
  }

  /**
   * The instructions a patch of `shape` at `address` covers, with every reason it cannot (public
   * for returnHooks.ts).
   */
  coverSite(fn: FunctionCode, address: number, shape: PatchShape, free: number): PatchSite | InjectionRefusal {
    const insns = fn.instructions;
    let i = insns.findIndex((x) => x.address === address);
    const displaced: DecodedInstruction[] = [];
    let covered = 0;
    while (covered < shape.length) {
      const insn = insns[i];
      if (!insn || insn.address !== address + covered) {
        const last = displaced[displaced.length - 1];
        const room = covered;
        const why =
          !insn && address + covered >= fn.end
            ? `${fn.name} has only ${room} byte(s) from ${hex(address)} to its end`
            : `the code from ${hex(address)} runs into data (a literal pool or table) after ${room} byte(s)`;
        const ending = last ? `, ending with ${last.mnemonic} at ${hex(last.address)}` : '';
        return refusal(
          'tooShort',
          `The patch at ${hex(address)} needs ${shape.length} bytes (${describeShape(shape)}), but ${why}${ending}.`,
          address,
        );
      }
      displaced.push(insn);
      covered += insn.length;
      i++;
    }
    // IT blocks (Thumb): the patch must never start inside one. One that the patch cuts moves whole:
    // its remaining members are displaced too (the relocator re-emits the block in the stub, and
    // predication does not depend on the address), and the stub resumes after the block.
    const predicated = this.arch.predicated?.(fn);
    if (predicated?.has(address)) {
      const it = insns
        .slice(
          0,
          insns.findIndex((x) => x.address === address),
        )
        .reverse()
        .find((x) => x.kind === 'it');
      const predicate = it ? `${it.mnemonic} at ${hex(it.address)}` : 'an IT instruction';
      return refusal(
        'itBlock',
        `${displaced[0]!.mnemonic} at ${hex(address)} is predicated by ${predicate}; ` +
          'a patch there would split the IT block.',
        address,
      );
    }
    for (let d = 0; d < displaced.length; d++) {
      const insn = displaced[d]!;
      if (insn.kind !== 'it') continue;
      const k = insns.indexOf(insn);
      for (let m = 1; m <= (insn.itCount ?? 0); m++) {
        const member = insns[k + m];
        if (!member) break;
        if (member.address < address + covered) continue;
        if (member.address !== address + covered) {
          return refusal(
            'itBlock',
            `${insn.mnemonic} at ${hex(insn.address)} predicates instructions up to ${hex(member.address)}, ` +
              `past data the patch cannot move; the patch would split the IT block.`,
            insn.address,
          );
        }
        displaced.push(member);
        covered += member.length;
      }
    }
    const end = address + covered;
    const into = this.model.edgesInto(address, address + shape.length);
    if (into.length > 0) {
      const e = into[0]!;
      const what =
        e.kind === 'table'
          ? `the jump table of ${e.mnemonic} at ${hex(e.from)} has an entry`
          : `${e.mnemonic} at ${hex(e.from)} jumps`;
      return refusal(
        'branchIntoPatch',
        `${what} to ${hex(e.target)}, inside the ${shape.length} bytes the patch at ${hex(address)} ` +
          `overwrites${into.length > 1 ? ` (${into.length} branches do)` : ''}; execution would land ` +
          `in the middle of the jump.`,
        e.from,
      );
    }
    // Instructions after an unconditional jump or return inside the patch (padding before a literal
    // pool) are unreachable: nothing branches into the patch, so they are overwritten, not moved.
    const original = this.model.imageBytes(address, covered);
    if (!original) return refusal('memory', `The bytes at ${hex(address)} are not in the ELF image.`, address);
    const scratch = this.pickResumeRegister(free & ~this.touchedBy(displaced));
    const trial = this.arch.relocator.relocate(reachableDisplaced(displaced), this.cave.start, {
      patched: { start: address, end: address + shape.length },
      ...(scratch !== undefined ? { scratch } : {}),
    });
    if (!trial.ok) return refusal('unrelocatable', `Cannot move ${trial.reason}.`, trial.address);
    const resumeRegister = this.pickResumeRegister(free & ~this.touchedBy(displaced));
    return {
      address,
      shape,
      displaced,
      resume: end,
      freeRegisters: free,
      original,
      ...(resumeRegister !== undefined ? { resumeRegister } : {}),
    };
  }

  private callSiteOffer(fn: FunctionCode): CallSiteOffer {
    const usable: CallSite[] = [];
    const missed: CallSite[] = [];
    for (const site of this.model.callSitesOf(fn)) {
      const link = this.linkAt(site.address);
      const why =
        (link !== this.standardLink
          ? `it links through x${link} (millicode), and a rewritten call links through x${this.standardLink}`
          : undefined) ??
        this.arch.callSiteRefusal(site, this.cave) ??
        this.callSiteConflict(site);
      if (why) missed.push({ ...site, refusal: why });
      else usable.push(site);
    }
    return { usable, missed, indirectCalls: this.addressMayBeTaken(fn) ? [...this.model.indirectCalls] : [] };
  }

  /** Whether an indirect call can reach `fn` (planSupport.ts `takenAddresses`). */
  private addressMayBeTaken(fn: FunctionCode): boolean {
    this.takenAddresses ??= takenAddresses(this.model);
    return typeof this.takenAddresses === 'string' || this.takenAddresses.has(fn.start);
  }

  private takenAddresses: Set<number> | string | undefined;

  /** A call site rewritten in place keeps its length; it must not be a branch target's middle. */
  private callSiteConflict(site: CallSite): string | undefined {
    const into = this.model.edgesInto(site.address, site.address + site.length);
    return into.length ? `a branch lands inside it (${into[0]!.mnemonic} at ${hex(into[0]!.from)})` : undefined;
  }

  private tableWarnings(fn: FunctionCode): InjectionWarning[] {
    return this.model
      .unresolvedTablesIn(fn)
      .map((t) =>
        warning(
          'jumpTableUnresolved',
          `The indirect jump at ${hex(t.branch)} in ${fn.name} could not be resolved (${t.reason}); ` +
            `its targets are assumed to lie outside the patched bytes.`,
        ),
      );
  }

  /** What each function writes, itself or through callees (the -fipa-ra view of a call). */
  clobberOf(fn: FunctionCode): number | undefined {
    const l = this.arch.liveness;
    if (!l) return undefined;
    this.clobbers ??= clobberSets(this.model.functions, l, (a) => this.model.functionAt(a), this.model.jumpTables);
    return this.clobbers.get(fn.name);
  }

  private readonly computing = new Set<string>();

  liveOf(fn: FunctionCode): Uint32Array | undefined {
    const l = this.arch.liveness;
    if (!l) return undefined;
    let live = this.lives.get(fn.name);
    if (!live) {
      this.computing.add(fn.name);
      live = liveIn(this.cfgOf(fn), l, {
        clobberOf: (target) => {
          const callee = this.model.functionAt(target);
          return callee ? this.clobberOf(callee) : undefined;
        },
        liveAtEntryOf: (target) => {
          const callee = this.model.functionAt(target);
          // Recursion (a callee whose liveness is being computed): the convention's answer.
          if (!callee || this.computing.has(callee.name) || callee.undecodable) return undefined;
          const cl = this.liveOf(callee);
          return cl && cl.length > 0 ? cl[0] : undefined;
        },
      });
      this.computing.delete(fn.name);
      this.lives.set(fn.name, live);
    }
    return live;
  }

  /** Registers callers keep live across a call of `fn` (keptRegisters.ts), when liveness is known. */
  keptOf(fn: FunctionCode): KeptAcrossCalls | undefined {
    const l = this.arch.liveness;
    if (!l) return undefined;
    let k = this.kept.get(fn.name);
    if (!k) {
      k = keptAcrossCalls(fn, {
        // Every caller-saved register but the link: the stubs give back those they use, and the
        // patch and the jump back must avoid all of them.
        registers: (l.callDefs & ~(1 << this.standardLink)) >>> 0,
        clobberOf: (f) => this.clobberOf(f),
        callSitesOf: (f) => this.model.callSitesOf(f),
        partOfCaller: (site) => this.linkAt(site.address) !== this.standardLink,
        functionContaining: (a) => this.model.functionContaining(a),
        liveOf: (f) => this.liveOf(f),
        cfgOf: (f) => this.cfgOf(f),
      }) ?? { kept: 0, where: new Map() };
      this.kept.set(fn.name, k);
    }
    return k;
  }

  private readonly kept = new Map<string, KeptAcrossCalls>();

  /**
   * Registers a function-entry patch and its stub may leave changed: the ones the convention makes
   * dead at every entry (RV32 t0-t6), then caller-saved ones the function does not read before
   * writing them, minus what callers keep across the call.
   */
  private entryFree(fn: FunctionCode, kept: number, link: number): number {
    const l = this.arch.liveness;
    let free = this.arch.freeAtEntry;
    const live = this.liveOf(fn);
    const i = this.cfgOf(fn).index.get(fn.start);
    if (l && live && i !== undefined) free |= l.callDefs & ~live[i]! & ~l.reserved & ~(1 << this.standardLink);
    // Millicode runs inside its caller's prologue: that caller's arguments are live, and so is the link.
    if (link !== this.standardLink) free &= ~(1 << link) & ~(l?.callUses ?? 0);
    return (free & ~kept) >>> 0;
  }

  /** Registers dead at `address` in `fn` (liveness over its CFG), 0 when unknown. */
  private freeAt(fn: FunctionCode, address: number): number {
    const l = this.arch.liveness;
    const live = this.liveOf(fn);
    const i = this.cfgOf(fn).index.get(address);
    if (!l || !live || i === undefined) return 0;
    return (~live[i]! & ~l.reserved & l.all) >>> 0;
  }

  /**
   * Call-site stubs (and the tp dispatcher before them) leave t-registers (and at exit a2-a5)
   * changed and do not give them back: a caller that keeps a value in one across a call of `fn`
   * (-fipa-ra) refuses call-site measurement.
   */
  private ipaHazard(fn: FunctionCode): InjectionRefusal | undefined {
    const k = this.keptOf(fn);
    const l = this.arch.liveness;
    if (!k || !l || (k.kept & l.stubClobbers) === 0) return undefined;
    const [reg, at] = [...k.where.entries()]
      .filter(([r]) => (l.stubClobbers & (1 << r)) !== 0)
      .sort((x, y) => x[0] - y[0])[0]!;
    return refusal(
      'noFreeRegister',
      `${at.caller} keeps a value in x${reg} across the ${at.site.mnemonic} at ${hex(at.site.address)} ` +
        `to ${fn.name} (the compiler knows ${fn.name} never writes x${reg}: -fipa-ra), and the ` +
        `call-site stubs do not give registers back (entry patches do, where one fits). Its ` +
        `instructions count in its callers' inclusive time.`,
      at.site.address,
    );
  }

  cfgOf(fn: FunctionCode): FunctionCfg {
    let cfg = this.cfgs.get(fn.name);
    if (!cfg) {
      cfg = buildCfg(
        fn,
        this.model.jumpTables.filter((t) => t.function === fn.name),
        this.arch.predicated?.(fn),
      );
      this.cfgs.set(fn.name, cfg);
    }
    return cfg;
  }

  private touchedBy(insns: readonly DecodedInstruction[]): number {
    const l = this.arch.liveness;
    if (!l) return 0;
    return insns.reduce((m, x) => {
      const e = l.effects(x);
      return (m | e.uses | e.defs) >>> 0;
    }, 0);
  }

  private writtenBy(insns: readonly DecodedInstruction[]): number {
    const l = this.arch.liveness;
    if (!l) return 0;
    return insns.reduce((m, x) => (m | l.effects(x).defs) >>> 0, 0);
  }

  /** The family's preferred registers first (temporaries), then any other free register. */
  private pickResumeRegister(free: number): number | undefined {
    if (!this.arch.liveness) return undefined;
    for (const r of this.arch.liveness.resumeRegisterPreference) if (free & (1 << r)) return r;
    for (let r = 1; r < 32; r++) if (free & (1 << r) && !(this.arch.liveness.reserved & (1 << r))) return r;
    return undefined;
  }

  /** The link register of the call at `address` (the standard one for anything else). */
  private linkAt(address: number): number {
    const insn = this.model.instructionAt(address);
    return (insn && insn.kind === 'call' ? this.arch.linkRegister(insn) : undefined) ?? this.standardLink;
  }

  private get standardLink(): number {
    return this.arch.returnAddressRegister;
  }
}

export { reachableDisplaced } from './planSupport';
