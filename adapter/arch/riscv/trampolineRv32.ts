import { fitsSigned } from '../codec';
import type {
  DispatchEntry,
  PayloadGenerator,
  RuntimeImage,
  RuntimeLayout,
  StubImage,
  StubRequest,
} from '../../probe/injection/payload';
import type {
  CallSite,
  CaveReach,
  CounterSource,
  FunctionCode,
  InjectionArch,
  PatchShape,
  PatchSite,
} from '../../probe/injection/types';
import { InjectionRefusedError, hex, refusal } from '../../probe/injection/errors';
import type { InjectionFamilySupport } from '../../probe/injection/injectionService';
import { MINSTRET } from '../../probe/injection/types';
import type { TargetAccess } from '../../probe/targetAccess';
import { gdbIntegerRegisters } from './registers';
import { rv32AddressTaking } from './rvAddressTaking';
import { Rv32Codec } from './rvDecoder';
import { encodeJal, half16, splitHiLo } from './rvEncoder';
import { Rv32Relocator } from './rvRelocator';
import {
  ALL_REGISTERS,
  ARGUMENTS,
  CALLER_SAVED,
  GLOBALS,
  LIVE_AT_CALL,
  LIVE_AT_RETURN,
  mask,
  Reg,
  resolveRv32JumpTable,
  Rv32Assembler,
  rvAddi,
  rvAuipc,
  rvCJalr,
  rvCsrrci,
  rvEbreak,
  rvJalr,
  rvLinkRegister,
  rvLoadAddress,
  rvRegisterEffects,
  TEMPORARIES,
} from './trampolineRv32Isa';
import { rv32FoldedEpilogue, rv32ReturnSlot } from './trampolineRv32Millicode';
import { MSTATUS, MSTATUS_MIE, Rv32Runtime } from './trampolineRv32Runtime';
import { Rv32StubBuilder } from './trampolineRv32Stubs';

/**
 * RV32 payloads for function and region measurement (docs/design.md, "Measurement semantics").
 * Machine mode, ILP32:
 * - at a function's entry t0-t6 carry nothing (psABI), so the entry stub uses them freely; after
 *   the return a0/a1 hold the result and t0-t6, a2-a7 are again the callee's to clobber;
 * - interrupts are masked with `csrrci t0, mstatus, MIE` and restored with `csrw mstatus, t0`
 *   around every read-modify-write of shared state (Privileged ISA 3.1.6.1);
 * - the counter is read with one `csrr` as late as possible at entry and as early as possible at
 *   exit, so the window holds four payload instructions: the `sw` of the start value, the `csrw`
 *   that unmasks, the jump back, and one of the two counter reads (which one depends on whether a
 *   read counts itself).
 */

const { zero: X0, ra: RA, sp: SP, tp: TP, a2: A2, a3: A3, a4: A4, a5: A5 } = Reg;

export function rv32InjectionArch(): InjectionArch {
  return {
    family: 'riscv',
    codec: new Rv32Codec(),
    relocator: new Rv32Relocator(),
    mappingKind: (name) =>
      name === '$d' || name.startsWith('$d.') ? 'data' : name.startsWith('$x') ? 'code' : undefined,
    resolveTable: (fn: FunctionCode, index: number, readWord) => {
      const addresses = new Set(fn.instructions.map((i) => i.address));
      const r = resolveRv32JumpTable(
        fn.instructions,
        index,
        (a) => readWord(a, 4),
        (a) => addresses.has(a),
      );
      return r.ok ? { ok: true, table: r.table, targets: r.targets } : r;
    },
    linkRegister: rvLinkRegister,
    referencesRegister: (insn, reg) => {
      const e = rvRegisterEffects(insn);
      return ((e.uses | e.defs) & (1 << reg)) !== 0;
    },
    choosePatch: rv32ChoosePatch,
    callSiteRefusal: rv32CallSiteRefusal,
    freeAtEntry: TEMPORARIES,
    returnAddressRegister: RA,
    threadPointer: TP,
    // lui/auipc + addi form an address in two instructions, followed in rvAddressTaking.ts.
    addressTaking: rv32AddressTaking,
    liveness: {
      effects: rvRegisterEffects,
      callUses: (ARGUMENTS | GLOBALS | mask(SP)) >>> 0,
      callDefs: CALLER_SAVED,
      liveAtReturn: LIVE_AT_RETURN,
      liveAtTail: LIVE_AT_CALL,
      all: ALL_REGISTERS,
      reserved: mask(X0, SP, Reg.gp, TP),
      // Temporaries t4-t6, t3, t2-t0 first, then argument registers a7 down to a2.
      resumeRegisterPreference: [
        Reg.t4,
        Reg.t5,
        Reg.t6,
        Reg.t3,
        Reg.t2,
        Reg.t1,
        Reg.t0,
        Reg.a7,
        Reg.a6,
        A5,
        A4,
        A3,
        A2,
      ],
      // Entry: t0-t6; exit: t0-t6 and a2-a5 (ACC's scratch).
      stubClobbers: (TEMPORARIES | mask(A2, A3, A4, A5)) >>> 0,
    },
    // -msave-restore millicode (trampolineRv32Millicode.ts).
    alternateLinks: mask(Reg.t0),
    returnSlot: rv32ReturnSlot,
    foldedEpilogue: rv32FoldedEpilogue,
  };
}

/** Everything the injection service needs for RV32 (machine mode, ILP32). */
export function rv32InjectionSupport(counter: CounterSource = MINSTRET): InjectionFamilySupport {
  return {
    arch: rv32InjectionArch(),
    generator: new Rv32PayloadGenerator(counter),
    // GDB's names for x1..x31 (x0 is never saved), then what a stub's interrupt masking changes.
    registers: [...gdbIntegerRegisters.slice(1), 'mstatus', 'pc'],
    codeAddressBit: 0,
    resumePoints: async (access: TargetAccess) => {
      // Inside a trap handler (MIE clear) the program resumes at mepc after MRET.
      const mstatus = await access.readRegister('mstatus');
      if ((mstatus & BigInt(MSTATUS_MIE)) !== 0n) return [];
      return [{ what: 'The interrupted program (mepc)', address: Number(await access.readRegister('mepc')) }];
    },
  };
}

/** Whether a PC-relative reach of `bits` (signed) from `from` covers the whole cave. */
function reachesCave(from: number, cave: CaveReach, bits: number): boolean {
  return fitsSigned(cave.start - from, bits) && fitsSigned(cave.start + cave.size - from, bits);
}

/**
 * RV32 patch shapes, shortest first: `jalr x0, off(tp)` when tp is the cave's base (4 bytes, no
 * register), `jal x0` within +/-1 MiB (4 bytes), else `auipc r + jalr x0` through a dead register.
 */
function rv32ChoosePatch(site: number, cave: CaveReach, free: number): PatchShape | string {
  if (cave.threadPointerBase !== undefined) return { kind: 'rvTp', length: 4 };
  if (reachesCave(site, cave, 21)) return { kind: 'rvJal', length: 4 };
  const scratch =
    [Reg.t0, Reg.t1, Reg.t2, Reg.t3, Reg.t4, Reg.t5, Reg.t6].find((r) => (free & (1 << r)) !== 0) ??
    Array.from({ length: 31 }, (_, k) => k + 1).find(
      (r) => (free & (1 << r)) !== 0 && r !== SP && r !== Reg.gp && r !== TP,
    );
  if (scratch === undefined)
    return (
      `no register is dead at ${hex(site)} for the 8-byte auipc + jalr patch, and the cave at ${hex(cave.start)} ` +
      `is beyond JAL's +/-1 MiB.`
    );
  return { kind: 'rvAuipc', length: 8, scratch };
}

/** RV32 direct call sites that can be re-encoded, same length, to reach a stub. */
function rv32CallSiteRefusal(site: CallSite, cave: CaveReach): string | undefined {
  const tpMode = cave.threadPointerBase !== undefined;
  if (site.mnemonic !== 'jal' && site.mnemonic !== 'c.jal' && site.mnemonic !== 'c.j')
    return `${site.mnemonic} is a conditional jump; only jal, c.jal and c.j are rewritten`;
  if (site.length === 2) {
    if (site.kind === 'tail') return 'a 2-byte c.j links nothing, so the dispatcher could not tell which site jumped';
    if (!tpMode) return 'a 2-byte c.jal reaches only +/-2 KiB; it needs tp free for the dispatcher';
    return undefined;
  }
  if (tpMode || reachesCave(site.address, cave, 21)) return undefined;
  return `jal reaches +/-1 MiB and the cave at ${hex(cave.start)} is farther`;
}

export class Rv32PayloadGenerator implements PayloadGenerator {
  readonly family = 'riscv' as const;
  private readonly runtime: Rv32Runtime;
  private readonly stubs: Rv32StubBuilder;

  constructor(readonly counter: CounterSource) {
    if (counter.kind !== 'csr')
      throw new Error(`RV32 payloads read counters with csrr; ${counter.name} is memory mapped`);
    this.runtime = new Rv32Runtime(counter.csr, counter.inhibitBit);
    this.stubs = new Rv32StubBuilder(counter, counter.csr, counter.inhibitBit);
  }

  runtimeSize(): number {
    return 1024;
  }

  buildRuntime(layout: RuntimeLayout): RuntimeImage {
    return this.runtime.build(layout);
  }

  dispatchCost(index: number): number {
    return this.runtime.dispatchCost(index);
  }

  dispatchTable(entries: readonly DispatchEntry[], layout: RuntimeLayout): Uint8Array {
    return this.runtime.dispatchTable(entries, layout);
  }

  // ---- per-measurement stubs -------------------------------------------------------------------

  buildStubs(req: StubRequest, runtime: RuntimeImage, layout: RuntimeLayout): StubImage {
    if (req.kind === 'region') return this.stubs.regionStubs(req, runtime, layout);
    if (req.payload === 'hardware') {
      if (req.kind !== 'function')
        throw new InjectionRefusedError(
          refusal(
            'unrelocatable',
            'Hardware gating measures whole functions through an entry patch; call-site measurement ' +
              'uses software accumulation.',
          ),
        );
      return this.stubs.hardwareFunctionStubs(req, runtime, layout);
    }
    return this.stubs.softwareFunctionStubs(req, runtime, layout);
  }

  // ---- patches ---------------------------------------------------------------------------------

  encodePatch(site: PatchSite, target: number, layout: RuntimeLayout): Uint8Array {
    const out = new Uint8Array(site.original.length);
    let jump: Uint8Array;
    switch (site.shape.kind) {
      case 'rvTp':
        jump = rvJalr(X0, TP, target - layout.threadPointer!);
        break;
      case 'rvJal':
        jump = encodeJal(X0, site.address, target);
        break;
      case 'rvAuipc': {
        const { hi, lo } = splitHiLo(target - site.address);
        jump = new Uint8Array([...rvAuipc(site.shape.scratch, hi), ...rvJalr(X0, site.shape.scratch, lo)]);
        break;
      }
      default:
        throw new Error(`${site.shape.kind} is not an RV32 patch`);
    }
    out.set(jump, 0);
    // Bytes past the jump up to the next instruction boundary are never executed; C.NOP keeps a
    // disassembly of the patched code readable.
    for (let k = jump.length; k + 1 < out.length; k += 2) out.set(half16(0x0001), k);
    return out;
  }

  encodeCallSite(site: CallSite, stub: StubImage, layout: RuntimeLayout): Uint8Array {
    const tp = layout.threadPointer;
    const link = site.kind === 'call' ? RA : X0;
    if (site.length === 2) {
      if (site.kind !== 'call' || tp === undefined) throw new Error('2-byte call sites need the tp dispatcher');
      return rvCJalr(TP); // -> dispatcher at tp, which finds this site by its return address
    }
    if (tp !== undefined && fitsSigned(stub.entry - tp, 12)) return rvJalr(link, TP, stub.entry - tp);
    return encodeJal(link, site.address, stub.entry);
  }

  calibrationCode(
    at: number,
    calls: number,
  ): { bytes: Uint8Array; fn: number; driver: number; done: number; functionInstructions: number } {
    const a = new Rv32Assembler(at);
    // The empty function: a 4-byte NOP the patch displaces, and the return.
    a.label('FN')
      .i(rvAddi(X0, X0, 0))
      .i(rvJalr(X0, RA, 0));
    a.label('DRV').i(rvCsrrci(X0, MSTATUS, MSTATUS_MIE));
    // The loop counter lives in s1: callee-saved, so the measured call must leave it alone.
    const n = rvLoadAddress(Reg.s1, calls);
    a.code(n, n.length / 4);
    a.label('L')
      .jal(RA, 'FN')
      .i(rvAddi(Reg.s1, Reg.s1, -1))
      .b('bne', Reg.s1, X0, 'L');
    a.label('DONE').i(rvEbreak());
    return {
      bytes: a.bytes(),
      fn: a.address('FN'),
      driver: a.address('DRV'),
      done: a.address('DONE'),
      functionInstructions: 2,
    };
  }
}
