import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { Rv32Codec, rvInstructionLength } from '../../adapter/arch/riscv/rvDecoder';
import * as enc from '../../adapter/arch/riscv/rvEncoder';
import type { DecodedInstruction, InstructionKind } from '../../adapter/arch/codec';
import {
  assemble,
  compileC,
  disassembleBytes,
  readElfText,
  referencedAddress,
  rv32Toolchain,
  type AssembledProgram,
  type ObjdumpLine,
} from '../support/gnuTools';
import { fixturesDir } from '../support/paths';

const codec = new Rv32Codec();
const tc = rv32Toolchain();
const RAM = 0x80000000;
const hex = (n: number): string => `0x${(n >>> 0).toString(16)}`;

/** objdump -M no-aliases spells a few things differently from the instruction's own name. */
function objdumpMnemonic(line: ObjdumpLine): string {
  if (line.mnemonic === 'c.addi' && /^zero,/.test(line.operands)) return 'c.nop';
  return line.mnemonic.replace(/^(c\.s[rl][la]i)64$/, '$1'); // shift amount 0: a HINT objdump names ...64
}
const grouped = new Set(['amo', 'fp', 'op']);

interface Case {
  asm: string;
  kind: InstructionKind;
  mnemonic?: string;
  readsPc?: boolean;
  target?: string;
  length?: 2 | 4;
  label?: string;
}
const p = (asm: string, length?: 2 | 4): Case => ({ asm, kind: 'plain', ...(length ? { length } : {}) });

const cases: Case[] = [
  { asm: 'auipc a0, 0x12', kind: 'plain', mnemonic: 'auipc', readsPc: true, length: 4 },
  { asm: 'auipc t1, 0xfffff', kind: 'plain', mnemonic: 'auipc', readsPc: true, length: 4 },
  { asm: 'jal ra, back', kind: 'call', mnemonic: 'jal', readsPc: true, target: 'back', length: 4 },
  { asm: 'jal zero, fwd', kind: 'branch', mnemonic: 'jal', readsPc: true, target: 'fwd', length: 4 },
  { asm: 'jal t0, back', kind: 'call', mnemonic: 'jal', readsPc: true, target: 'back', length: 4 },
  { asm: 'jal a3, fwd', kind: 'call', mnemonic: 'jal', readsPc: true, target: 'fwd', length: 4 },
  { asm: 'jalr zero, 0(ra)', kind: 'return', mnemonic: 'jalr', length: 4 },
  { asm: 'jalr zero, 0(t0)', kind: 'return', mnemonic: 'jalr', length: 4 },
  { asm: 'jalr zero, 4(ra)', kind: 'indirectBranch', mnemonic: 'jalr', length: 4 },
  { asm: 'jalr zero, 0(a5)', kind: 'indirectBranch', mnemonic: 'jalr', length: 4 },
  { asm: 'jalr ra, 0(a5)', kind: 'indirectCall', mnemonic: 'jalr', length: 4 },
  { asm: 'jalr ra, -8(a1)', kind: 'indirectCall', mnemonic: 'jalr', length: 4 },
  { asm: 'beq a0, a1, back', kind: 'condBranch', mnemonic: 'beq', readsPc: true, target: 'back', length: 4 },
  { asm: 'bne s0, zero, fwd', kind: 'condBranch', mnemonic: 'bne', readsPc: true, target: 'fwd', length: 4 },
  { asm: 'blt a2, a3, back', kind: 'condBranch', mnemonic: 'blt', readsPc: true, target: 'back', length: 4 },
  { asm: 'bge a2, a3, fwd', kind: 'condBranch', mnemonic: 'bge', readsPc: true, target: 'fwd', length: 4 },
  { asm: 'bltu t3, t4, back', kind: 'condBranch', mnemonic: 'bltu', readsPc: true, target: 'back', length: 4 },
  { asm: 'bgeu t5, t6, fwd', kind: 'condBranch', mnemonic: 'bgeu', readsPc: true, target: 'fwd', length: 4 },
  { asm: 'c.j back', kind: 'branch', mnemonic: 'c.j', readsPc: true, target: 'back', length: 2 },
  { asm: 'c.jal fwd', kind: 'call', mnemonic: 'c.jal', readsPc: true, target: 'fwd', length: 2 },
  { asm: 'c.beqz a0, back', kind: 'condBranch', mnemonic: 'c.beqz', readsPc: true, target: 'back', length: 2 },
  { asm: 'c.bnez s1, fwd', kind: 'condBranch', mnemonic: 'c.bnez', readsPc: true, target: 'fwd', length: 2 },
  { asm: 'c.jr ra', kind: 'return', mnemonic: 'c.jr', length: 2 },
  { asm: 'c.jr t0', kind: 'return', mnemonic: 'c.jr', length: 2 },
  { asm: 'c.jr a0', kind: 'indirectBranch', mnemonic: 'c.jr', length: 2 },
  { asm: 'c.jalr a0', kind: 'indirectCall', mnemonic: 'c.jalr', length: 2 },
  { asm: 'mret', kind: 'exceptionReturn', mnemonic: 'mret', length: 4 },
  { asm: 'wfi', kind: 'system', mnemonic: 'wfi' },
  { asm: 'ecall', kind: 'system', mnemonic: 'ecall' },
  { asm: 'ebreak', kind: 'system', mnemonic: 'ebreak', length: 4 },
  { asm: 'c.ebreak', kind: 'system', mnemonic: 'c.ebreak', length: 2 },
  { asm: 'fence rw, rw', kind: 'system', mnemonic: 'fence' },
  { asm: 'fence.i', kind: 'system', mnemonic: 'fence.i' },
  { asm: 'csrrw t0, mscratch, t0', kind: 'system', mnemonic: 'csrrw' },
  { asm: 'csrrs a0, minstret, zero', kind: 'system', mnemonic: 'csrrs' },
  { asm: 'csrrc zero, mstatus, a1', kind: 'system', mnemonic: 'csrrc' },
  { asm: 'csrrwi zero, mcountinhibit, 5', kind: 'system', mnemonic: 'csrrwi' },
  { asm: 'csrrsi zero, mcountinhibit, 4', kind: 'system', mnemonic: 'csrrsi' },
  { asm: 'csrrci zero, mcountinhibit, 4', kind: 'system', mnemonic: 'csrrci' },
  p('lui a0, 0x12345', 4),
  p('addi a0, a0, -1', 4),
  p('c.addi a0, 1', 2),
  p('c.nop', 2),
  p('c.li a1, -3', 2),
  p('c.lui a2, 0x1f', 2),
  p('c.addi16sp sp, -64', 2),
  p('c.addi4spn a0, sp, 16', 2),
  p('lw a0, 4(sp)', 4),
  p('c.lwsp a0, 4(sp)', 2),
  p('c.swsp ra, 12(sp)', 2),
  p('c.lw a2, 4(a0)', 2),
  p('c.sw a2, 8(a0)', 2),
  p('sw a0, -4(a1)', 4),
  p('lbu t0, 0(t1)', 4),
  p('sh a0, 2(a1)', 4),
  p('slli a0, a0, 3', 4),
  p('c.slli a0, 3', 2),
  p('srai a1, a1, 2', 4),
  p('c.srai a1, 2', 2),
  p('c.srli s1, 1', 2),
  p('c.andi a0, 7', 2),
  p('c.sub a0, a1', 2),
  p('c.xor a0, a1', 2),
  p('c.or a0, a1', 2),
  p('c.and a0, a1', 2),
  p('c.mv a0, a1', 2),
  p('c.add a0, a1', 2),
  p('add a0, a1, a2', 4),
  p('sub a0, a1, a2', 4),
  p('sltu a0, a1, a2', 4),
  p('mul a0, a1, a2', 4),
  p('mulhu a0, a1, a2', 4),
  p('div a0, a1, a2', 4),
  p('remu a0, a1, a2', 4),
  p('lr.w a0, (a1)', 4),
  p('sc.w a2, a0, (a1)', 4),
  p('amoadd.w a0, a2, (a1)', 4),
];

function wrap(c: Case): string {
  // gas compresses whatever it can; a case that names the 32-bit form must not be compressed.
  return c.length === 4 ? `.option push\n.option norvc\n ${c.asm}\n.option pop` : c.asm;
}

function assembleCases(): { prog: AssembledProgram; addrs: number[] } {
  const body = cases.map((c, i) => `${c.label ? `${c.label}:\n` : ''}c${i}:\n ${wrap(c)}`).join('\n');
  const prog = assemble(tc, `back: c.nop\n${body}\nfwd: c.nop\n`, RAM);
  return { prog, addrs: cases.map((_, i) => prog.symbols.get(`c${i}`)!) };
}

const bytesAt = (prog: AssembledProgram, a: number): Uint8Array => prog.text.subarray(a - prog.base);

test('rv32: every control-flow form and a spread of ordinary instructions decode as objdump says', () => {
  const { prog, addrs } = assembleCases();
  const byAddress = new Map(prog.lines.map((l) => [l.address, l]));
  cases.forEach((c, i) => {
    const at = addrs[i]!;
    const line = byAddress.get(at);
    assert.ok(line, `no objdump line for ${c.asm}`);
    const insn = codec.decode(bytesAt(prog, at), at);
    const what = `"${c.asm}" (objdump: ${line.text})`;
    assert.equal(insn.length, line.length, `length of ${what}`);
    if (c.length) assert.equal(insn.length, c.length, `width of ${what}`);
    assert.equal(insn.kind, c.kind, `kind of ${what}`);
    assert.equal(insn.readsPc, c.readsPc ?? false, `readsPc of ${what}`);
    assert.equal(insn.mnemonic, objdumpMnemonic(line), `mnemonic of ${what}`);
    if (c.mnemonic) assert.equal(insn.mnemonic, c.mnemonic);
    if (c.target) {
      assert.equal(insn.target, prog.symbols.get(c.target), `target of ${what}`);
      assert.equal(insn.target, referencedAddress(line), `objdump's target of ${what}`);
    }
    if (insn.mnemonic === 'auipc') {
      const upper = parseInt(/,0x([0-9a-f]+)$/.exec(line.operands)![1]!, 16);
      assert.equal(insn.target, (at + (upper << 12)) >>> 0, `AUIPC value of ${what}`);
    }
  });
});

function walkInStep(prog: AssembledProgram, label: string): { instructions: number; targets: number } {
  let instructions = 0;
  let targets = 0;
  let expectNext: number | undefined;
  for (const line of prog.lines) {
    if (line.isData) {
      expectNext = undefined;
      continue;
    }
    const where = `${label}: 0x${line.address.toString(16)} ${line.text}`;
    if (expectNext !== undefined) assert.equal(line.address, expectNext, `${where}: out of step`);
    const insn = codec.decode(bytesAt(prog, line.address), line.address);
    assert.equal(insn.length, line.length, `${where}: length`);
    if (!grouped.has(insn.mnemonic)) assert.equal(insn.mnemonic, objdumpMnemonic(line), `${where}: mnemonic`);
    if (insn.target !== undefined && insn.mnemonic !== 'auipc') {
      assert.equal(insn.target, referencedAddress(line), `${where}: target`);
      targets++;
    }
    expectNext = line.address + insn.length;
    instructions++;
  }
  return { instructions, targets };
}

const cProgram = `
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
__attribute__((noinline)) long long wide(long long a, long long b) { return a * b + (a >> 3) + (b << 7); }
__attribute__((noinline)) u32 lookup(u32 i) { return table[i & 15] * 0x9e3779b9u + sink; }
__attribute__((noinline)) void copy(u32 *d, const u32 *s, u32 n) { for (u32 i = 0; i < n; i++) d[i] = s[i] + i; }
__attribute__((noinline)) u32 counters(void) { u32 c; __asm__ volatile ("csrr %0, minstret" : "=r"(c)); return c; }
int main(void) {
  u32 buf[64]; unsigned char bytes[32];
  for (int i = 0; i < 32; i++) bytes[i] = (unsigned char)(i * 7);
  copy(buf, (const u32 *)bytes, 8);
  sink = crc(bytes, 32) + (u32)classify((int)sink) + (u32)wide(sink, 77) + lookup(sink) + buf[3] + counters();
  for (;;) {}
}
`;

const programs = [
  { name: 'rv32imac -O2', flags: ['-march=rv32imac_zicsr', '-mabi=ilp32', '-O2'] },
  { name: 'rv32imac -Os', flags: ['-march=rv32imac_zicsr', '-mabi=ilp32', '-Os'] },
  { name: 'rv32im -O2 (no compressed)', flags: ['-march=rv32im_zicsr', '-mabi=ilp32', '-O2'] },
  { name: 'rv32imac -O2 -mcmodel=medany', flags: ['-march=rv32imac_zicsr', '-mabi=ilp32', '-O2', '-mcmodel=medany'] },
];

for (const program of programs) {
  test(`rv32: decoding a compiled program walks in step with objdump: ${program.name}`, (t) => {
    const prog = compileC(tc, cProgram, program.flags);
    const { instructions, targets } = walkInStep(prog, program.name);
    t.diagnostic(`${instructions} instructions, ${targets} targets compared`);
    assert.ok(instructions > 100 && targets > 10);
  });
}

test('rv32: decoding the fixture firmware walks in step with objdump', (t) => {
  const dir = join(fixturesDir, 'build', 'rv32');
  const elves = existsSync(dir) ? readdirSync(dir).filter((f) => f.endsWith('.elf')) : [];
  assert.ok(elves.length > 0, 'no fixtures built: run `npm run fixtures` (npm test builds them)');
  for (const elf of elves) {
    const { instructions, targets } = walkInStep(readElfText(tc, join(dir, elf)), elf);
    t.diagnostic(`${elf}: ${instructions} instructions, ${targets} targets compared`);
  }
});

test('rv32: random instruction words decode to the lengths, names and targets objdump finds', (t) => {
  let s = 0x9e3779b9;
  const next = (): number => {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    return s >>> 0;
  };
  const bytes: number[] = [];
  while (bytes.length < 24000) {
    let w = next();
    if ((w & 0x1f) === 0x1f) w &= ~0x4; // no 48-bit-or-longer encodings
    const len = rvInstructionLength(w & 0xffff)!;
    for (let k = 0; k < len; k++) bytes.push((w >>> (8 * k)) & 0xff);
  }
  const base = RAM;
  const data = Uint8Array.from(bytes);
  let at = base;
  let named = 0;
  let targets = 0;
  for (const line of disassembleBytes(tc, data, base)) {
    assert.equal(line.address, at, `out of step at ${hex(at)}`);
    const length = rvInstructionLength(data[at - base]! | (data[at - base + 1]! << 8))!;
    assert.equal(length, line.length, `length at ${hex(at)}: ${line.text}`);
    let insn: DecodedInstruction | undefined;
    try {
      insn = codec.decode(data.subarray(at - base), at);
    } catch {
      assert.ok(
        line.isData || /unknown|^\.insn/.test(line.text),
        `we refuse what objdump decodes at ${hex(at)}: ${line.text}`,
      );
    }
    if (insn && !line.isData) {
      if (!grouped.has(insn.mnemonic)) {
        assert.equal(insn.mnemonic, objdumpMnemonic(line), `mnemonic at ${hex(at)}: ${line.text}`);
        named++;
      }
      if (insn.target !== undefined && insn.mnemonic !== 'auipc') {
        assert.equal(insn.target, referencedAddress(line), `target at ${hex(at)}: ${line.text}`);
        targets++;
      }
    }
    at += length;
  }
  t.diagnostic(`${named} mnemonics and ${targets} targets compared`);
  assert.ok(named > 1000 && targets > 100);
});

// ---------------------------------------------------------------------------------------------
// Encoders.

const encoderCases: { bytes: Uint8Array; asm: string }[] = [
  { bytes: enc.encodeLui(10, 0x12345), asm: 'lui a0, 0x12345' },
  { bytes: enc.encodeLui(5, 0xfffff), asm: 'lui t0, 0xfffff' },
  { bytes: enc.encodeAuipc(1, 0x80000), asm: 'auipc ra, 0x80000' },
  { bytes: enc.encodeAddi(10, 10, -2048), asm: 'addi a0, a0, -2048' },
  { bytes: enc.encodeAddi(2, 2, 2047), asm: 'addi sp, sp, 2047' },
  { bytes: enc.encodeLw(11, 2, 124), asm: 'lw a1, 124(sp)' },
  { bytes: enc.encodeLw(31, 30, -4), asm: 'lw t6, -4(t5)' },
  { bytes: enc.encodeSw(8, 9, -2048), asm: 'sw s0, -2048(s1)' },
  { bytes: enc.encodeSw(1, 2, 12), asm: 'sw ra, 12(sp)' },
  { bytes: enc.encodeJalr(0, 1, 0), asm: 'jalr zero, 0(ra)' },
  { bytes: enc.encodeJalr(1, 6, -12), asm: 'jalr ra, -12(t1)' },
  { bytes: enc.encodeCsr('csrrw', 0, enc.Csr.mscratch, 5), asm: 'csrrw zero, mscratch, t0' },
  { bytes: enc.encodeCsr('csrrs', 10, enc.Csr.minstret, 0), asm: 'csrrs a0, minstret, zero' },
  { bytes: enc.encodeCsr('csrrc', 0, enc.Csr.mcountinhibit, 11), asm: 'csrrc zero, mcountinhibit, a1' },
  { bytes: enc.encodeCsrImmediate('csrrsi', 0, enc.Csr.mcountinhibit, 4), asm: 'csrrsi zero, mcountinhibit, 4' },
  { bytes: enc.encodeCsrImmediate('csrrci', 0, enc.Csr.mcountinhibit, 5), asm: 'csrrci zero, mcountinhibit, 5' },
  { bytes: enc.encodeCsrImmediate('csrrwi', 12, enc.Csr.mcycle, 31), asm: 'csrrwi a2, mcycle, 31' },
  { bytes: enc.encodeCsr('csrrs', 10, enc.Csr.mhpmcounter3, 0), asm: 'csrrs a0, mhpmcounter3, zero' },
  { bytes: enc.encodeCNop(), asm: 'c.nop' },
  { bytes: enc.encodeCEbreak(), asm: 'c.ebreak' },
  { bytes: enc.encodeCJr(1), asm: 'c.jr ra' },
  { bytes: enc.encodeCJalr(15), asm: 'c.jalr a5' },
  { bytes: enc.encodeCLi(10, -32), asm: 'c.li a0, -32' },
  { bytes: enc.encodeCLi(31, 31), asm: 'c.li t6, 31' },
  { bytes: enc.encodeCAddi(2, -16), asm: 'c.addi sp, -16' },
  { bytes: enc.encodeCMv(10, 11), asm: 'c.mv a0, a1' },
  { bytes: enc.encodeCLwsp(1, 252), asm: 'c.lwsp ra, 252(sp)' },
  { bytes: enc.encodeCLwsp(10, 4), asm: 'c.lwsp a0, 4(sp)' },
  { bytes: enc.encodeCSwsp(1, 252), asm: 'c.swsp ra, 252(sp)' },
  { bytes: enc.encodeCSwsp(8, 64), asm: 'c.swsp s0, 64(sp)' },
  { bytes: enc.encodeCLw(10, 11, 124), asm: 'c.lw a0, 124(a1)' },
  { bytes: enc.encodeCSw(15, 8, 4), asm: 'c.sw a5, 4(s0)' },
  { bytes: enc.encodeLoadImmediate(10, 0x12345678), asm: 'lui a0, 0x12345\n addi a0, a0, 0x678' },
  { bytes: enc.encodeLoadImmediate(10, 0x80000800), asm: 'lui a0, 0x80001\n addi a0, a0, -2048' },
  { bytes: enc.encodeLoadImmediate(10, -5), asm: 'addi a0, zero, -5' },
  { bytes: enc.encodeLoadImmediate(10, 0x20000000), asm: 'lui a0, 0x20000' },
];

test('rv32 encoders: bytes equal what the GNU assembler produces, and objdump reads them back', () => {
  const src = encoderCases
    .map((c, i) => {
      const insn = c.bytes.length >= 4 ? `.option push\n.option norvc\n ${c.asm}\n.option pop` : ` ${c.asm}`;
      return `.balign 4\ne${i}:\n${insn}`;
    })
    .join('\n');
  const prog = assemble(tc, src, RAM);
  encoderCases.forEach((c, i) => {
    const at = prog.symbols.get(`e${i}`)! - prog.base;
    assert.deepEqual([...c.bytes], [...prog.text.subarray(at, at + c.bytes.length)], c.asm);
    const back = disassembleBytes(tc, c.bytes, RAM);
    assert.equal(
      back.reduce((n, l) => n + l.length, 0),
      c.bytes.length,
      `${c.asm} disassembles whole`,
    );
    assert.ok(
      back.every((l) => !l.isData),
      `${c.asm}: objdump decodes ${back.map((l) => l.text).join('; ')}`,
    );
  });
});

const branchEncoders: { bytes: () => Uint8Array; from: number; to: number; mnemonic: string }[] = [
  { bytes: () => enc.encodeJal(1, RAM, RAM + 0xffffe), from: RAM, to: RAM + 0xffffe, mnemonic: 'jal' },
  { bytes: () => enc.encodeJal(0, RAM + 0x100000, RAM), from: RAM + 0x100000, to: RAM, mnemonic: 'jal' },
  { bytes: () => enc.encodeBranch('bltu', 10, 11, RAM, RAM + 4094), from: RAM, to: RAM + 4094, mnemonic: 'bltu' },
  { bytes: () => enc.encodeBranch('bge', 10, 0, RAM + 4096, RAM), from: RAM + 4096, to: RAM, mnemonic: 'bge' },
  { bytes: () => enc.encodeCJ(RAM, RAM + 2046), from: RAM, to: RAM + 2046, mnemonic: 'c.j' },
  { bytes: () => enc.encodeCJ(RAM + 2048, RAM), from: RAM + 2048, to: RAM, mnemonic: 'c.j' },
  { bytes: () => enc.encodeCJal(RAM, RAM + 0x2a), from: RAM, to: RAM + 0x2a, mnemonic: 'c.jal' },
  { bytes: () => enc.encodeCBranchZero(false, 8, RAM, RAM + 254), from: RAM, to: RAM + 254, mnemonic: 'c.beqz' },
  { bytes: () => enc.encodeCBranchZero(true, 15, RAM + 256, RAM), from: RAM + 256, to: RAM, mnemonic: 'c.bnez' },
];

test('rv32 branch encoders: objdump disassembles them to the intended absolute target', () => {
  for (const c of branchEncoders) {
    const [line] = disassembleBytes(tc, c.bytes(), c.from);
    assert.ok(line);
    assert.equal(line.mnemonic, c.mnemonic, line.text);
    assert.equal(referencedAddress(line), c.to, line.text);
  }
  assert.throws(() => enc.encodeJal(0, RAM, RAM + 0x100000), RangeError);
  assert.throws(() => enc.encodeBranch('beq', 1, 2, RAM, RAM + 4096), RangeError);
  assert.throws(() => enc.encodeCJ(RAM, RAM + 2048), RangeError);
  assert.throws(() => enc.encodeCBranchZero(false, 7, RAM, RAM + 8), RangeError, 'x7 has no compressed encoding');
  assert.throws(() => enc.encodeCsrImmediate('csrrsi', 0, 0x320, 32), RangeError);
  assert.throws(() => enc.encodeAddi(1, 1, 2048), RangeError);
});
