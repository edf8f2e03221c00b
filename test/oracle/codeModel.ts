import { ElfImage } from '../../adapter/elf';
import { ToolTarget, disassemble } from './binutils';
import { Architecture, Flow, FlowKind, classify } from './controlFlow';
import { parseObjdump } from './disassembly';

/** A function as the oracle attributes instructions to it. */
export interface CodeFunction {
  name: string;
  /** Entry address: a branch here from another function is a (tail) call. */
  start: number;
  /** One past the last byte. */
  end: number;
  /** Other symbols naming the same entry (weak aliases). */
  aliases?: string[];
}

export interface CodeInstruction {
  address: number;
  size: number;
  kind: FlowKind;
  /** Direct branch/call target. */
  target?: number;
}

/** Name of the pseudo-function that owns PCs outside every known function (e.g. QEMU's reset ROM). */
export const OUTSIDE = '[outside program]';

/** Bytes of address space one lookup table may span before a new table starts. */
const CLUSTER_GAP = 64 * 1024;

/** A dense table from (pc - base) / 2 to instruction index + 1, for one stretch of code. */
export interface AddressCluster {
  base: number;
  limit: number;
  table: Int32Array;
}

/**
 * Everything the trace analyser needs to know about the program's code, in flat typed arrays
 * indexed by instruction: address, size, control-flow kind, direct target, owning function and
 * the address of the next instruction when control falls through. Built from an ELF and its
 * `objdump -d`, or by hand in unit tests.
 */
export class CodeModel {
  readonly functions: CodeFunction[];
  /** Function id of OUTSIDE. */
  readonly outsideId: number;
  address: Uint32Array;
  size: Uint8Array;
  kind: Uint8Array;
  target: Float64Array;
  fn: Int32Array;
  /**
   * The PC that follows if the instruction does not transfer control, or -1 to force the
   * analyser to look at every successor (calls: a call to the very next instruction is still a call).
   */
  fallNext: Float64Array;
  /** 1 when the instruction is the first of an exception or interrupt handler. */
  handlerEntry: Uint8Array;
  count: number;
  readonly clusters: AddressCluster[] = [];
  private readonly extra = new Map<number, number>();
  private readonly entryOf: Float64Array;
  private readonly sortedFunctions: number[];

  constructor(
    instructions: readonly CodeInstruction[],
    functions: readonly CodeFunction[],
    handlerEntries: Iterable<number> = [],
  ) {
    this.functions = functions.map((f) => ({ ...f }));
    this.outsideId = this.functions.length;
    this.functions.push({ name: OUTSIDE, start: 0, end: 0 });
    this.sortedFunctions = this.functions
      .map((_, i) => i)
      .filter((i) => i !== this.outsideId)
      .sort((a, b) => this.functions[a]!.start - this.functions[b]!.start);
    this.entryOf = Float64Array.from(this.functions, (f) => (f.name === OUTSIDE ? -1 : f.start));

    const sorted = [...instructions].sort((a, b) => a.address - b.address);
    const capacity = sorted.length + 256;
    this.address = new Uint32Array(capacity);
    this.size = new Uint8Array(capacity);
    this.kind = new Uint8Array(capacity);
    this.target = new Float64Array(capacity).fill(-1);
    this.fn = new Int32Array(capacity);
    this.fallNext = new Float64Array(capacity);
    this.handlerEntry = new Uint8Array(capacity);
    this.count = 0;
    for (const insn of sorted)
      this.append(insn.address, insn.size, insn.kind, insn.target ?? -1, this.functionIdOf(insn.address));
    this.buildClusters(sorted);
    for (const h of handlerEntries) {
      const i = this.indexOf(h);
      if (i >= 0) this.handlerEntry[i] = 1;
    }
  }

  /** Reads the ELF with adapter/elf and classifies every instruction `objdump -d` lists. */
  static fromElf(elfPath: string, target: ToolTarget, options: { handlers?: string[] } = {}): CodeModel {
    const img = ElfImage.loadSync(elfPath);
    const arch: Architecture = target === 'rv32' ? 'riscv' : 'arm';
    const disassembled = parseObjdump(disassemble(target, elfPath)).filter((d) => img.isCode(d.address));
    const instructions: CodeInstruction[] = disassembled.map((d) => ({
      address: d.address,
      size: d.size,
      kind: classify(arch, d),
      target: d.target,
    }));

    // Owner of each instruction: the sized function symbol that covers it, else the nearest
    // code label before it (assembly without .type/.size), else nothing.
    const owners = new Map<string, CodeFunction>();
    for (const insn of instructions) {
      const sym = img.functionContaining(insn.address) ?? img.symbols.codeLabelAtOrBefore(insn.address);
      if (!sym) continue;
      const key = `${sym.name}@${sym.address}`;
      const f = owners.get(key);
      const end = insn.address + insn.size;
      if (f) f.end = Math.max(f.end, end, sym.address + sym.size);
      else
        owners.set(key, {
          name: sym.name,
          start: sym.address,
          end: Math.max(end, sym.address + sym.size),
          aliases: img.symbols
            .aliasesAt(sym.address)
            .map((s) => s.name)
            .filter((n) => n !== sym.name),
        });
    }
    const functions = [...owners.values()].sort((a, b) => a.start - b.start);

    const handlers = new Set<number>(arch === 'arm' ? cortexMHandlers(img) : riscvHandlers(functions, instructions));
    for (const name of options.handlers ?? []) {
      const sym = img.functionNamed(name) ?? img.symbols.named(name)[0];
      if (!sym) throw new Error(`--handler ${name}: no such symbol in ${elfPath}`);
      handlers.add(sym.address);
    }
    return new CodeModel(instructions, functions, handlers);
  }

  /** Index of the instruction at `pc`, or -1. */
  indexOf(pc: number): number {
    for (const c of this.clusters) {
      if (pc >= c.base && pc < c.limit) {
        const v = c.table[(pc - c.base) >>> 1]!;
        if (v !== 0 && this.address[v - 1] === pc) return v - 1;
        break;
      }
    }
    return this.extra.get(pc) ?? -1;
  }

  /** Index of the instruction at `pc`, adding an Unknown one if the disassembly did not list it. */
  indexOrAdd(pc: number): number {
    const i = this.indexOf(pc);
    if (i >= 0) return i;
    const idx = this.append(pc, 0, Flow.Unknown, -1, this.functionIdOf(pc));
    this.extra.set(pc, idx);
    return idx;
  }

  entry(fn: number): number {
    return this.entryOf[fn]!;
  }

  /** The function whose [start, end) holds `address`, else OUTSIDE. */
  functionIdOf(address: number): number {
    const order = this.sortedFunctions;
    let lo = 0;
    let hi = order.length - 1;
    let found = -1;
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1;
      if (this.functions[order[mid]!]!.start <= address) {
        found = mid;
        lo = mid + 1;
      } else {
        hi = mid - 1;
      }
    }
    for (let i = found; i >= 0 && i > found - 4; i--) {
      const f = this.functions[order[i]!]!;
      if (address < f.end) return order[i]!;
    }
    return this.outsideId;
  }

  private append(address: number, size: number, kind: FlowKind, target: number, fn: number): number {
    if (this.count === this.address.length) this.grow();
    const i = this.count++;
    this.address[i] = address;
    this.size[i] = size;
    this.kind[i] = kind;
    this.target[i] = target;
    this.fn[i] = fn;
    this.fallNext[i] = kind === Flow.Call || kind === Flow.IndirectCall || size === 0 ? -1 : address + size;
    return i;
  }

  private grow(): void {
    const n = this.address.length * 2;
    const copy = <T extends Uint32Array | Uint8Array | Float64Array | Int32Array>(a: T, make: (n: number) => T): T => {
      const b = make(n);
      b.set(a);
      return b;
    };
    this.address = copy(this.address, (k) => new Uint32Array(k));
    this.size = copy(this.size, (k) => new Uint8Array(k));
    this.kind = copy(this.kind, (k) => new Uint8Array(k));
    this.target = copy(this.target, (k) => new Float64Array(k));
    this.fn = copy(this.fn, (k) => new Int32Array(k));
    this.fallNext = copy(this.fallNext, (k) => new Float64Array(k));
    this.handlerEntry = copy(this.handlerEntry, (k) => new Uint8Array(k));
  }

  private buildClusters(sorted: readonly CodeInstruction[]): void {
    let start = 0;
    for (let i = 1; i <= sorted.length; i++) {
      if (i < sorted.length && sorted[i]!.address - (sorted[i - 1]!.address + sorted[i - 1]!.size) < CLUSTER_GAP)
        continue;
      if (i > start) {
        const base = sorted[start]!.address & ~1;
        const last = sorted[i - 1]!;
        const limit = last.address + Math.max(2, last.size);
        const table = new Int32Array(((limit - base) >>> 1) + 1);
        for (let k = start; k < i; k++) table[(sorted[k]!.address - base) >>> 1] = k + 1;
        this.clusters.push({ base, limit, table });
      }
      start = i;
    }
  }
}

/**
 * Cortex-M handlers: the words of the vector table that QEMU boots from (word 1 is the reset
 * handler, the entry point with the Thumb bit). Entries 2.. that point at code are handlers.
 */
function cortexMHandlers(img: ElfImage): number[] {
  const wanted = (img.header.entry | 1) >>> 0;
  for (const s of img.sections) {
    if ((s.flags & 2) === 0 || s.type === 8 || s.size < 8) continue;
    const data = img.file.sectionData(s);
    const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
    for (let off = 0; off + 8 <= data.length; off += 4) {
      if (view.getUint32(off + 4, true) !== wanted) continue;
      const handlers: number[] = [];
      for (let k = off + 8; k + 4 <= data.length && k < off + 4 * 256; k += 4) {
        const v = view.getUint32(k, true);
        if (v === 0) continue;
        if ((v & 1) === 0 || !img.isCode(v - 1)) break;
        handlers.push(v - 1);
      }
      return handlers;
    }
  }
  return [];
}

/** RISC-V trap handlers (direct mode): functions that contain an MRET/SRET. */
function riscvHandlers(functions: readonly CodeFunction[], instructions: readonly CodeInstruction[]): number[] {
  const entries = new Set<number>();
  for (const insn of instructions) {
    if (insn.kind !== Flow.ExceptionReturn) continue;
    const f = functions.find((fn) => insn.address >= fn.start && insn.address < fn.end);
    if (f) entries.add(f.start);
  }
  return [...entries];
}
