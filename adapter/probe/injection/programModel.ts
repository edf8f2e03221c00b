import { DecodeError, type DecodedInstruction } from '../../arch/codec';
import type { ElfImage, ElfSymbol } from '../../elf';
import type { BranchEdge, CallSite, FunctionCode, InjectionArch, JumpTableInfo } from './types';

/**
 * Static disassembly of a whole program: every sized function symbol of a code section is decoded
 * linearly (data islands skipped by mapping symbols $d / inline table sizes), direct branch, call
 * and jump-table edges are indexed by target, and indirect calls are listed. The planner asks it
 * "does anything branch into these bytes?" and "who calls this function?".
 */
export class ProgramModel {
  readonly functions: FunctionCode[] = [];
  readonly jumpTables: JumpTableInfo[] = [];
  /** Addresses of indirect calls (function pointers): targets unknown. */
  readonly indirectCalls: number[] = [];
  private readonly byName = new Map<string, FunctionCode>();
  private readonly byStart = new Map<number, FunctionCode>();
  private readonly insnAt = new Map<number, { insn: DecodedInstruction; fn: FunctionCode }>();
  private readonly edgesByTarget = new Map<number, BranchEdge[]>();
  private readonly sortedTargets: number[];

  constructor(
    readonly elf: ElfImage,
    readonly arch: InjectionArch,
  ) {
    const codeSections = new Set(elf.sections.filter((s) => (s.flags & 0x4) !== 0).map((s) => s.index));
    const dataIslands = this.dataIslands(codeSections);
    const code = elf.symbols.functions.filter((sym) => codeSections.has(sym.sectionIndex));
    let sizedEnd = 0;
    for (const [i, sym] of code.entries()) {
      // Hand-written assembly often has no `.size` (newlib's Arm memchr): such a function runs to the
      // next function or its section's end, unless it is a label inside a sized function's code.
      const end = sym.size > 0 ? sym.address + sym.size : sym.address < sizedEnd ? undefined : this.unsizedEnd(code, i);
      if (sym.size > 0) sizedEnd = Math.max(sizedEnd, end!);
      if (end === undefined || end <= sym.address) continue;
      const fn = this.decodeFunction(sym.name, sym.address, end, dataIslands);
      this.functions.push(fn);
      this.byStart.set(fn.start, fn);
      for (const alias of elf.symbols.aliasesAt(sym.address))
        if (!this.byName.has(alias.name)) this.byName.set(alias.name, fn);
      for (const insn of fn.instructions) this.insnAt.set(insn.address, { insn, fn });
    }
    for (const fn of this.functions) this.indexEdges(fn);
    this.sortedTargets = [...this.edgesByTarget.keys()].sort((a, b) => a - b);
  }

  /**
   * A function by name; `name@0xADDRESS` (how the call graph tells apart static functions of
   * different files that share a name) names the one that starts there.
   */
  functionNamed(name: string): FunctionCode | undefined {
    const named = this.byName.get(name);
    if (named) return named;
    const m = /^(.+)@0x([0-9a-f]+)$/i.exec(name);
    const at = m ? this.byStart.get(parseInt(m[2]!, 16)) : undefined;
    return at && this.elf.symbols.aliasesAt(at.start).some((a) => a.name === m![1]) ? at : undefined;
  }

  /** Where an unsized function ends: at the next function of its section, else at the section's end. */
  private unsizedEnd(code: readonly ElfSymbol[], i: number): number | undefined {
    const sym = code[i]!;
    const next = code.slice(i + 1).find((s) => s.sectionIndex === sym.sectionIndex && s.address > sym.address);
    if (next) return next.address;
    const section = this.elf.sections.find((sec) => sec.index === sym.sectionIndex);
    return section ? section.addr + section.size : undefined;
  }

  functionAt(start: number): FunctionCode | undefined {
    return this.byStart.get(start);
  }

  functionContaining(address: number): FunctionCode | undefined {
    return this.insnAt.get(address)?.fn ?? this.functions.find((f) => address >= f.start && address < f.end);
  }

  instructionAt(address: number): DecodedInstruction | undefined {
    return this.insnAt.get(address)?.insn;
  }

  /** Every static edge whose target lies strictly inside (start, end). */
  edgesInto(start: number, end: number): BranchEdge[] {
    const out: BranchEdge[] = [];
    let lo = 0;
    let hi = this.sortedTargets.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.sortedTargets[mid]! <= start) lo = mid + 1;
      else hi = mid;
    }
    for (let i = lo; i < this.sortedTargets.length && this.sortedTargets[i]! < end; i++)
      out.push(...this.edgesByTarget.get(this.sortedTargets[i]!)!);
    return out;
  }

  edgesTo(target: number): BranchEdge[] {
    return this.edgesByTarget.get(target) ?? [];
  }

  /** Direct calls and tail jumps to `fn` from anywhere in the program. */
  callSitesOf(fn: FunctionCode): CallSite[] {
    const out: CallSite[] = [];
    for (const e of this.edgesTo(fn.start)) {
      const from = this.insnAt.get(e.from);
      if (!from) continue;
      if (e.kind === 'call') {
        out.push({
          address: e.from,
          length: from.insn.length,
          kind: 'call',
          caller: from.fn.name,
          mnemonic: from.insn.mnemonic,
        });
      } else if ((e.kind === 'branch' || e.kind === 'condBranch') && from.fn !== fn) {
        out.push({
          address: e.from,
          length: from.insn.length,
          kind: 'tail',
          caller: from.fn.name,
          mnemonic: from.insn.mnemonic,
        });
      }
    }
    return out.sort((a, b) => a.address - b.address);
  }

  /** Unresolved indirect jumps inside `fn` (their targets may be anywhere in it). */
  unresolvedTablesIn(fn: FunctionCode): JumpTableInfo[] {
    return this.jumpTables.filter((t) => t.function === fn.name && !t.resolved);
  }

  /** Whether any instruction of the program names `reg` (RV32: is tp free for the injector?). */
  referencesRegister(reg: number): boolean {
    const test = this.arch.referencesRegister;
    if (!test) return true;
    for (const fn of this.functions) for (const insn of fn.instructions) if (test(insn, reg)) return true;
    return false;
  }

  /** Bytes of the loaded image (what removal is verified against). */
  imageBytes(address: number, length: number): Uint8Array | undefined {
    return this.elf.file.readMemory(address, length);
  }

  private readWord = (address: number, bytes: 1 | 2 | 4): number | undefined => {
    const b = this.imageBytes(address, bytes);
    if (!b) return undefined;
    return bytes === 1
      ? b[0]!
      : bytes === 2
        ? b[0]! | (b[1]! << 8)
        : (b[0]! | (b[1]! << 8) | (b[2]! << 16) | (b[3]! << 24)) >>> 0;
  };

  /** Sorted [start, end) ranges of data inside code sections, from $d ... $t/$x mapping symbols. */
  private dataIslands(codeSections: ReadonlySet<number>): Array<[number, number]> {
    const marks = this.elf.symbols.symbols
      .filter((s) => codeSections.has(s.sectionIndex) && s.name.startsWith('$'))
      .map((s) => ({ address: s.address, kind: this.arch.mappingKind(s.name) }))
      .filter((m): m is { address: number; kind: 'code' | 'data' } => m.kind !== undefined)
      .sort((a, b) => a.address - b.address || (a.kind === 'data' ? 1 : -1));
    const out: Array<[number, number]> = [];
    for (let i = 0; i < marks.length; i++) {
      if (marks[i]!.kind !== 'data') continue;
      const next = marks.slice(i + 1).find((m) => m.kind === 'code');
      out.push([marks[i]!.address, next ? next.address : 0xffffffff]);
    }
    return out;
  }

  private decodeFunction(name: string, start: number, end: number, islands: Array<[number, number]>): FunctionCode {
    const fn: FunctionCode = { name, start, end, instructions: [] };
    const bytes = this.imageBytes(start, end - start);
    if (!bytes) {
      fn.undecodable = { address: start, reason: 'its code has no contents in the ELF file' };
      return fn;
    }
    let at = start;
    while (at < end) {
      const island = islands.find(([s, e]) => at >= s && at < e);
      if (island) {
        at = Math.min(end, island[1]);
        continue;
      }
      let insn: DecodedInstruction;
      try {
        insn = this.arch.codec.decode(bytes.subarray(at - start), at);
      } catch (err) {
        fn.undecodable = { address: at, reason: err instanceof DecodeError ? err.message : String(err) };
        break;
      }
      fn.instructions.push(insn);
      at += insn.length;
      if (insn.kind === 'tableBranch') {
        // Inline tables (TBB/TBH) follow the instruction: resolve now to know how many bytes to skip
        // when no mapping symbol marks them.
        const r = this.arch.resolveTable(fn, fn.instructions.length - 1, this.readWord);
        this.jumpTables.push(
          r.ok
            ? { branch: insn.address, function: name, resolved: true, table: r.table, targets: r.targets }
            : { branch: insn.address, function: name, resolved: false, targets: [], reason: r.reason },
        );
        if (r.ok && !islands.some(([s, e]) => r.table >= s && r.table < e)) {
          const width = insn.mnemonic === 'tbh' ? 2 : 1;
          at = Math.max(at, ((r.table + r.targets.length * width + 1) & ~1) >>> 0);
        } else if (!r.ok && !islands.some(([s]) => s === at)) {
          fn.undecodable = {
            address: at,
            reason:
              `the inline jump table after ${insn.mnemonic} at 0x${insn.address.toString(16)} could not ` +
              `be sized (${r.reason})`,
          };
          break;
        }
      }
    }
    return fn;
  }

  private indexEdges(fn: FunctionCode): void {
    fn.instructions.forEach((insn, index) => {
      if (insn.kind === 'indirectCall') this.indirectCalls.push(insn.address);
      if ((insn.kind === 'branch' || insn.kind === 'condBranch' || insn.kind === 'call') && insn.target !== undefined) {
        this.addEdge({ from: insn.address, target: insn.target, kind: insn.kind, mnemonic: insn.mnemonic });
      }
      if (insn.kind === 'indirectBranch') {
        const r = this.arch.resolveTable(fn, index, this.readWord);
        if (r.ok)
          this.jumpTables.push({
            branch: insn.address,
            function: fn.name,
            resolved: true,
            table: r.table,
            targets: r.targets,
          });
        else
          this.jumpTables.push({
            branch: insn.address,
            function: fn.name,
            resolved: false,
            targets: [],
            reason: r.reason,
            ...(r.switchShaped ? { switchShaped: true } : {}),
          });
      }
    });
    for (const t of this.jumpTables) {
      if (t.function !== fn.name) continue;
      for (const target of t.targets)
        this.addEdge({
          from: t.branch,
          target,
          kind: 'table',
          mnemonic: this.insnAt.get(t.branch)?.insn.mnemonic ?? 'table',
        });
    }
  }

  private addEdge(e: BranchEdge): void {
    const list = this.edgesByTarget.get(e.target);
    if (list) list.push(e);
    else this.edgesByTarget.set(e.target, [e]);
  }
}
