import type { TargetAccess } from '../../probe/targetAccess';
import type {
  InterruptSamplerArch,
  InterruptSamplerPlan,
  InterruptSamplerRequest,
  SavedState,
} from '../../sampling/interruptTypes';
import {
  Csr,
  encodeAddi,
  encodeBranch,
  encodeCsr,
  encodeCsrImmediate,
  encodeJal,
  encodeJalr,
  encodeLui,
  encodeLw,
  encodeSw,
  splitHiLo,
  word32,
  ZERO,
} from './rvEncoder';

/**
 * The interrupt sampler on RV32 QEMU `virt` (docs/design.md, "The interrupt sampler").
 *
 * Timer: the Goldfish RTC (0x101000, PLIC source 11), not the CLINT. The firmware keeps mtimecmp
 * and its machine-timer interrupt to itself; sharing one compare register would mean catching
 * the firmware's own writes to it, which a handler cannot see. QEMU runs the RTC on the virtual
 * clock with `-rtc clock=vm` (the RV32 plugin's QEMU arguments), so under `-icount` an alarm
 * fires after an exact number of instructions. Its counter is in ns: one instruction at shift 0.
 *
 * Hook: mtvec points at the sampler's entry (direct mode). On the RTC's interrupt it counts mepc
 * and re-arms; on anything else it jumps to the firmware's vector unchanged, every register as it
 * was (t0 is swapped with mscratch, which the sampler owns while it runs; a firmware that uses
 * mscratch is refused). Vectored firmware vectors are followed per cause.
 *
 * Interrupt handlers are sampled too: on the firmware's interrupts the entry saves mepc and
 * mstatus, masks mie to the external interrupt and the PLIC threshold to the sampler's priority,
 * sets MIE and enters the firmware's handler with mepc pointing at an exit stub. The firmware's
 * mret lands there; the stub puts mepc, mstatus, mie and the threshold back and returns where the
 * firmware was interrupted. A sample taken inside the handler returns to it through a jump the
 * handler writes (mepc must keep pointing at the exit stub).
 */

const PLIC = 0x0c00_0000;
const PLIC_PENDING = PLIC + 0x1000;
const PLIC_ENABLE_M0 = PLIC + 0x2000;
const PLIC_THRESHOLD_M0 = PLIC + 0x20_0000;
const RTC = 0x0010_1000;
const RTC_SOURCE = 11;
const RTC_PRIORITY = 7;
const Rtc = {
  timeLow: 0x00,
  timeHigh: 0x04,
  alarmLow: 0x08,
  alarmHigh: 0x0c,
  irqEnabled: 0x10,
  clearAlarm: 0x14,
  clearInterrupt: 0x1c,
} as const;

const CSR = { ...Csr, mtvec: 0x305, mie: 0x304, mcause: 0x342, mtval: 0x343 } as const;
const MIE_MEIE = 0x800;
/** mcause's code of a machine external interrupt. */
const MEI_CODE = 11;
const MSTATUS_MIE = 0x8;
const MSTATUS_MPIE = 0x80;
const MSTATUS_MPP = 0x1800;

// Registers (x numbers).
const T0 = 5;
const T1 = 6;
const T2 = 7;
const T3 = 28;
const T4 = 29;

/** The state block at the start of the area (byte offsets). */
const S = {
  t1: 0,
  t2: 4,
  t3: 8,
  t4: 12,
  nested: 16,
  savedEpc: 20,
  savedStatus: 24,
  savedMie: 28,
  savedThreshold: 32,
  lfsr: 36,
  taps: 40,
  mask: 44,
  period: 48,
  textBase: 52,
  shift: 56,
  buckets: 60,
  nestedSamples: 64,
  jumpSlot: 68,
  savedCause: 72,
  savedTval: 76,
  /** The start of the current sampling interval on the RTC's clock (64 bits). */
  baseLow: 80,
  baseHigh: 84,
  offset: 88,
  nowLow: 92,
  nowHigh: 96,
  minGap: 100,
} as const;
const CODE_AT = 128;
/** `jal`'s reach: +/-1 MiB. */
const JAL_REACH = 1 << 20;
/** Below 2048: the bucket update addresses it as a 12-bit load/store offset from the state block. */
const BUCKETS_AT = 1984;
/** A maximal-length 32-bit Galois LFSR (taps 32, 22, 2, 1). */
const LFSR_TAPS = 0x8020_0003;

// ---- a small assembler: fixed-size words, labels resolved in a second pass -------------------
type Emit = (at: number, label: (n: string) => number) => Uint8Array;
class Asm {
  private readonly items: Emit[] = [];
  private readonly labels = new Map<string, number>();
  constructor(private readonly origin: number) {}
  get here(): number {
    return this.origin + 4 * this.items.length;
  }
  label(name: string): void {
    this.labels.set(name, this.here);
  }
  word(e: Emit | Uint8Array): void {
    this.items.push(e instanceof Uint8Array ? () => e : e);
  }
  words(...ws: Uint8Array[]): void {
    for (const w of ws) this.word(w);
  }
  /** rd = value, always two words (LUI + ADDI). */
  li(rd: number, value: number): void {
    const { hi, lo } = splitHiLo(value);
    this.words(encodeLui(rd, hi), encodeAddi(rd, rd, lo));
  }
  /** rd = address of a label, two words. */
  la(rd: number, name: string): void {
    this.word((_, l) => encodeLui(rd, splitHiLo(l(name)).hi));
    this.word((_, l) => encodeAddi(rd, rd, splitHiLo(l(name)).lo));
  }
  branch(cond: 'beq' | 'bne' | 'bltu', rs1: number, rs2: number, to: string): void {
    this.word((at, l) => encodeBranch(cond, rs1, rs2, at, l(to)));
  }
  j(to: string | number): void {
    this.word((at, l) => encodeJal(ZERO, at, typeof to === 'number' ? to : l(to)));
  }
  assemble(): { bytes: Uint8Array; labels: Map<string, number> } {
    const out = new Uint8Array(4 * this.items.length);
    const l = (n: string): number => {
      const a = this.labels.get(n);
      if (a === undefined) throw new Error(`interrupt sampler: no label ${n}`);
      return a;
    };
    this.items.forEach((e, i) => out.set(e(this.origin + 4 * i, l), 4 * i));
    return { bytes: out, labels: this.labels };
  }
}

const r = (funct7: number, rs2: number, rs1: number, funct3: number, rd: number): Uint8Array =>
  word32((funct7 << 25) | (rs2 << 20) | (rs1 << 15) | (funct3 << 12) | (rd << 7) | 0x33);
const add = (rd: number, a: number, b: number): Uint8Array => r(0, b, a, 0, rd);
const sub = (rd: number, a: number, b: number): Uint8Array => r(0x20, b, a, 0, rd);
const srl = (rd: number, a: number, b: number): Uint8Array => r(0, b, a, 5, rd);
const sltu = (rd: number, a: number, b: number): Uint8Array => r(0, b, a, 3, rd);
const xor = (rd: number, a: number, b: number): Uint8Array => r(0, b, a, 4, rd);
const or = (rd: number, a: number, b: number): Uint8Array => r(0, b, a, 6, rd);
const and = (rd: number, a: number, b: number): Uint8Array => r(0, b, a, 7, rd);
const iAlu = (funct3: number, rd: number, rs1: number, imm: number): Uint8Array =>
  word32(((imm & 0xfff) << 20) | (rs1 << 15) | (funct3 << 12) | (rd << 7) | 0x13);
const andi = (rd: number, rs1: number, imm: number): Uint8Array => iAlu(7, rd, rs1, imm);
const ori = (rd: number, rs1: number, imm: number): Uint8Array => iAlu(6, rd, rs1, imm);
const slli = (rd: number, rs1: number, sh: number): Uint8Array => iAlu(1, rd, rs1, sh);
const srli = (rd: number, rs1: number, sh: number): Uint8Array => iAlu(5, rd, rs1, sh);
const csrr = (rd: number, csr: number): Uint8Array => encodeCsr('csrrs', rd, csr, ZERO);
const csrw = (csr: number, rs: number): Uint8Array => encodeCsr('csrrw', ZERO, csr, rs);
const csrs = (csr: number, rs: number): Uint8Array => encodeCsr('csrrs', ZERO, csr, rs);
const csrc = (csr: number, rs: number): Uint8Array => encodeCsr('csrrc', ZERO, csr, rs);
const swapT0 = (): Uint8Array => encodeCsr('csrrw', T0, CSR.mscratch, T0);
const MRET = word32(0x3020_0073);
const FENCE_I = word32(0x0000_100f);

/** The handler for an area at `area`, entering the firmware's vectors at `fwVector` (mtvec as read). */
export function buildRv32Sampler(area: number, fwVector: number): { bytes: Uint8Array; entry: number; exit: number } {
  const a = new Asm(area + CODE_AT);
  const base = (fwVector & ~3) >>> 0;
  const vectored = (fwVector & 3) === 1;
  const restoreAndJump = (target: number, enableMie: boolean): void => {
    a.words(encodeLw(T2, T0, S.t2), encodeLw(T1, T0, S.t1), swapT0());
    if (enableMie) a.word(encodeCsrImmediate('csrrsi', ZERO, CSR.mstatus, MSTATUS_MIE));
    a.j(target);
  };
  /** To the firmware's vector for the cause in t1 (an interrupt when `interrupt`). */
  const toFirmware = (interrupt: boolean, enableMie: boolean): void => {
    if (!vectored || !interrupt) return restoreAndJump(base, enableMie);
    a.word(andi(T1, T1, 0x3f));
    for (let code = 0; code < 16; code++) {
      const next = `v${interrupt ? 1 : 0}${enableMie ? 1 : 0}_${code + 1}`;
      a.word(encodeAddi(T2, ZERO, code));
      a.branch('bne', T1, T2, next);
      restoreAndJump(base + 4 * code, enableMie);
      a.label(next);
    }
    restoreAndJump(base, enableMie);
  };

  // ---- entry: t0 <-> mscratch gives the state block --------------------------------------------
  a.label('entry');
  a.words(swapT0(), encodeSw(T1, T0, S.t1), encodeSw(T2, T0, S.t2), csrr(T1, CSR.mcause));
  a.word(srli(T2, T1, 31));
  a.branch('beq', T2, ZERO, 'exception');
  a.word(andi(T2, T1, 0x3f));
  a.word(encodeAddi(T2, T2, -MEI_CODE));
  a.branch('bne', T2, ZERO, 'irq');
  a.word(encodeLui(T2, PLIC_PENDING >>> 12));
  a.word(encodeLw(T2, T2, 0));
  a.word(srli(T2, T2, RTC_SOURCE));
  a.word(andi(T2, T2, 1));
  a.branch('bne', T2, ZERO, 'sample');
  a.label('irq');
  // A firmware interrupt: wrap its handler so the sampler can interrupt it (once; never nested twice).
  a.word(encodeLw(T2, T0, S.nested));
  a.branch('bne', T2, ZERO, 'plain');
  a.word(encodeAddi(T2, ZERO, 1));
  a.word(encodeSw(T2, T0, S.nested));
  a.words(csrr(T2, CSR.mepc), encodeSw(T2, T0, S.savedEpc), csrr(T2, CSR.mstatus), encodeSw(T2, T0, S.savedStatus));
  // A sample inside the handler traps again and overwrites mcause and mtval: kept to give back.
  a.words(encodeSw(T1, T0, S.savedCause), csrr(T2, CSR.mtval), encodeSw(T2, T0, S.savedTval));
  a.la(T2, 'exit');
  a.word(csrw(CSR.mepc, T2));
  a.li(T2, MSTATUS_MPP);
  a.word(csrs(CSR.mstatus, T2));
  a.word(encodeAddi(T2, ZERO, MSTATUS_MPIE));
  a.word(csrc(CSR.mstatus, T2));
  a.li(T2, MIE_MEIE);
  a.word(encodeCsr('csrrw', T2, CSR.mie, T2));
  a.word(encodeSw(T2, T0, S.savedMie));
  a.word(encodeSw(T3, T0, S.t3));
  a.word(encodeLui(T3, PLIC_THRESHOLD_M0 >>> 12));
  a.word(encodeLw(T2, T3, 0));
  a.word(encodeSw(T2, T0, S.savedThreshold));
  a.word(encodeAddi(T2, ZERO, RTC_PRIORITY - 1));
  a.word(encodeSw(T2, T3, 0));
  a.word(encodeLw(T3, T0, S.t3));
  a.word(csrr(T1, CSR.mcause));
  toFirmware(true, true);
  a.label('plain');
  toFirmware(true, false);
  a.label('exception');
  toFirmware(false, false);

  // ---- a sample ------------------------------------------------------------------------------
  a.label('sample');
  a.words(encodeSw(T3, T0, S.t3), encodeSw(T4, T0, S.t4));
  // Claim and complete the RTC's interrupt, and clear it at the RTC.
  a.word(encodeLui(T1, PLIC_THRESHOLD_M0 >>> 12));
  a.word(encodeLw(T2, T1, 4));
  a.word(encodeLui(T3, RTC >>> 12));
  a.word(encodeSw(ZERO, T3, Rtc.clearInterrupt));
  a.word(encodeSw(T2, T1, 4));
  // bucket = (mepc - textBase) >> shift, the last one for PCs outside the text.
  a.words(
    csrr(T1, CSR.mepc),
    encodeLw(T2, T0, S.textBase),
    sub(T1, T1, T2),
    encodeLw(T2, T0, S.shift),
    srl(T1, T1, T2),
    encodeLw(T2, T0, S.buckets),
  );
  a.branch('bltu', T1, T2, 'inside');
  a.word(add(T1, T2, ZERO));
  a.label('inside');
  a.words(
    slli(T1, T1, 2),
    add(T1, T1, T0),
    encodeLw(T2, T1, BUCKETS_AT),
    encodeAddi(T2, T2, 1),
    encodeSw(T2, T1, BUCKETS_AT),
  );
  // Next alarm: the next interval starts one period after this one, and the alarm falls at a
  // random offset (lfsr & mask) inside it, so every interval holds exactly one sample (stratified in
  // virtual time, never aliased with a loop of the same period). Never sooner than minGap from now:
  // an alarm due before the firmware resumes would interrupt this handler's own way back.
  a.words(encodeLw(T1, T0, S.lfsr), andi(T2, T1, 1), srli(T1, T1, 1));
  a.branch('beq', T2, ZERO, 'noTap');
  a.words(encodeLw(T2, T0, S.taps), xor(T1, T1, T2));
  a.label('noTap');
  a.words(encodeSw(T1, T0, S.lfsr), encodeLw(T2, T0, S.mask), and(T1, T1, T2), encodeSw(T1, T0, S.offset));
  // base += period (64 bits): t2 = low, t1 = high.
  a.words(
    encodeLw(T2, T0, S.baseLow),
    encodeLw(T4, T0, S.period),
    add(T2, T2, T4),
    sltu(T4, T2, T4),
    encodeLw(T1, T0, S.baseHigh),
    add(T1, T1, T4),
  );
  a.words(encodeSw(T2, T0, S.baseLow), encodeSw(T1, T0, S.baseHigh));
  // now (the low word first: reading it latches the high one); t4 = low, t3 = high.
  a.words(
    encodeLw(T4, T3, Rtc.timeLow),
    encodeLw(T3, T3, Rtc.timeHigh),
    encodeSw(T4, T0, S.nowLow),
    encodeSw(T3, T0, S.nowHigh),
  );
  // d = now - base: t3 = high, t4 = low. Base ahead of now (d < 0) or behind by less than one
  // period is the steady state; further behind (interrupts long masked), the intervals restart at now.
  a.words(sub(T3, T3, T1), sltu(T1, T4, T2), sub(T3, T3, T1), sub(T4, T4, T2));
  a.word(encodeAddi(T1, T3, 1));
  a.branch('beq', T1, ZERO, 'onTime');
  a.branch('bne', T3, ZERO, 'late');
  a.word(encodeLw(T1, T0, S.period));
  a.branch('bltu', T4, T1, 'onTime');
  a.label('late');
  a.words(
    encodeLw(T2, T0, S.nowLow),
    encodeLw(T1, T0, S.nowHigh),
    encodeSw(T2, T0, S.baseLow),
    encodeSw(T1, T0, S.baseHigh),
  );
  a.label('onTime');
  // alarm = base + offset.
  a.words(
    encodeLw(T2, T0, S.baseLow),
    encodeLw(T1, T0, S.baseHigh),
    encodeLw(T4, T0, S.offset),
    add(T2, T2, T4),
    sltu(T4, T2, T4),
    add(T1, T1, T4),
  );
  // soonest = now + minGap: t4 = high, t3 = low; the later of the two.
  a.words(
    encodeLw(T4, T0, S.nowLow),
    encodeLw(T3, T0, S.minGap),
    add(T4, T4, T3),
    sltu(T3, T4, T3),
    encodeSw(T4, T0, S.nowLow),
  );
  a.words(encodeLw(T4, T0, S.nowHigh), add(T4, T4, T3), encodeLw(T3, T0, S.nowLow));
  a.branch('bltu', T1, T4, 'soonest');
  a.branch('bne', T1, T4, 'alarm');
  a.branch('bltu', T2, T3, 'soonest');
  a.j('alarm');
  a.label('soonest');
  a.words(add(T1, T4, ZERO), add(T2, T3, ZERO));
  a.label('alarm');
  a.word(encodeLui(T3, RTC >>> 12));
  a.words(encodeSw(T1, T3, Rtc.alarmHigh), encodeSw(T2, T3, Rtc.alarmLow));
  a.word(encodeLw(T2, T0, S.nested));
  a.branch('bne', T2, ZERO, 'inHandler');
  a.words(
    encodeLw(T4, T0, S.t4),
    encodeLw(T3, T0, S.t3),
    encodeLw(T2, T0, S.t2),
    encodeLw(T1, T0, S.t1),
    swapT0(),
    MRET,
  );

  // Inside a wrapped firmware handler: mepc must stay at the exit stub, so return through a
  // `jal x0` written into the jump slot (the handler's code is within +/-1 MiB of the slot).
  a.label('inHandler');
  a.words(encodeLw(T2, T0, S.nestedSamples), encodeAddi(T2, T2, 1), encodeSw(T2, T0, S.nestedSamples));
  // A sample taken on the way back (at `resume` or in the jump slot, once MIE is on again) finds
  // the slot already aimed at the firmware: rewritten to aim at itself, it would loop for ever.
  a.word(csrr(T1, CSR.mepc));
  a.la(T2, 'resume');
  a.branch('beq', T1, T2, 'slotReady');
  a.word(encodeAddi(T2, T0, S.jumpSlot));
  a.branch('beq', T1, T2, 'slotReady');
  a.word(sub(T1, T1, T2));
  // J-immediate: imm[20|10:1|11|19:12] from the offset in t1.
  a.words(srli(T2, T1, 20), andi(T2, T2, 1), slli(T2, T2, 31));
  a.words(srli(T3, T1, 1), andi(T3, T3, 0x3ff), slli(T3, T3, 21), or(T2, T2, T3));
  a.words(srli(T3, T1, 11), andi(T3, T3, 1), slli(T3, T3, 20), or(T2, T2, T3));
  a.words(srli(T3, T1, 12), andi(T3, T3, 0xff), slli(T3, T3, 12), or(T2, T2, T3));
  a.words(ori(T2, T2, 0x6f), encodeSw(T2, T0, S.jumpSlot), FENCE_I);
  a.label('slotReady');
  a.la(T2, 'exit');
  a.word(csrw(CSR.mepc, T2));
  a.word(encodeAddi(T2, ZERO, MSTATUS_MPIE));
  a.word(csrc(CSR.mstatus, T2));
  a.words(encodeLw(T2, T0, S.savedCause), csrw(CSR.mcause, T2), encodeLw(T2, T0, S.savedTval), csrw(CSR.mtval, T2));
  a.words(encodeLw(T4, T0, S.t4), encodeLw(T3, T0, S.t3), encodeLw(T2, T0, S.t2), encodeLw(T1, T0, S.t1), swapT0());
  a.word(encodeCsrImmediate('csrrsi', ZERO, CSR.mstatus, MSTATUS_MIE));
  a.label('resume');
  a.j(area + S.jumpSlot);

  // ---- the firmware's mret from a wrapped handler lands here ----------------------------------
  a.label('exit');
  a.word(encodeCsrImmediate('csrrci', ZERO, CSR.mstatus, MSTATUS_MIE));
  a.words(swapT0(), encodeSw(T1, T0, S.t1), encodeSw(T2, T0, S.t2));
  a.words(encodeLw(T1, T0, S.savedEpc), csrw(CSR.mepc, T1));
  // mie as saved, plus whatever the firmware's handler enabled meanwhile.
  a.li(T2, ~MIE_MEIE);
  a.words(csrr(T1, CSR.mie), and(T1, T1, T2), encodeLw(T2, T0, S.savedMie), or(T1, T1, T2), csrw(CSR.mie, T1));
  a.li(T2, MSTATUS_MPP | MSTATUS_MPIE);
  a.words(csrc(CSR.mstatus, T2), encodeLw(T1, T0, S.savedStatus), and(T1, T1, T2), csrs(CSR.mstatus, T1));
  a.words(
    encodeLw(T1, T0, S.savedThreshold),
    encodeLui(T2, PLIC_THRESHOLD_M0 >>> 12),
    encodeSw(T1, T2, 0),
    encodeSw(ZERO, T0, S.nested),
  );
  a.words(encodeLw(T2, T0, S.t2), encodeLw(T1, T0, S.t1), swapT0(), MRET);

  const { bytes, labels } = a.assemble();
  if (CODE_AT + bytes.length > BUCKETS_AT)
    throw new Error(`interrupt sampler: ${bytes.length} bytes of code do not fit below the buckets`);
  return { bytes, entry: labels.get('entry')!, exit: labels.get('exit')! };
}

/** Where the device-store stub goes: between the handler's code and the buckets. */
const STORE_STUB_AT = BUCKETS_AT - 16;

/**
 * A 32-bit store run by the core: QEMU's gdbstub drops debugger writes to device registers (they
 * answer OK and change nothing), a store the hart executes reaches them. The stub
 * `sw t1, 0(t0); jalr x0, 0(t2)` is stepped twice with t2 = the PC to come back to (a jump back,
 * not a PC write: GDB steps over a breakpoint at the PC only where the target last stopped).
 */
function coreStore(
  access: TargetAccess,
  step: () => Promise<void>,
  stubAt: number,
): (address: number, value: number) => Promise<void> {
  return async (address, value) => {
    const regs = ['t0', 't1', 't2'];
    const saved = new Map<string, bigint>();
    for (const reg of regs) saved.set(reg, await access.readRegister(reg));
    const pc = await access.readRegister('pc');
    const stub = Buffer.concat([encodeSw(T1, T0, 0), encodeJalr(ZERO, T2, 0)]);
    await access.writeMemory(BigInt(stubAt), stub);
    try {
      await access.writeRegister('t0', BigInt(address >>> 0));
      await access.writeRegister('t1', BigInt(value >>> 0));
      await access.writeRegister('t2', pc);
      await access.writeRegister('pc', BigInt(stubAt));
      await step();
      await step();
    } finally {
      for (const reg of regs) await access.writeRegister(reg, saved.get(reg)!);
      if ((await access.readRegister('pc')) !== pc) await access.writeRegister('pc', pc);
    }
  };
}

const u32 = (v: number): Buffer => {
  const b = Buffer.alloc(4);
  b.writeUInt32LE(v >>> 0, 0);
  return b;
};

function plan(req: InterruptSamplerRequest): InterruptSamplerPlan | { unsupported: string } {
  if (req.machine !== 'virt')
    return {
      unsupported:
        `the RV32 interrupt sampler knows QEMU's \`virt\` machine (Goldfish RTC and PLIC); this ` +
        `target is ${req.machine ?? 'not QEMU'}`,
    };
  const room = req.area.size - BUCKETS_AT - 4;
  if (room < 64 * 4)
    return {
      unsupported:
        `the reserved RAM left for the interrupt sampler (${req.area.size} bytes) holds too few ` +
        `buckets; reserve at least 8 KiB`,
    };
  let buckets = 1;
  while (buckets * 2 * 4 <= room && buckets < 16384) buckets *= 2;
  const span = req.text.end - req.text.start;
  let shift = 1;
  while (span > buckets << shift) shift++;
  const { area } = req;
  const reach = (from: number, to: number): boolean => Math.abs(to - from) < JAL_REACH - 2048;
  if (!reach(area.start, req.text.start) || !reach(area.start + BUCKETS_AT, req.text.end))
    return {
      unsupported:
        `its handler at 0x${area.start.toString(16)} must lie within 1 MiB of the code ` +
        `(0x${req.text.start.toString(16)}-0x${req.text.end.toString(16)}): it returns into interrupted handlers ` +
        "and enters the firmware's vectors with `jal`, which reaches +/-1 MiB. Reserve RAM near the code " +
        "(`reservedMemory` in the launch configuration, e.g. right after the program's last section)",
    };
  const bucketsAt = area.start + BUCKETS_AT;
  const used = BUCKETS_AT + 4 * (buckets + 1);
  const half = 2 ** Math.max(12, Math.round(Math.log2(req.meanInterval)));
  // One sample per interval of `half` ns, at an offset uniform in [0, half), and never sooner than
  // a quarter interval after the last (the handler's way back takes far less).
  const mask = half - 1;
  const registers = ['mtvec', 'mscratch', 'mie'];
  const words = [PLIC + 4 * RTC_SOURCE, PLIC_ENABLE_M0, RTC + Rtc.irqEnabled];
  return {
    bucketsAt,
    buckets,
    textBase: req.text.start,
    shift,
    nestedAt: area.start + S.nestedSamples,
    used,
    semantics:
      'the interrupted PC (mepc) when a Goldfish RTC alarm on the virtual clock fires: the ' +
      "instruction about to run, at a random point of each interval; inside the firmware's " +
      'interrupt handlers too (the sampler is enabled at their entry)',
    async capture(access: TargetAccess): Promise<SavedState> {
      const saved: SavedState = { registers: {}, patchedRegisters: {}, words: [] };
      for (const name of registers) saved.registers[name] = await access.readRegister(name);
      const mtvec = Number(saved.registers.mtvec!);
      if ((mtvec & 3) > 1)
        throw new Error(`mtvec holds 0x${mtvec.toString(16)}, a mode the interrupt sampler does not know`);
      if (Math.abs(mtvec - area.start) > JAL_REACH - 4096)
        throw new Error(
          `the firmware's trap vector 0x${mtvec.toString(16)} is more than 1 MiB from the sampler's ` +
            `handler at 0x${area.start.toString(16)}: reserve RAM near it`,
        );
      saved.patchedRegisters = {
        mtvec: BigInt(buildRv32Sampler(area.start, mtvec).entry),
        mscratch: BigInt(area.start),
        mie: saved.registers.mie! | BigInt(MIE_MEIE),
      };
      saved.words.push({
        address: words[0]!,
        original: await access.readU32(BigInt(words[0]!)),
        patched: RTC_PRIORITY,
      });
      const enable = await access.readU32(BigInt(words[1]!));
      saved.words.push({ address: words[1]!, original: enable, patched: (enable | (1 << RTC_SOURCE)) >>> 0 });
      saved.words.push({ address: words[2]!, original: await access.readU32(BigInt(words[2]!)), patched: 1 });
      if (saved.words[0]!.original !== 0 || (enable & (1 << RTC_SOURCE)) !== 0 || saved.words[2]!.original !== 0)
        throw new Error(
          'the program uses the Goldfish RTC interrupt itself (PLIC source 11 is enabled); the ' +
            'interrupt sampler needs it',
        );
      return saved;
    },
    async install(access: TargetAccess, saved: SavedState, step: () => Promise<void>): Promise<void> {
      const store = coreStore(access, step, area.start + STORE_STUB_AT);
      const code = buildRv32Sampler(area.start, Number(saved.registers.mtvec!));
      const state = Buffer.alloc(CODE_AT);
      state.writeUInt32LE(0xace1_5eed, S.lfsr);
      state.writeUInt32LE(LFSR_TAPS, S.taps);
      state.writeUInt32LE(mask, S.mask);
      state.writeUInt32LE(half, S.period);
      state.writeUInt32LE(half / 4, S.minGap);
      state.writeUInt32LE(req.text.start >>> 0, S.textBase);
      state.writeUInt32LE(shift, S.shift);
      state.writeUInt32LE(buckets, S.buckets);
      await access.writeMemory(BigInt(area.start), state);
      await access.writeMemory(BigInt(area.start + CODE_AT), code.bytes);
      await access.writeMemory(BigInt(bucketsAt), Buffer.alloc(4 * (buckets + 1)));
      const check = await access.readMemory(BigInt(area.start + CODE_AT), code.bytes.length);
      if (!check.equals(Buffer.from(code.bytes)))
        throw new Error(`the interrupt sampler's handler did not stick at 0x${(area.start + CODE_AT).toString(16)}`);
      for (const w of saved.words) await store(w.address, w.patched);
      // The first interval starts now (the virtual clock stands while the target is halted), its
      // alarm in the middle.
      const low = await access.readU32(BigInt(RTC + Rtc.timeLow));
      const high = await access.readU32(BigInt(RTC + Rtc.timeHigh));
      const base = Buffer.alloc(8);
      base.writeUInt32LE(low, 0);
      base.writeUInt32LE(high, 4);
      await access.writeMemory(BigInt(area.start + S.baseLow), base);
      const at = ((BigInt(high) << 32n) | BigInt(low)) + BigInt(half / 2);
      await store(RTC + Rtc.alarmHigh, Number(at >> 32n));
      await store(RTC + Rtc.alarmLow, Number(at & 0xffff_ffffn));
      for (const name of ['mscratch', 'mtvec', 'mie']) await access.writeRegister(name, saved.patchedRegisters[name]!);
    },
    async uninstall(access: TargetAccess, saved: SavedState, stepInstruction: () => Promise<void>): Promise<string[]> {
      const problems: string[] = [];
      const store = coreStore(access, stepInstruction, area.start + STORE_STUB_AT);
      const codeEnd = area.start + STORE_STUB_AT;
      // Halted inside the sampler's own code (or its jump slot): step out first.
      for (let i = 0; i < 200; i++) {
        const pc = Number(await access.readRegister('pc'));
        if (pc < area.start || pc >= codeEnd) break;
        await stepInstruction();
      }
      // The source first: with the handler still hooked, a sample pending meanwhile is still its own.
      await store(RTC + Rtc.clearAlarm, 1);
      await store(RTC + Rtc.clearInterrupt, 1);
      for (const w of [...saved.words].reverse()) {
        await store(w.address, w.original);
        const now = await access.readU32(BigInt(w.address));
        if (now !== w.original)
          problems.push(`0x${w.address.toString(16)} reads 0x${now.toString(16)}, not 0x${w.original.toString(16)}`);
      }
      // Halted inside a wrapped firmware handler: give it back what the wrap changed (mepc, the
      // previous-mode bits, MIE off as its trap left it, mie, the PLIC threshold).
      const nested = await access.readU32(BigInt(area.start + S.nested));
      let mie = await access.readRegister('mie');
      if (nested !== 0) {
        const code = buildRv32Sampler(area.start, Number(saved.registers.mtvec!));
        if (Number(await access.readRegister('mepc')) === code.exit)
          await access.writeRegister('mepc', BigInt(await access.readU32(BigInt(area.start + S.savedEpc))));
        const status = await access.readRegister('mstatus');
        const was = BigInt(await access.readU32(BigInt(area.start + S.savedStatus)));
        const bits = BigInt(MSTATUS_MPP | MSTATUS_MPIE);
        await access.writeRegister('mstatus', (status & ~bits & ~BigInt(MSTATUS_MIE)) | (was & bits));
        await access.writeRegister('mcause', BigInt(await access.readU32(BigInt(area.start + S.savedCause))));
        mie = (mie & ~BigInt(MIE_MEIE)) | BigInt(await access.readU32(BigInt(area.start + S.savedMie)));
        await store(PLIC_THRESHOLD_M0, await access.readU32(BigInt(area.start + S.savedThreshold)));
        await access.writeMemory(BigInt(area.start + S.nested), u32(0));
      }
      await access.writeRegister('mie', (mie & ~BigInt(MIE_MEIE)) | (saved.registers.mie! & BigInt(MIE_MEIE)));
      await access.writeRegister('mscratch', saved.registers.mscratch!);
      await access.writeRegister('mtvec', saved.registers.mtvec!);
      for (const [name, value] of Object.entries(saved.registers)) {
        const now = await access.readRegister(name);
        if (name !== 'mie' && now !== value)
          problems.push(`${name} reads 0x${now.toString(16)}, not 0x${value.toString(16)}`);
      }
      return problems;
    },
  };
}

export const rv32InterruptSampler: InterruptSamplerArch = {
  needs:
    "a RISC-V target on QEMU's `virt` machine (the sampler's timer is its Goldfish RTC, through " +
    'the PLIC) and at least 8 KiB of reserved RAM',
  plan,
};
