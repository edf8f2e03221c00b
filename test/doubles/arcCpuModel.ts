import { ArcPctModel, IllegalAuxRegister } from './arcPctModel';

/**
 * TEST DOUBLE — a trivial, deterministic ARCv2 "CPU" that gives the PCT model something to count.
 * It does not decode ARC instructions. The program it runs is a loop of 4-byte slots:
 *
 *   loopStart, loopStart+4, …, loopEnd      (loopEnd is the loop's back branch to loopStart)
 *
 * and the kind of each slot, with the countable conditions it raises, is fixed by its position:
 *
 *   slot k = (pc - loopStart) / 4   kind     conditions raised when it executes
 *   pc == loopEnd                    branch   crun 2, iall 1, ijmp 1, ijmptak 1, bpok 1; r0 += 1
 *   k % 4 == 1                       load     crun 1, iall 1, imemrdc 1
 *   k % 4 == 2                       store    crun 1, iall 1, imemwrc 1
 *   otherwise                        alu      crun 1, iall 1
 *
 * A PC outside the loop executes as `alu` and falls through (pc += 4). Caches and TLBs are warm:
 * dclm, dcsm, icm, edtlb, eitlb, bpfail, bpmp, bflush and bstall never occur.
 *
 * Run control: `resume('step')` executes one instruction. `resume('continue')` executes until the
 * PC reaches a breakpoint address (checked before each instruction except the first, so continuing
 * from a breakpoint leaves it) or until `maxInstructionsPerResume` instructions have run (the
 * "fixed budget"; the stop is then reported like an interrupt). The PCT counts everything executed
 * during a resume, with the configuration it had when the resume began (the debugger cannot change
 * it while the core runs).
 */

export type InstructionKind = 'alu' | 'load' | 'store' | 'branch';

export interface ArcProgram {
  loopStart: number;
  /** Address of the back branch (last slot of the loop). */
  loopEnd: number;
  /** Initial PC (default loopStart). */
  entry?: number;
}

export interface ArcCpuOptions {
  program?: ArcProgram;
  maxInstructionsPerResume?: number;
}

export interface ResumeResult {
  reason: 'step' | 'breakpoint' | 'budget';
  instructions: number;
  /** What this resume raised, per condition name (ground truth for tests). */
  raised: Map<string, bigint>;
}

export const DEFAULT_PROGRAM: ArcProgram = { loopStart: 0x1000, loopEnd: 0x103c };

/** Remote-protocol register numbers the double's target description assigns (see arcTargetXml.ts). */
export const REG = {
  R0: 0,
  GP: 26,
  FP: 27,
  SP: 28,
  ILINK: 29,
  R30: 30,
  BLINK: 31,
  LP_COUNT: 32,
  PCL: 33,
  PC: 34,
  STATUS32: 35,
  LP_START: 36,
  LP_END: 37,
  BTA: 38,
  /** Registers 0..38 travel in the `g` packet; PCT registers (39..) only through `p`/`P`. */
  G_PACKET_COUNT: 39,
} as const;

/** Aux register numbers of the non-PCT registers the double answers through `arc jtag get-aux-reg`. */
const AUX_LP_START = 0x2;
const AUX_LP_END = 0x3;
const AUX_PC = 0x6;
const AUX_STATUS32 = 0xa;
const AUX_BTA = 0x412;

const PAGE = 4096;

export class ArcCpuModel {
  /** r0..r31 (r26 gp, r27 fp, r28 sp, r29 ilink, r31 blink). */
  readonly core = new Uint32Array(32);
  lpCount = 0;
  pc: number;
  status32 = 0;
  lpStart = 0;
  lpEnd = 0;
  bta = 0;
  readonly breakpoints = new Set<number>();
  /** Every condition ever raised since construction: the ground truth tests compare with. */
  readonly totals = new Map<string, bigint>();
  readonly program: ArcProgram;
  readonly maxInstructionsPerResume: number;
  private readonly pages = new Map<number, Uint8Array>();

  constructor(
    readonly pct: ArcPctModel,
    options: ArcCpuOptions = {},
  ) {
    this.program = options.program ?? DEFAULT_PROGRAM;
    if (this.program.loopEnd < this.program.loopStart || (this.program.loopEnd - this.program.loopStart) % 4 !== 0) {
      throw new Error('loopEnd must be loopStart + 4k');
    }
    this.maxInstructionsPerResume = options.maxInstructionsPerResume ?? 1_000_000;
    this.pc = this.program.entry ?? this.program.loopStart;
    this.core[28] = 0x8000; // sp
  }

  kindAt(pc: number): InstructionKind {
    const { loopStart, loopEnd } = this.program;
    if (pc === loopEnd) return 'branch';
    if (pc < loopStart || pc > loopEnd) return 'alu';
    const k = ((pc - loopStart) >>> 2) % 4;
    return k === 1 ? 'load' : k === 2 ? 'store' : 'alu';
  }

  /** The conditions one instruction of `kind` raises (the table in the header comment). */
  static conditionsOf(kind: InstructionKind): Record<string, number> {
    switch (kind) {
      case 'branch':
        return { crun: 2, iall: 1, ijmp: 1, ijmptak: 1, bpok: 1 };
      case 'load':
        return { crun: 1, iall: 1, imemrdc: 1 };
      case 'store':
        return { crun: 1, iall: 1, imemwrc: 1 };
      case 'alu':
        return { crun: 1, iall: 1 };
    }
  }

  resume(mode: 'continue' | 'step'): ResumeResult {
    const raised = new Map<string, bigint>();
    const limit = mode === 'step' ? 1 : this.maxInstructionsPerResume;
    let executed = 0;
    let reason: ResumeResult['reason'] = mode === 'step' ? 'step' : 'budget';
    while (executed < limit) {
      if (executed > 0 && this.breakpoints.has(this.pc)) {
        reason = 'breakpoint';
        break;
      }
      this.execute(raised);
      executed++;
    }
    if (mode === 'continue' && reason === 'budget' && this.breakpoints.has(this.pc)) reason = 'breakpoint';
    this.pct.count(raised);
    for (const [name, n] of raised) this.totals.set(name, (this.totals.get(name) ?? 0n) + n);
    return { reason, instructions: executed, raised };
  }

  private execute(raised: Map<string, bigint>): void {
    const kind = this.kindAt(this.pc);
    for (const [name, n] of Object.entries(ArcCpuModel.conditionsOf(kind)))
      raised.set(name, (raised.get(name) ?? 0n) + BigInt(n));
    if (kind === 'branch') {
      this.core[0] = (this.core[0]! + 1) >>> 0;
      this.bta = this.program.loopStart;
      this.pc = this.program.loopStart;
    } else {
      this.pc = (this.pc + 4) >>> 0;
    }
  }

  // ---- registers by remote-protocol number ---------------------------------------------------

  readRegister(n: number): number {
    if (n >= 0 && n < 32) return this.core[n]!;
    switch (n) {
      case REG.LP_COUNT:
        return this.lpCount;
      case REG.PCL:
        return (this.pc & ~3) >>> 0;
      case REG.PC:
        return this.pc;
      case REG.STATUS32:
        return this.status32;
      case REG.LP_START:
        return this.lpStart;
      case REG.LP_END:
        return this.lpEnd;
      case REG.BTA:
        return this.bta;
      default:
        throw new RangeError(`no register ${n}`);
    }
  }

  writeRegister(n: number, value: number): void {
    const v = value >>> 0;
    if (n >= 0 && n < 32) {
      this.core[n] = v;
      return;
    }
    switch (n) {
      case REG.LP_COUNT:
        this.lpCount = v;
        return;
      case REG.PCL:
        return; // read-only
      case REG.PC:
        this.pc = v & ~1;
        return;
      case REG.STATUS32:
        this.status32 = v;
        return;
      case REG.LP_START:
        this.lpStart = v;
        return;
      case REG.LP_END:
        this.lpEnd = v;
        return;
      case REG.BTA:
        this.bta = v;
        return;
      default:
        throw new RangeError(`no register ${n}`);
    }
  }

  // ---- aux registers by number (what `lr`/`sr` and OpenOCD's `arc jtag` reach) ----------------

  readAux(aux: number): number {
    switch (aux) {
      case AUX_PC:
        return this.pc;
      case AUX_STATUS32:
        return this.status32;
      case AUX_LP_START:
        return this.lpStart;
      case AUX_LP_END:
        return this.lpEnd;
      case AUX_BTA:
        return this.bta;
    }
    if (this.pct.handles(aux)) return this.pct.read(aux);
    throw new IllegalAuxRegister(aux);
  }

  writeAux(aux: number, value: number): void {
    switch (aux) {
      case AUX_PC:
        this.pc = (value >>> 0) & ~1;
        return;
      case AUX_STATUS32:
        this.status32 = value >>> 0;
        return;
      case AUX_LP_START:
        this.lpStart = value >>> 0;
        return;
      case AUX_LP_END:
        this.lpEnd = value >>> 0;
        return;
      case AUX_BTA:
        this.bta = value >>> 0;
        return;
    }
    if (this.pct.handles(aux)) {
      this.pct.write(aux, value);
      return;
    }
    throw new IllegalAuxRegister(aux);
  }

  // ---- memory (sparse, zero-filled) ----------------------------------------------------------

  readMemory(address: number, length: number): Uint8Array {
    const out = new Uint8Array(length);
    for (let i = 0; i < length; i++) {
      const a = (address + i) >>> 0;
      out[i] = this.pages.get(Math.floor(a / PAGE))?.[a % PAGE] ?? 0;
    }
    return out;
  }

  writeMemory(address: number, data: Uint8Array): void {
    for (let i = 0; i < data.length; i++) {
      const a = (address + i) >>> 0;
      const key = Math.floor(a / PAGE);
      let page = this.pages.get(key);
      if (!page) {
        page = new Uint8Array(PAGE);
        this.pages.set(key, page);
      }
      page[a % PAGE] = data[i]!;
    }
  }
}
