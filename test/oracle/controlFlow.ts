import { DisassembledInstruction } from './disassembly';

/**
 * What an instruction can do to the flow of control, which is all the call-stack tracker needs.
 * The trace says where control went; this says whether the way there was a call, a return, a
 * branch, or nothing (then the instruction was interrupted).
 */
export const Flow = {
  /** Falls through only: any other successor means an exception was taken. */
  Plain: 0,
  /** Direct branch without link (conditional or not), target known. */
  Branch: 1,
  /** Indirect branch without link: a switch table, a tail call through a register, or a return in disguise. */
  Jump: 2,
  /** Direct branch with link, target known. */
  Call: 3,
  /** Indirect branch with link. */
  IndirectCall: 4,
  /** Function return: `bx lr`, `pop {…, pc}`, `ldr pc, [sp], #4`, `ret`, `c.jr ra`, `jr t0`. */
  Return: 5,
  /** Return from an exception: `mret`, `sret` (Cortex-M returns through `bx lr` / `pop {pc}`: Return). */
  ExceptionReturn: 6,
  /** Synchronous exception: `svc`, `udf`, `bkpt`, `ecall`, `ebreak` (semihosting falls through). */
  Trap: 7,
  /** Literal data objdump shows inside code, or an address nothing is known about. */
  Unknown: 8,
} as const;
export type FlowKind = (typeof Flow)[keyof typeof Flow];

export const FLOW_NAMES: readonly string[] = [
  'plain',
  'branch',
  'jump',
  'call',
  'indirect-call',
  'return',
  'exception-return',
  'trap',
  'unknown',
];

export type Architecture = 'arm' | 'riscv';

export function classify(arch: Architecture, insn: DisassembledInstruction): FlowKind {
  if (insn.isData) return Flow.Unknown;
  return arch === 'arm'
    ? classifyThumb(insn.mnemonic, insn.operands, insn.target)
    : classifyRiscv(insn.mnemonic, insn.operands, insn.target);
}

const COND = '(?:eq|ne|cs|hs|cc|lo|mi|pl|vs|vc|hi|ls|ge|lt|gt|le|al)?';
const ARM_B = new RegExp(`^b${COND}$`);
const ARM_BL = new RegExp(`^bl${COND}$`);
const ARM_BLX = new RegExp(`^blx${COND}$`);
const ARM_BX = new RegExp(`^bx${COND}$`);
const ARM_POP = new RegExp(`^pop${COND}$`);
const ARM_LDM = new RegExp(`^ldm(?:ia|fd|db|ea)?${COND}$`);
const ARM_LDR = new RegExp(`^ldr${COND}$`);
const ARM_MOV = new RegExp(`^movs?${COND}$`);
const ARM_TRAP = new RegExp(`^(?:svc|udf|bkpt)${COND}$`);

/** Thumb-2 (ARMv7-M) by mnemonic, in objdump's unified syntax. */
function classifyThumb(mnemonic: string, operands: string, target: number | undefined): FlowKind {
  const m = mnemonic.toLowerCase().replace(/\.(n|w)$/, '');
  const ops = operands.toLowerCase().replace(/\s+/g, '');
  if (ARM_BL.test(m)) return Flow.Call;
  if (ARM_BLX.test(m)) return target !== undefined ? Flow.Call : Flow.IndirectCall;
  if (ARM_B.test(m) || m === 'cbz' || m === 'cbnz') return target !== undefined ? Flow.Branch : Flow.Jump;
  if (ARM_BX.test(m)) return ops === 'lr' ? Flow.Return : Flow.Jump;
  if (m === 'tbb' || m === 'tbh') return Flow.Jump;
  if (ARM_TRAP.test(m)) return Flow.Trap;
  const listHasPc = /\{[^}]*\bpc\}/.test(ops);
  if (ARM_POP.test(m)) return listHasPc ? Flow.Return : Flow.Plain;
  if (ARM_LDM.test(m) && listHasPc) return ops.startsWith('sp!') ? Flow.Return : Flow.Jump;
  const dest = ops.split(',')[0];
  if (dest !== 'pc') return Flow.Plain;
  // Only stores and compares name pc first without writing it; everything else branches.
  if (/^(str|cmp|cmn|tst|teq|push|stm)/.test(m)) return Flow.Plain;
  if (ARM_LDR.test(m)) return ops === 'pc,[sp],#4' ? Flow.Return : Flow.Jump;
  if (ARM_MOV.test(m)) return ops === 'pc,lr' ? Flow.Return : Flow.Jump;
  return Flow.Jump;
}

/** x1 (ra) and x5 (t0) are the link registers of the RISC-V calling convention (spec 2.5, RAS hints). */
const LINK = new Set(['ra', 'x1', 't0', 'x5']);
const ZERO = new Set(['zero', 'x0']);
const RV_BRANCH = new Set([
  'beq',
  'bne',
  'blt',
  'bge',
  'bltu',
  'bgeu',
  'c.beqz',
  'c.bnez',
  'beqz',
  'bnez',
  'blez',
  'bgez',
  'bltz',
  'bgtz',
  'bgt',
  'ble',
  'bgtu',
  'bleu',
]);

/** RV32 by mnemonic, from `objdump -M no-aliases` (aliases such as `ret` and `j` accepted too). */
function classifyRiscv(mnemonic: string, operands: string, target: number | undefined): FlowKind {
  const m = mnemonic.toLowerCase();
  const ops = operands.toLowerCase().replace(/\s+/g, '').split(',');
  if (RV_BRANCH.has(m)) return Flow.Branch;
  switch (m) {
    case 'jal':
      // `jal rd, target`; the alias form `jal target` links to ra.
      if (ops.length >= 2) return ZERO.has(ops[0]!) ? Flow.Branch : Flow.Call;
      return Flow.Call;
    case 'c.jal':
    case 'call':
      return Flow.Call;
    case 'c.j':
    case 'j':
    case 'tail':
      return target !== undefined ? Flow.Branch : Flow.Jump;
    case 'jalr': {
      // `jalr rd, offset(rs1)`; alias `jalr rs1` links to ra.
      if (ops.length === 1) return Flow.IndirectCall;
      const rd = ops[0]!;
      const rs1 = /\((\w+)\)$/.exec(ops[1]!)?.[1] ?? ops[1]!;
      if (!ZERO.has(rd)) return Flow.IndirectCall;
      return LINK.has(rs1) ? Flow.Return : Flow.Jump;
    }
    case 'c.jr':
    case 'jr':
      return LINK.has(ops[0]!) ? Flow.Return : Flow.Jump;
    case 'ret':
      return Flow.Return;
    case 'c.jalr':
      return Flow.IndirectCall;
    case 'mret':
    case 'sret':
    case 'uret':
    case 'dret':
      return Flow.ExceptionReturn;
    case 'ecall':
    case 'ebreak':
    case 'c.ebreak':
    case 'unimp':
    case 'c.unimp':
      return Flow.Trap;
    default:
      return Flow.Plain;
  }
}
