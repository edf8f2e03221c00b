import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { ThumbCodec } from '../../adapter/arch/cortex-m/thumbDecoder';
import * as enc from '../../adapter/arch/cortex-m/thumbEncoder';
import type { DecodedInstruction, InstructionKind } from '../../adapter/arch/codec';
import {
  assemble,
  compileC,
  disassembleBytes,
  readElfText,
  referencedAddress,
  thumbToolchain,
  type AssembledProgram,
  type ObjdumpLine,
} from '../support/gnuTools';
import { fixturesDir } from '../support/paths';

const codec = new ThumbCodec();
const m4 = thumbToolchain('cortex-m4', 'fpv4-sp-d16');

interface Case {
  asm: string;
  kind: InstructionKind;
  mnemonic?: string;
  readsPc?: boolean;
  /** Label whose address the instruction refers to. */
  target?: string;
  itCount?: number;
  length?: 2 | 4;
  /** A label placed before the instruction (for short forward branches to aim at). */
  label?: string;
}

const p = (asm: string, length?: 2 | 4, mnemonic?: string): Case => ({
  asm,
  kind: 'plain',
  ...(length ? { length } : {}),
  ...(mnemonic ? { mnemonic } : {}),
});

/** Every Thumb-2 relocation hazard of targets.md, and a spread of ordinary 16- and 32-bit instructions. */
const cases: Case[] = [
  // PC-relative data: ADR T1/T2/T3, literal loads of every size, LDRD, VLDR, PLD/PLI.
  { asm: 'adr r0, lit', kind: 'plain', mnemonic: 'adr', readsPc: true, target: 'lit', length: 2 },
  { asm: 'adr.w r1, back', kind: 'plain', mnemonic: 'adr', readsPc: true, target: 'back', length: 4 },
  { asm: 'adr.w r9, lit', kind: 'plain', mnemonic: 'adr', readsPc: true, target: 'lit', length: 4 },
  { asm: 'ldr r2, lit', kind: 'plain', mnemonic: 'ldr', readsPc: true, target: 'lit', length: 2 },
  { asm: 'ldr.w r3, lit', kind: 'plain', mnemonic: 'ldr', readsPc: true, target: 'lit', length: 4 },
  { asm: 'ldr.w r10, back', kind: 'plain', mnemonic: 'ldr', readsPc: true, target: 'back', length: 4 },
  { asm: 'ldrb.w r4, lit', kind: 'plain', mnemonic: 'ldrb', readsPc: true, target: 'lit' },
  { asm: 'ldrh.w r4, back', kind: 'plain', mnemonic: 'ldrh', readsPc: true, target: 'back' },
  { asm: 'ldrsb.w r5, lit', kind: 'plain', mnemonic: 'ldrsb', readsPc: true, target: 'lit' },
  { asm: 'ldrsh.w r5, lit', kind: 'plain', mnemonic: 'ldrsh', readsPc: true, target: 'lit' },
  { asm: 'ldrd r0, r1, lit', kind: 'plain', mnemonic: 'ldrd', readsPc: true, target: 'lit' },
  { asm: 'ldrd r6, r7, back', kind: 'plain', mnemonic: 'ldrd', readsPc: true, target: 'back' },
  { asm: 'vldr s0, lit', kind: 'plain', mnemonic: 'vldr', readsPc: true, target: 'lit' },
  { asm: 'vldr d1, back', kind: 'plain', mnemonic: 'vldr', readsPc: true, target: 'back' },
  { asm: 'pld lit', kind: 'plain', mnemonic: 'pld', readsPc: true, target: 'lit' },
  { asm: 'pli back', kind: 'plain', mnemonic: 'pli', readsPc: true, target: 'back' },
  { asm: 'ldr.w pc, lit', kind: 'indirectBranch', mnemonic: 'ldr', readsPc: true, target: 'lit' },
  // Branches: B T1-T4, BL, BX, BLX, CBZ/CBNZ, TBB/TBH.
  { asm: 'b back', kind: 'branch', mnemonic: 'b', readsPc: true, target: 'back', length: 2 },
  { asm: 'b.w far', kind: 'branch', mnemonic: 'b', readsPc: true, target: 'far', length: 4 },
  { asm: 'b.w back', kind: 'branch', mnemonic: 'b', readsPc: true, target: 'back', length: 4 },
  { asm: 'beq back', kind: 'condBranch', mnemonic: 'beq', readsPc: true, target: 'back', length: 2 },
  { asm: 'bhi.n near', kind: 'condBranch', mnemonic: 'bhi', readsPc: true, target: 'near', length: 2 },
  { asm: 'bne.w far', kind: 'condBranch', mnemonic: 'bne', readsPc: true, target: 'far', length: 4 },
  { asm: 'bge.w back', kind: 'condBranch', mnemonic: 'bge', readsPc: true, target: 'back', length: 4 },
  { asm: 'bl far', kind: 'call', mnemonic: 'bl', readsPc: true, target: 'far' },
  { asm: 'bl back', kind: 'call', mnemonic: 'bl', readsPc: true, target: 'back' },
  { asm: 'blx r3', kind: 'indirectCall', mnemonic: 'blx', length: 2 },
  { asm: 'bx lr', kind: 'return', mnemonic: 'bx', length: 2 },
  { asm: 'bx r2', kind: 'indirectBranch', mnemonic: 'bx', length: 2 },
  { asm: 'cbz r0, near', kind: 'condBranch', mnemonic: 'cbz', readsPc: true, target: 'near' },
  { asm: 'cbnz r7, near', kind: 'condBranch', mnemonic: 'cbnz', readsPc: true, target: 'near' },
  { asm: 'tbb [pc, r0]', kind: 'tableBranch', mnemonic: 'tbb', readsPc: true },
  { asm: 'tbh [pc, r1, lsl #1]', kind: 'tableBranch', mnemonic: 'tbh', readsPc: true },
  { asm: 'tbb [r2, r0]', kind: 'tableBranch', mnemonic: 'tbb', readsPc: false },
  // IT blocks of every length (members follow in the source).
  { asm: 'itte eq', kind: 'it', mnemonic: 'itte', itCount: 3, label: 'near' },
  p('moveq r0, r1'),
  p('addeq r0, r1'),
  p('movne r0, r1'),
  { asm: 'it ne', kind: 'it', mnemonic: 'it', itCount: 1 },
  p('movne r2, r3'),
  { asm: 'itete gt', kind: 'it', mnemonic: 'itete', itCount: 4 },
  p('movgt r0, #1'),
  p('movle r0, #2'),
  p('movgt r0, #3'),
  p('movle.w r8, #4'),
  { asm: 'itt cs', kind: 'it', mnemonic: 'itt', itCount: 2 },
  p('movcs r0, #1'),
  { asm: 'bxcs lr', kind: 'return' },
  // PC as an operand; writes to the PC; returns.
  { asm: 'add r0, pc', kind: 'plain', mnemonic: 'add', readsPc: true, length: 2 },
  { asm: 'mov r0, pc', kind: 'plain', mnemonic: 'mov', readsPc: true, length: 2 },
  { asm: 'mov r9, pc', kind: 'plain', mnemonic: 'mov', readsPc: true, length: 2 },
  // cmp r0, pc (gas refuses to write it)
  { asm: '.inst.n 0x4578', kind: 'plain', mnemonic: 'cmp', readsPc: true, length: 2 },
  { asm: 'add pc, r0', kind: 'indirectBranch', mnemonic: 'add', readsPc: true },
  { asm: 'mov pc, lr', kind: 'return', mnemonic: 'mov' },
  { asm: 'mov pc, r2', kind: 'indirectBranch', mnemonic: 'mov' },
  { asm: 'pop {r4, pc}', kind: 'return', mnemonic: 'pop', length: 2 },
  { asm: 'pop.w {r4-r11, pc}', kind: 'return', mnemonic: 'pop', length: 4 },
  { asm: 'ldmia.w r0, {r1, pc}', kind: 'indirectBranch', mnemonic: 'ldmia' },
  { asm: 'ldmdb r0, {r1, r2, pc}', kind: 'indirectBranch', mnemonic: 'ldmdb' },
  { asm: 'ldr pc, [sp], #4', kind: 'return', mnemonic: 'pop' },
  { asm: 'ldr.w pc, [r0, #4]', kind: 'indirectBranch', mnemonic: 'ldr' },
  { asm: 'ldr pc, [r0, r1, lsl #2]', kind: 'indirectBranch', mnemonic: 'ldr' },
  // System.
  { asm: 'svc #1', kind: 'system', mnemonic: 'svc' },
  { asm: 'bkpt #1', kind: 'system', mnemonic: 'bkpt' },
  { asm: 'udf #0', kind: 'system', mnemonic: 'udf', length: 2 },
  { asm: 'udf.w #1', kind: 'system', mnemonic: 'udf', length: 4 },
  { asm: 'cpsid i', kind: 'system', mnemonic: 'cpsid' },
  { asm: 'cpsie i', kind: 'system', mnemonic: 'cpsie' },
  { asm: 'wfi', kind: 'system', mnemonic: 'wfi' },
  { asm: 'wfe.w', kind: 'system', mnemonic: 'wfe', length: 4 },
  { asm: 'dsb', kind: 'system', mnemonic: 'dsb' },
  { asm: 'isb', kind: 'system', mnemonic: 'isb' },
  { asm: 'mrs r0, apsr', kind: 'system', mnemonic: 'mrs' },
  { asm: 'msr apsr_nzcvq, r0', kind: 'system', mnemonic: 'msr' },
  { asm: 'msr primask, r1', kind: 'system', mnemonic: 'msr' },
  // Ordinary instructions, 16-bit and 32-bit encodings of the same operation.
  p('nop', 2, 'nop'),
  p('nop.w', 4, 'nop'),
  p('movs r0, #1', 2),
  p('mov.w r0, #0x1000', 4),
  p('movw r1, #0x1234', 4, 'movw'),
  p('movt r1, #0x5678', 4, 'movt'),
  p('adds r0, r1, r2', 2),
  p('add.w r0, r1, r2, lsl #2', 4),
  p('add r8, r9', 2),
  p('add r0, sp, #16', 2),
  p('add sp, #8', 2),
  p('sub.w sp, sp, #0x400', 4),
  p('addw r0, r1, #0xfff', 4, 'addw'),
  p('ldr r0, [r1, #4]', 2),
  p('ldr.w r0, [r1, #-4]', 4),
  p('ldr r0, [sp, #8]', 2),
  p('str r0, [sp, #8]', 2),
  p('str.w r8, [r0, #0x100]', 4),
  p('strb r1, [r2, r3]', 2),
  p('ldrh.w r1, [r2, #2]!', 4),
  p('ldrsb r1, [r2, r3]', 2),
  p('push {r4-r7, lr}', 2, 'push'),
  p('push.w {r4-r11, lr}', 4, 'push'),
  p('pop {r4-r7}', 2, 'pop'),
  p('ldmia r0!, {r1, r2}', 2),
  p('stmdb r0!, {r1, r2}', 4),
  p('ubfx r0, r1, #4, #8', 4),
  p('bfc r0, #4, #8', 4, 'bfc'),
  p('bfi r0, r1, #4, #8', 4),
  p('muls r0, r1, r0', 2),
  p('mul.w r0, r1, r2', 4),
  p('sdiv r0, r1, r2', 4),
  p('smlal r0, r1, r2, r3', 4),
  p('umull r0, r1, r2, r3', 4),
  p('clz r0, r1', 4),
  p('rev r0, r1', 2),
  p('rev.w r8, r9', 4),
  p('sxth r0, r1', 2),
  p('uxtab r0, r1, r2', 4),
  p('uxtb.w r0, r1', 4),
  p('ssat r0, #8, r1', 4),
  p('usat16 r0, #4, r1', 4),
  p('qadd r0, r1, r2', 4),
  p('smulbb r0, r1, r2', 4),
  p('uadd8 r0, r1, r2', 4),
  p('ldrex r0, [r1]', 4),
  p('strex r2, r0, [r1]', 4),
  p('ldrexb r0, [r1]', 4),
  p('lsls r0, r1, #3', 2),
  p('lsl.w r0, r1, r2', 4),
  p('cmp r0, #255', 2),
  p('cmp.w r0, #0x1000', 4),
  p('tst.w r0, #1', 4),
  p('mvns r0, r1', 2),
  p('orn r0, r1, #1', 4),
  p('vadd.f32 s0, s1, s2', 4),
  p('vmov s0, r0', 4),
  p('vmov.f32 s0, #1.0', 4),
  p('vpush {s16-s31}', 4),
  p('vpop {d8}', 4),
  p('vldr s2, [r0, #8]', 4),
  p('vstr d2, [sp, #-8]', 4),
  p('vldmia r0!, {s0-s3}', 4),
  p('vcvt.s32.f32 s0, s0', 4),
  p('vmrs APSR_nzcv, fpscr', 4),
];

/** Assembles the cases with labels around them: `back` before, `fwd`/`lit` after, `far` 4 KiB away. */
function assembleCases(): { prog: AssembledProgram; addrs: number[] } {
  const body = cases.map((c, i) => `${c.label ? `${c.label}:\n` : ''}c${i}: ${c.asm}`).join('\n');
  const src =
    `back: nop\n nop\n${body}\nfwd: nop\n .align 2\nlit: .word 0x12345678\n .word 0x9abcdef0\n ` +
    `.space 0x1000\nfar: bx lr\n`;
  const prog = assemble(m4, src, 0x8000);
  return { prog, addrs: cases.map((_, i) => prog.symbols.get(`c${i}`)!) };
}

function bytesAt(prog: AssembledProgram, address: number): Uint8Array {
  return prog.text.subarray(address - prog.base);
}

test('thumb: every hazard form and ordinary instruction decodes as objdump disassembles it', () => {
  const { prog, addrs } = assembleCases();
  const byAddress = new Map(prog.lines.map((l) => [l.address, l]));
  cases.forEach((c, i) => {
    const at = addrs[i]!;
    const line = byAddress.get(at);
    assert.ok(line, `objdump shows no instruction for "${c.asm}" at 0x${at.toString(16)}`);
    const insn = codec.decode(bytesAt(prog, at), at);
    const what = `"${c.asm}" (objdump: ${line.text})`;
    assert.equal(insn.length, line.length, `length of ${what}`);
    if (c.length) assert.equal(insn.length, c.length, `encoding width of ${what}`);
    assert.equal(insn.kind, c.kind, `kind of ${what}`);
    assert.equal(insn.readsPc, c.readsPc ?? false, `readsPc of ${what}`);
    if (c.mnemonic) assert.equal(insn.mnemonic, c.mnemonic, `mnemonic of ${what}`);
    if (c.itCount) assert.equal(insn.itCount, c.itCount, `IT length of ${what}`);
    if (c.target) {
      const expected = prog.symbols.get(c.target)!;
      assert.equal(insn.target, expected, `target of ${what}`);
      const shown = referencedAddress(line);
      if (shown !== undefined) assert.equal(insn.target, shown, `objdump's address for ${what}`);
    } else if (c.kind !== 'tableBranch') {
      assert.equal(insn.target, undefined, `no target for ${what}`);
    }
  });
});

test('thumb: TBB/TBH with Rn = PC refer to the table that follows them', () => {
  const { prog, addrs } = assembleCases();
  for (const i of cases.flatMap((c, k) => (c.kind === 'tableBranch' && c.readsPc ? [k] : []))) {
    const insn = codec.decode(bytesAt(prog, addrs[i]!), addrs[i]!);
    assert.equal(insn.target, addrs[i]! + 4);
  }
});

/** Decodes every instruction objdump shows and checks that both walk in step (no desync). */
function walkInStep(prog: AssembledProgram, label: string): { instructions: number; targets: number } {
  let instructions = 0;
  let targets = 0;
  let expectNext: number | undefined;
  for (const line of prog.lines) {
    if (line.isData) {
      expectNext = undefined; // a literal pool: objdump resynchronises at the next mapping symbol
      continue;
    }
    if (expectNext !== undefined)
      assert.equal(
        line.address,
        expectNext,
        `${label}: decoder and objdump out of step at 0x${line.address.toString(16)}`,
      );
    const insn = codec.decode(bytesAt(prog, line.address), line.address);
    assert.equal(insn.length, line.length, `${label}: length at 0x${line.address.toString(16)} (${line.text})`);
    expectNext = line.address + insn.length;
    instructions++;
    const shown = referencedAddress(line);
    if (shown !== undefined && insn.target !== undefined) {
      assert.equal(insn.target, shown, `${label}: target at 0x${line.address.toString(16)} (${line.text})`);
      targets++;
    }
    checkClassAgainstObjdump(insn, line, label);
  }
  return { instructions, targets };
}

/** Independent classification from objdump's text: branch mnemonics, PC operands. */
function checkClassAgainstObjdump(insn: DecodedInstruction, line: ObjdumpLine, label: string): void {
  const m = line.mnemonic.replace(/\.[nw]$/, '');
  const where = `${label}: 0x${line.address.toString(16)} ${line.text}`;
  if (/^b(eq|ne|cs|cc|hs|lo|mi|pl|vs|vc|hi|ls|ge|lt|gt|le)?$/.test(m) && !/^(bx|bl)/.test(m)) {
    assert.ok(insn.kind === 'branch' || insn.kind === 'condBranch', `${where}: kind ${insn.kind}`);
    assert.equal(insn.target, referencedAddress(line), where);
  }
  if (m === 'bl') assert.equal(insn.kind, 'call', where);
  if (m === 'cbz' || m === 'cbnz') assert.equal(insn.kind, 'condBranch', where);
  if (m === 'tbb' || m === 'tbh') assert.equal(insn.kind, 'tableBranch', where);
  if (/^it[te]*$/.test(m)) assert.equal(insn.kind, 'it', where);
  if (/\bpc\b/.test(line.operands) && !/^(push|stm)/.test(m))
    assert.ok(insn.readsPc || /^(pop|ldm|bx|mov|ldr)/.test(m), `${where}: PC operand not flagged`);
  if (/\[pc/.test(line.operands)) assert.ok(insn.readsPc, `${where}: PC-relative load not flagged`);
}

const cProgram =
  `
typedef unsigned int u32;
volatile u32 sink;
static const u32 table[16] = {1, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47, 53};
__attribute__((noinline)) u32 crc(const unsigned char *p, u32 n) {
  u32 c = 0xffffffffu;
  while (n--) { c ^= *p++; for (int k = 0; k < 8; k++) c = (c >> 1) ^ (0xedb88320u & -(c & 1)); }
  return ~c;
}
__attribute__((noinline)) int classify(int x) {
  switch (x) { case 0: return 10; case 1: return 22; case 2: return 35; case 3: return 47; case 4: return 51;
               case 5: return 66; case 6: return 70; case 7: return 88; case 8: return 91; default: return -1; }
}
__attribute__((noinline)) float mix(float a, float b, int n) { float s = 0;` +
  ` for (int i = 0; i < n; i++) s += a * i + b / (i + 1); return s; }
__attribute__((noinline)) long long wide(long long a, long long b) { return a * b + (a >> 3) / (b | 1); }
__attribute__((noinline)) u32 lookup(u32 i) { return table[i & 15] * 0x9e3779b9u + sink; }
__attribute__((noinline)) void copy(u32 *d, const u32 *s, u32 n) { for (u32 i = 0; i < n; i++) d[i] = s[i] + i; }
int main(void) {
  u32 buf[64]; unsigned char bytes[32];
  for (int i = 0; i < 32; i++) bytes[i] = (unsigned char)(i * 7);
  copy(buf, (const u32 *)bytes, 8);
  sink = crc(bytes, 32) + (u32)classify((int)sink) + (u32)mix(1.5f, 2.5f, (int)sink)` +
  ` + (u32)wide(sink, 77) + lookup(sink) + buf[3];
  for (;;) {}
}
`;

const programs: { name: string; flags: string[] }[] = [
  {
    name: 'cortex-m4 -O2 hard-float',
    flags: ['-mcpu=cortex-m4', '-mthumb', '-mfpu=fpv4-sp-d16', '-mfloat-abi=hard', '-O2'],
  },
  { name: 'cortex-m4 -Os', flags: ['-mcpu=cortex-m4', '-mthumb', '-Os'] },
  { name: 'cortex-m0 -O2 (ARMv6-M)', flags: ['-mcpu=cortex-m0', '-mthumb', '-O2'] },
  {
    name: 'cortex-m33 -O2 (ARMv8-M Mainline)',
    flags: ['-mcpu=cortex-m33', '-mthumb', '-mfloat-abi=hard', '-mfpu=fpv5-sp-d16', '-O2'],
  },
  { name: 'cortex-m23 -O2 (ARMv8-M Baseline)', flags: ['-mcpu=cortex-m23', '-mthumb', '-O2'] },
  { name: 'cortex-m55 -O3 (Armv8.1-M, MVE)', flags: ['-mcpu=cortex-m55', '-mthumb', '-mfloat-abi=hard', '-O3'] },
];

for (const program of programs) {
  test(`thumb: decoding a compiled program walks in step with objdump: ${program.name}`, (t) => {
    const prog = compileC(m4, cProgram, program.flags, ['-lgcc']);
    const { instructions, targets } = walkInStep(prog, program.name);
    t.diagnostic(`${instructions} instructions, ${targets} targets compared`);
    assert.ok(instructions > 100, `only ${instructions} instructions`);
    assert.ok(targets > 5, `only ${targets} targets compared`);
  });
}

test('thumb: decoding the fixture firmware walks in step with objdump', (t) => {
  const dir = join(fixturesDir, 'build', 'cortex-m4');
  const elves = existsSync(dir) ? readdirSync(dir).filter((f) => f.endsWith('.elf')) : [];
  assert.ok(elves.length > 0, 'no fixtures built: run `npm run fixtures` (npm test builds them)');
  for (const elf of elves) {
    const prog = readElfText(m4, join(dir, elf));
    const { instructions, targets } = walkInStep(prog, elf);
    t.diagnostic(`${elf}: ${instructions} instructions, ${targets} targets compared`);
    assert.ok(instructions > 50, `${elf}: ${instructions} instructions`);
  }
});

test('thumb: random halfwords decode to the lengths and PC-relative addresses objdump finds', (t) => {
  // A deterministic xorshift stream; objdump walks the same bytes, so any length error desyncs.
  let s = 0x2545f491;
  const next = (): number => {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    return s >>> 0;
  };
  const bytes = new Uint8Array(24000);
  for (let i = 0; i < bytes.length; i += 4) bytes.set(enc.word(next()), i);
  const base = 0x08000000;
  const lines = disassembleBytes(m4, bytes, base);
  let compared = 0;
  let at = base;
  for (const line of lines) {
    if (line.address >= base + bytes.length - 4) break;
    assert.equal(line.address, at, `out of step at 0x${line.address.toString(16)}`);
    let insn: DecodedInstruction | undefined;
    try {
      insn = codec.decode(bytes.subarray(at - base), at);
    } catch {
      // undefined encodings: objdump prints something, we refuse; only the length must agree
    }
    const length = insn?.length ?? (bytes[at - base + 1]! >> 3 >= 0b11101 ? 4 : 2);
    assert.equal(length, line.length, `length at 0x${at.toString(16)}: ${line.text}`);
    const shown = referencedAddress(line);
    if (insn?.target !== undefined && shown !== undefined && !/UNPREDICTABLE|undefined/i.test(line.text)) {
      assert.equal(insn.target, shown, `address at 0x${at.toString(16)}: ${line.text}`);
      compared++;
    }
    at += length;
  }
  t.diagnostic(`${lines.length} instructions, ${compared} PC-relative addresses compared`);
  assert.ok(compared > 200, `only ${compared} PC-relative addresses compared`);
});

// ---------------------------------------------------------------------------------------------
// Encoders: the bytes must be what `as` produces for the intended instruction, and objdump must
// read them back as that instruction.

interface EncoderCase {
  bytes: Uint8Array;
  /** What `as` should produce the same bytes from. */
  asm: string;
}

const ENC_AT = 0x8000;

const encoderCases: EncoderCase[] = [
  { bytes: enc.encodeMovw(0, 0x1234), asm: 'movw r0, #0x1234' },
  { bytes: enc.encodeMovw(12, 0xffff), asm: 'movw r12, #0xffff' },
  { bytes: enc.encodeMovw(14, 0x0801), asm: 'movw lr, #0x0801' },
  { bytes: enc.encodeMovt(3, 0xe000), asm: 'movt r3, #0xe000' },
  { bytes: enc.encodeMovt(9, 0x0001), asm: 'movt r9, #0x0001' },
  { bytes: enc.encodePush([4, 5, 14]), asm: 'push {r4, r5, lr}' },
  { bytes: enc.encodePush([0, 1]), asm: 'push {r0, r1}' },
  { bytes: enc.encodePush([4, 8, 14]), asm: 'push.w {r4, r8, lr}' },
  { bytes: enc.encodePush([9]), asm: 'push.w {r9}' },
  { bytes: enc.encodePop([0, 15]), asm: 'pop {r0, pc}' },
  { bytes: enc.encodePop([4, 11, 15]), asm: 'pop.w {r4, r11, pc}' },
  { bytes: enc.encodePop([10]), asm: 'pop.w {r10}' },
  { bytes: enc.encodePop([14]), asm: 'pop.w {lr}' },
  { bytes: enc.encodeBx(14), asm: 'bx lr' },
  { bytes: enc.encodeBx(3), asm: 'bx r3' },
  { bytes: enc.encodeBlx(12), asm: 'blx r12' },
  { bytes: enc.encodeNop(), asm: 'nop' },
  { bytes: enc.encodeNop(true), asm: 'nop.w' },
  { bytes: enc.encodeMrsApsr(0), asm: 'mrs r0, apsr' },
  { bytes: enc.encodeMrsApsr(12), asm: 'mrs r12, apsr' },
  { bytes: enc.encodeMsrApsr(1), asm: 'msr apsr_nzcvq, r1' },
  { bytes: enc.encodeMsrApsr(2, true), asm: 'msr apsr_nzcvqg, r2' },
  { bytes: enc.encodeMovRegister(8, 0), asm: 'mov r8, r0' },
  { bytes: enc.encodeMovRegister(14, 3), asm: 'mov lr, r3' },
  { bytes: enc.encodeAddRegister(0, 9), asm: 'add r0, r9' },
  { bytes: enc.encodeLdrImmediate(0, 1, 4), asm: 'ldr r0, [r1, #4]' },
  { bytes: enc.encodeLdrImmediate(2, 13, 1020), asm: 'ldr r2, [sp, #1020]' },
  { bytes: enc.encodeLdrImmediate(8, 0, 0), asm: 'ldr.w r8, [r0]' },
  { bytes: enc.encodeLdrImmediate(0, 9, 4095), asm: 'ldr.w r0, [r9, #4095]' },
  { bytes: enc.encodeLdrImmediate(0, 1, -4), asm: 'ldr r0, [r1, #-4]' },
  { bytes: enc.encodeStrImmediate(0, 13, 4), asm: 'str r0, [sp, #4]' },
  { bytes: enc.encodeStrImmediate(7, 6, 124), asm: 'str r7, [r6, #124]' },
  { bytes: enc.encodeStrImmediate(1, 2, 128), asm: 'str.w r1, [r2, #128]' },
  { bytes: enc.encodeStrImmediate(1, 2, -255), asm: 'str r1, [r2, #-255]' },
  { bytes: enc.encodeLoadStoreImmediate(true, 'byte', 1, 2, 3), asm: 'ldrb r1, [r2, #3]' },
  { bytes: enc.encodeLoadStoreImmediate(false, 'halfword', 1, 2, 62), asm: 'strh r1, [r2, #62]' },
  { bytes: enc.encodeLoadStoreImmediate(true, 'halfword', 9, 2, 64), asm: 'ldrh.w r9, [r2, #64]' },
  { bytes: enc.encodeAddImmediate(13, 13, 8), asm: 'add sp, #8' },
  { bytes: enc.encodeSubImmediate(13, 13, 508), asm: 'sub sp, #508' },
  { bytes: enc.encodeAddImmediate(0, 13, 16), asm: 'add r0, sp, #16' },
  { bytes: enc.encodeAddImmediate(0, 1, 4095), asm: 'addw r0, r1, #4095' },
  { bytes: enc.encodeSubImmediate(9, 9, 1), asm: 'subw r9, r9, #1' },
  { bytes: enc.encodeAddImmediate(0, 1, 0x10000), asm: 'add.w r0, r1, #0x10000' },
  { bytes: enc.encodeSubImmediate(2, 3, 0xff00ff00), asm: 'sub.w r2, r3, #0xff00ff00' },
  { bytes: enc.encodeAddImmediate(0, 1, 3, true), asm: 'adds r0, r1, #3' },
  { bytes: enc.encodeSubImmediate(4, 4, 200, true), asm: 'subs r4, #200' },
  { bytes: enc.encodeAddImmediate(8, 8, 0x3fc, true), asm: 'adds.w r8, r8, #0x3fc' },
  { bytes: enc.encodeLdrLiteralWide(3, ENC_AT, ENC_AT + 0x104), asm: 'ldr.w r3, [pc, #0x100]' },
  { bytes: enc.encodeLdrLiteralWide(15, ENC_AT, ENC_AT + 4), asm: 'ldr.w pc, [pc, #0]' },
  { bytes: enc.encodeLdrLiteralWide(0, ENC_AT, ENC_AT - 0x40), asm: 'ldr.w r0, [pc, #-0x44]' },
  { bytes: enc.encodeLdrLiteralNarrow(1, ENC_AT, ENC_AT + 8), asm: 'ldr r1, [pc, #4]' },
];

test('thumb encoders: bytes equal what the GNU assembler produces, and objdump reads them back', () => {
  const src = encoderCases.map((c, i) => `.balign 4\ne${i}: ${c.asm}`).join('\n');
  const prog = assemble(m4, src, ENC_AT);
  encoderCases.forEach((c, i) => {
    const at = prog.symbols.get(`e${i}`)!;
    const expected = prog.text.subarray(at - prog.base, at - prog.base + c.bytes.length);
    assert.deepEqual([...c.bytes], [...expected], `"${c.asm}": ours ${hex(c.bytes)}, as: ${hex(expected)}`);
    const back = disassembleBytes(m4, c.bytes, ENC_AT);
    assert.equal(back.length, 1, `"${c.asm}" disassembles to one instruction`);
    assert.equal(back[0]!.length, c.bytes.length);
  });
});

function hex(b: Uint8Array): string {
  return [...b].map((x) => x.toString(16).padStart(2, '0')).join(' ');
}

interface BranchCase {
  bytes: () => Uint8Array;
  from: number;
  to: number;
  mnemonic: RegExp;
}

const branchCases: BranchCase[] = [
  { bytes: () => enc.encodeBNarrow(0x1000, 0x1800), from: 0x1000, to: 0x1800, mnemonic: /^b\.n$/ },
  { bytes: () => enc.encodeBNarrow(0x1000, 0x1000 - 2044), from: 0x1000, to: 0x1000 - 2044, mnemonic: /^b\.n$/ },
  { bytes: () => enc.encodeBWide(0x08000000, 0x08ffff00), from: 0x08000000, to: 0x08ffff00, mnemonic: /^b\.w$/ },
  { bytes: () => enc.encodeBWide(0x08400002, 0x07400006), from: 0x08400002, to: 0x07400006, mnemonic: /^b\.w$/ },
  { bytes: () => enc.encodeBWide(0x20000000, 0x20000004), from: 0x20000000, to: 0x20000004, mnemonic: /^b\.w$/ },
  { bytes: () => enc.encodeBl(0x08000100, 0x08123456), from: 0x08000100, to: 0x08123456, mnemonic: /^bl$/ },
  { bytes: () => enc.encodeBl(0x00fffffe, 0x00000002), from: 0x00fffffe, to: 0x00000002, mnemonic: /^bl$/ },
  {
    bytes: () => enc.encodeBCondNarrow(enc.Cond.ne, 0x2000, 0x2000 + 4 + 254),
    from: 0x2000,
    to: 0x2000 + 4 + 254,
    mnemonic: /^bne\.n$/,
  },
  {
    bytes: () => enc.encodeBCondNarrow(enc.Cond.lt, 0x2000, 0x2000 + 4 - 256),
    from: 0x2000,
    to: 0x2000 + 4 - 256,
    mnemonic: /^blt\.n$/,
  },
  {
    bytes: () => enc.encodeBCondWide(enc.Cond.eq, 0x2000, 0x2000 + 0xffffe),
    from: 0x2000,
    to: 0x2000 + 0xffffe,
    mnemonic: /^beq\.w$/,
  },
  {
    bytes: () => enc.encodeBCondWide(enc.Cond.hi, 0x200000, 0x200004 - 0x100000),
    from: 0x200000,
    to: 0x200004 - 0x100000,
    mnemonic: /^bhi\.w$/,
  },
  {
    bytes: () => enc.encodeCbz(false, 3, 0x3000, 0x3000 + 4 + 126),
    from: 0x3000,
    to: 0x3000 + 4 + 126,
    mnemonic: /^cbz$/,
  },
  { bytes: () => enc.encodeCbz(true, 0, 0x3000, 0x3004), from: 0x3000, to: 0x3004, mnemonic: /^cbnz$/ },
];

test('thumb branch encoders: objdump disassembles them to the intended absolute target', () => {
  for (const c of branchCases) {
    const bytes = c.bytes();
    const [line] = disassembleBytes(m4, bytes, c.from);
    assert.ok(line, 'disassembles');
    assert.match(line.mnemonic, c.mnemonic, line.text);
    assert.equal(referencedAddress(line), c.to, `${line.text}: target`);
    const insn = codec.decode(bytes, c.from);
    assert.equal(insn.target, c.to, 'decoder agrees');
  }
});

test('thumb branch encoders refuse targets out of reach instead of truncating', () => {
  assert.throws(() => enc.encodeBNarrow(0x1000, 0x1000 + 4 + 2048), RangeError);
  assert.throws(() => enc.encodeBWide(0x08000000, 0x20000000), RangeError);
  assert.throws(() => enc.encodeBWide(0x08000000, 0x08000000 + 4 + (1 << 24)), RangeError);
  assert.doesNotThrow(() => enc.encodeBWide(0x08000000, 0x08000000 + 4 + (1 << 24) - 2));
  assert.doesNotThrow(() => enc.encodeBWide(0x08000000, 0x08000000 + 4 - (1 << 24)));
  assert.throws(() => enc.encodeBl(0x00000000, 0x20000000), RangeError);
  assert.throws(() => enc.encodeBCondNarrow(0, 0x1000, 0x1000 + 4 + 256), RangeError);
  assert.throws(() => enc.encodeBCondWide(0, 0x1000, 0x1000 + 4 + (1 << 20)), RangeError);
  assert.throws(() => enc.encodeBCondWide(14, 0x1000, 0x1004), RangeError, 'AL is not a branch condition');
  assert.throws(() => enc.encodeCbz(false, 0, 0x1000, 0x1000), RangeError, 'CBZ is forward only');
  assert.throws(() => enc.encodeCbz(false, 8, 0x1000, 0x1008), RangeError, 'CBZ takes a low register');
  assert.throws(() => enc.encodeBNarrow(0x1000, 0x1001), RangeError, 'odd target');
  assert.throws(() => enc.encodeLdrLiteralWide(0, 0x1000, 0x1004 + 4096), RangeError);
  assert.throws(() => enc.encodeLdrLiteralNarrow(0, 0x1000, 0x1006), RangeError, 'literal not word aligned');
  assert.throws(() => enc.encodeMovw(13, 0), RangeError, 'MOVW SP is UNPREDICTABLE');
  assert.throws(() => enc.encodeMovt(0, 0x10000), RangeError);
  assert.throws(() => enc.encodePop([14, 15]), RangeError);
  assert.throws(() => enc.encodeAddImmediate(0, 1, 0x12345), RangeError);
});

test('thumb modified immediates: every encodable constant round-trips through the assembler', () => {
  const values = [
    0, 0xff, 0x00ab00ab, 0xab00ab00, 0xabababab, 0x80000000, 0x3fc, 0xff000000, 0x00ff0000, 0x1fe, 0x7f80,
  ];
  for (const v of values) assert.notEqual(enc.thumbModifiedImmediate(v), undefined, `0x${v.toString(16)}`);
  for (const v of [0x101, 0x12345678, 0x1ff, 0xab00ab01])
    assert.equal(enc.thumbModifiedImmediate(v), undefined, `0x${v.toString(16)}`);
  const src = values.map((v, i) => `m${i}: add.w r0, r1, #0x${v.toString(16)}`).join('\n');
  const prog = assemble(m4, src);
  values.forEach((v, i) => {
    const at = prog.symbols.get(`m${i}`)! - prog.base;
    // Constants up to 4095 take ADDW (imm12) first; the larger ones must match ADD.W's modified immediate.
    if (v > 4095)
      assert.deepEqual(
        [...enc.encodeAddImmediate(0, 1, v)],
        [...prog.text.subarray(at, at + 4)],
        `0x${v.toString(16)}`,
      );
  });
});
