import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ArcCodec, arcInstructionLength, arcLoopBodies } from '../../adapter/arch/arc/arcIsaDecoder';
import * as enc from '../../adapter/arch/arc/arcIsaEncoder';
import type { DecodedInstruction, InstructionKind } from '../../adapter/arch/codec';
import {
  arcToolchain,
  assemble,
  disassembleBytes,
  referencedAddress,
  type GnuToolchain,
  type ObjdumpLine,
} from '../support/gnuTools';
import { toolCache } from '../support/paths';

const codec = new ArcCodec();
const em = arcToolchain('em4_fpuda');
const hs = arcToolchain('archs');
// npm test builds ARC binutils in its set-up (scripts/buildArcBinutils.sh); without them these tests fail, never skip.
const absent =
  'arc-elf32 binutils are not installed: run scripts/buildArcBinutils.sh (builds GNU binutils ' +
  '2.40 into the tool cache); the ARC codec is then checked against the real assembler';
if (!em) throw new Error(absent);
const BASE = 0x10000;
const hex = (n: number): string => `0x${(n >>> 0).toString(16)}`;

test('arc: GNU binutils for arc-elf32 assemble and disassemble both cores', (t) => {
  t.diagnostic(`using ${em!.prefix}as / objdump`);
  // A round trip through the real tools: `nop_s` is the halfword 0x78E0 on every ARCv2 core, and
  // the codec reads it back as a 2-byte nop.
  for (const tc of [em!, hs!]) {
    const program = assemble(tc, 'nop_s', BASE);
    assert.deepEqual([...program.text.subarray(0, 2)], [0xe0, 0x78], `${tc.prefix}as encodes nop_s as 0x78E0`);
    const listed = disassembleBytes(tc, program.text.subarray(0, 2), BASE);
    assert.equal(listed[0]?.mnemonic, 'nop_s');
    const decoded = codec.decode(program.text.subarray(0, 2), BASE);
    assert.deepEqual([decoded.length, decoded.mnemonic], [2, 'nop_s']);
  }
});

/** Bytes of a 32-bit word (and limm) as stored: high halfword first. */
const words = (...ws: number[]): Uint8Array =>
  Uint8Array.from(ws.flatMap((w) => [(w >>> 16) & 0xff, (w >>> 24) & 0xff, w & 0xff, (w >>> 8) & 0xff]));
const halves = (...hs: number[]): Uint8Array => Uint8Array.from(hs.flatMap((h) => [h & 0xff, h >> 8]));

test('arc: known encodings decode without the toolchain (words read back from GNU objdump)', () => {
  // lr r0,[592] = 20aa 0409; sr 0x10000,[597] = 26ab 7549 0001 0000 (limm in b); mov r0,limm = 200a 0f80 + limm.
  assert.equal(codec.decode(words(0x20aa0409), 0).kind, 'system');
  const sr = codec.decode(words(0x26ab7549, 0x00010000), 0);
  assert.deepEqual([sr.length, sr.mnemonic, sr.kind], [8, 'sr', 'system']);
  assert.equal(codec.decode(words(0x200a0f80, 0x12345678), 0).length, 8);
  assert.equal(codec.decode(words(0x264a7000), 0).mnemonic, 'nop');
  // b -20 at 0x14 -> 0; b.d; bl; breq.nt r0,r1 at 0x50 -> 0.
  assert.deepEqual(pick(codec.decode(words(0x07edffcf), 0x14)), ['branch', 0, false]);
  assert.deepEqual(pick(codec.decode(words(0x07e1ffef), 0x20)), ['branch', 0, true]);
  assert.deepEqual(pick(codec.decode(words(0x0feaffcf), 0x18)), ['call', 0, false]);
  assert.deepEqual(pick(codec.decode(words(0x08b18040), 0x50)), ['condBranch', 0, false]);
  // ld r2,[pcl,8] at 0x30 reads 0x38; ld_s r0,[pcl,8] at 0x7c reads 0x84 (PCL = 0x7c).
  assert.equal(codec.decode(words(0x17087002), 0x30).target, 0x38);
  assert.equal(codec.decode(halves(0xd002), 0x7c).target, 0x84);
  // b_s / bl_s / brne_s at 2-mod-4 addresses branch from PCL = address & ~3.
  assert.equal(codec.decode(halves(0xffe6), 0x6a).target, 0);
  assert.equal(codec.decode(halves(0xe8ca), 0x6c).target, 0);
  // mov_s r0,limm (40c3) and add_s r0,r0,limm (70c3) are 6 bytes; j_s [blink] returns; rtie.
  assert.equal(arcInstructionLength(halves(0x40c3, 0x1234, 0x5678)), 6);
  assert.equal(arcInstructionLength(halves(0x70c3, 0x1234, 0x5678)), 6);
  assert.equal(codec.decode(halves(0x7ee0), 0).kind, 'return');
  assert.equal(codec.decode(words(0x246f003f), 0).kind, 'exceptionReturn');
});

function pick(i: DecodedInstruction): [InstructionKind, number | undefined, boolean] {
  return [i.kind, i.target, i.delaySlot ?? false];
}

interface Case {
  asm: string;
  kind: InstructionKind;
  readsPc?: boolean;
  target?: string;
  delaySlot?: boolean;
  length?: 2 | 4 | 6 | 8;
  /** A label placed before the instruction, for the short branch forms to aim at. */
  label?: string;
}
const p = (asm: string, length: 2 | 4 | 6 | 8): Case => ({ asm, kind: 'plain', length });
const s = (asm: string, length: 2 | 4 | 6 | 8): Case => ({ asm, kind: 'system', length });

const cases: Case[] = [
  { asm: 'b back', kind: 'branch', readsPc: true, target: 'back', length: 4 },
  { asm: 'b.d back', kind: 'branch', readsPc: true, target: 'back', delaySlot: true, length: 4 },
  p('nop', 4),
  { asm: 'beq fwd', kind: 'condBranch', readsPc: true, target: 'fwd', length: 4 },
  { asm: 'bne.d back', kind: 'condBranch', readsPc: true, target: 'back', delaySlot: true, length: 4 },
  p('mov r7,7', 4),
  { asm: 'bl back', kind: 'call', readsPc: true, target: 'back', length: 4 },
  { asm: 'bl.d back', kind: 'call', readsPc: true, target: 'back', delaySlot: true, length: 4 },
  p('mov r7,7', 4),
  { asm: 'bleq back', kind: 'call', readsPc: true, target: 'back', length: 4 },
  { asm: 'breq r0,r1,near', kind: 'condBranch', readsPc: true, target: 'near', length: 4 },
  { asm: 'brne r2,0x12345678,near', kind: 'condBranch', readsPc: true, target: 'near', length: 8 },
  { asm: 'brlo.d r3,63,near', kind: 'condBranch', readsPc: true, target: 'near', delaySlot: true, length: 4 },
  p('mov r7,7', 4),
  { asm: 'bbit0 r0,3,near', kind: 'condBranch', readsPc: true, target: 'near', length: 4 },
  { asm: 'bbit1 r0,r1,near', kind: 'condBranch', readsPc: true, target: 'near', length: 4 },
  { asm: 'b_s near', kind: 'branch', readsPc: true, target: 'near', length: 2 },
  { asm: 'beq_s near', kind: 'condBranch', readsPc: true, target: 'near', length: 2 },
  { asm: 'bne_s near', kind: 'condBranch', readsPc: true, target: 'near', length: 2 },
  { asm: 'bgt_s near', kind: 'condBranch', readsPc: true, target: 'near', length: 2 },
  { asm: 'bls_s near', kind: 'condBranch', readsPc: true, target: 'near', length: 2 },
  { asm: 'bl_s back', kind: 'call', readsPc: true, target: 'back', length: 2 },
  { asm: 'breq_s r0,0,near', kind: 'condBranch', readsPc: true, target: 'near', length: 2 },
  { asm: 'brne_s r15,0,near', kind: 'condBranch', readsPc: true, target: 'near', length: 2 },
  { asm: 'j [blink]', kind: 'return', length: 4, label: 'near' },
  { asm: 'j.d [blink]', kind: 'return', delaySlot: true, length: 4 },
  p('mov r7,7', 4),
  { asm: 'jeq [blink]', kind: 'return', length: 4 },
  { asm: 'j [r3]', kind: 'indirectBranch', length: 4 },
  { asm: 'jl [r2]', kind: 'indirectCall', length: 4 },
  { asm: 'jl.d [r2]', kind: 'indirectCall', delaySlot: true, length: 4 },
  p('mov r7,7', 4),
  { asm: 'j back', kind: 'branch', target: 'back', length: 8 },
  { asm: 'jl back', kind: 'call', target: 'back', length: 8 },
  { asm: 'jne back', kind: 'condBranch', target: 'back', length: 8 },
  { asm: 'j_s [blink]', kind: 'return', length: 2 },
  { asm: 'j_s.d [blink]', kind: 'return', delaySlot: true, length: 2 },
  p('nop_s', 2),
  { asm: 'jeq_s [blink]', kind: 'return', length: 2 },
  { asm: 'jne_s [blink]', kind: 'return', length: 2 },
  { asm: 'j_s [r1]', kind: 'indirectBranch', length: 2 },
  { asm: 'j_s.d [r1]', kind: 'indirectBranch', delaySlot: true, length: 2 },
  p('nop_s', 2),
  { asm: 'jl_s [r1]', kind: 'indirectCall', length: 2 },
  { asm: 'jl_s.d [r1]', kind: 'indirectCall', delaySlot: true, length: 2 },
  p('nop_s', 2),
  { asm: 'jli_s 4', kind: 'indirectCall', length: 2 },
  { asm: 'ei_s 2', kind: 'system', readsPc: true, length: 2 },
  { asm: 'leave_s [r13-r14,fp,blink,pcl]', kind: 'return', length: 2 },
  p('leave_s [r13-r14,fp,blink]', 2),
  p('enter_s [r13-r14,fp,blink]', 2),
  { asm: 'lp lpend', kind: 'loop', readsPc: true, target: 'lpend', length: 4 },
  { asm: 'lpne lpend', kind: 'loop', readsPc: true, target: 'lpend', length: 4 },
  { asm: 'bi [r2]', kind: 'tableBranch', readsPc: true, length: 4 },
  { asm: 'bih [r3]', kind: 'tableBranch', readsPc: true, length: 4 },
  { asm: 'sr r0,[lp_end]', kind: 'loop', length: 4 },
  { asm: 'sr r1,[lp_start]', kind: 'loop', length: 4 },
  { asm: 'rtie', kind: 'exceptionReturn', length: 4, label: 'lpend' },
  { asm: 'ld r2,[pcl,8]', kind: 'plain', readsPc: true, length: 4 },
  { asm: 'ldb.x r2,[pcl,-4]', kind: 'plain', readsPc: true, length: 4 },
  { asm: 'ld_s r0,[pcl,8]', kind: 'plain', readsPc: true, length: 2 },
  { asm: 'add r3,pcl,12', kind: 'plain', readsPc: true, length: 4 },
  { asm: 'add r2,pcl,0x1000', kind: 'plain', readsPc: true, length: 8 },
  { asm: 'add r2,pcl,r3', kind: 'plain', readsPc: true, length: 4 },
  { asm: 'mov r1,pcl', kind: 'plain', readsPc: true, length: 4 },
  { asm: 'st r0,[pcl,8]', kind: 'plain', readsPc: true, length: 4 },
  s('lr r0,[0x250]', 4),
  s('lr r1,[r2]', 4),
  s('lr r0,[0x12345]', 8),
  s('sr r1,[0x255]', 4),
  s('sr 0x10000,[0x255]', 8),
  s('sr r0,[r1]', 4),
  s('sr r0,[0x10000]', 8),
  s('flag 1', 4),
  s('kflag r0', 4),
  s('sleep', 4),
  s('swi', 4),
  s('sync', 4),
  s('brk', 4),
  s('brk_s', 2),
  s('trap_s 3', 2),
  s('seti', 4),
  s('clri r0', 4),
  s('aex r0,[r1]', 4),
  p('mov r0,0x12345678', 8),
  p('mov r0,r1', 4),
  p('mov r0,100', 4),
  p('mov_s r0,0x12345678', 6),
  p('mov_s r0,r13', 2),
  p('add_s r0,r0,0x12345678', 6),
  p('cmp_s r0,0x12345678', 6),
  p('mov_s.ne r0,0x12345678', 6),
  p('mov_s r2,3', 2),
  p('add r0,r1,r2', 4),
  p('add r0,r1,0x12345678', 8),
  p('add r0,0x12345678,r1', 8),
  p('add.f r0,r0,3', 4),
  p('add.eq r0,r0,r1', 4),
  p('sub r0,r1,1000', 8),
  p('and r0,r0,0xff', 4),
  p('asl r0,r1,3', 4),
  p('asl r0,r1', 4),
  p('sexb r0,r1', 4),
  p('sexb r0,0x80', 8),
  p('not r0,0x12345678', 8),
  p('mpy r0,r1,r2', 4),
  p('div r0,r1,r2', 4),
  p('cmp r0,0x12345678', 8),
  p('tst r0,1', 4),
  p('ld r0,[r1,4]', 4),
  p('ld.ab r5,[sp,4]', 4),
  p('ld r0,[0x12345678]', 8),
  p('ld r0,[r1,r2]', 4),
  p('ldb r0,[r1,-1]', 4),
  p('st r0,[r1,4]', 4),
  p('st.aw r5,[sp,-4]', 4),
  p('st 0x12345678,[r1,4]', 8),
  p('st r0,[0x12345678]', 8),
  p('stb 5,[r1]', 4),
  p('push_s r13', 2),
  p('pop_s r13', 2),
  p('push_s blink', 2),
  p('pop_s blink', 2),
  p('ld_s r1,[r0,4]', 2),
  p('st_s r1,[sp,8]', 2),
  p('sub_s r0,r0,r1', 2),
  p('add_s r0,r1,r2', 2),
  p('asl_s r0,r0,2', 2),
  p('ldi r0,[5]', 4),
  p('ldi_s r0,[5]', 2),
];

function assembleCases(tc: GnuToolchain): {
  lines: Map<number, ObjdumpLine>;
  sym: (n: string) => number;
  at: number[];
  bytes: (a: number) => Uint8Array;
} {
  const body = cases.map((c, i) => `${c.label ? `${c.label}:\n` : ''}c${i}: ${c.asm}`).join('\n');
  // `near` and `lpend` sit within the short forms' reach; `back` is word aligned for BL.
  const prog = assemble(tc, ` .balign 4\nback: nop\n${body}\nfwd: nop\n`, BASE);
  const sym = (n: string): number => prog.symbols.get(n)!;
  return {
    lines: new Map(prog.lines.map((l) => [l.address, l])),
    sym,
    at: cases.map((_, i) => sym(`c${i}`)),
    bytes: (a) => prog.text.subarray(a - prog.base),
  };
}

test('arc: every control-flow form, hazard and a spread of ordinary instructions decode as objdump says', () => {
  const { lines, sym, at, bytes } = assembleCases(em!);
  cases.forEach((c, i) => {
    const line = lines.get(at[i]!);
    assert.ok(line, `objdump shows nothing for ${c.asm}`);
    const insn = codec.decode(bytes(at[i]!), at[i]!);
    const what = `"${c.asm}" (objdump: ${line.text})`;
    assert.equal(insn.length, line.length, `length of ${what}`);
    if (c.length) assert.equal(insn.length, c.length, `encoding size of ${what}`);
    assert.equal(insn.kind, c.kind, `kind of ${what}`);
    assert.equal(insn.readsPc, c.readsPc ?? false, `readsPc of ${what}`);
    assert.equal(insn.delaySlot ?? false, c.delaySlot ?? false, `delay slot of ${what}`);
    if (c.target) assert.equal(insn.target, sym(c.target), `target of ${what}`);
    const shown = referencedAddress(line);
    // objdump annotates `sub rx, pcl, imm` and `ld.as` with PCL + imm (unscaled, unsigned): not an address.
    if (shown !== undefined && insn.target !== undefined && !/^(sub|ld\.as)/.test(line.text))
      assert.equal(insn.target, shown, `objdump's address for ${what}`);
  });
});

/** Classifies objdump's mnemonic independently of the decoder. */
function objdumpKind(line: ObjdumpLine): InstructionKind | undefined {
  const [base = ''] = line.mnemonic.split('.');
  const cc = '(eq|z|ne|nz|p|pl|n|mi|c|cs|lo|nc|cc|hs|v|vs|nv|vc|gt|ge|lt|le|hi|ls|pnz)';
  if (/^b(_s)?$/.test(base)) return 'branch';
  if (new RegExp(`^b${cc}(_s)?$`).test(base) || /^(br(eq|ne|lt|ge|lo|hs)(_s)?|bbit[01])$/.test(base))
    return 'condBranch';
  if (base === 'bl' || base === 'bl_s' || new RegExp(`^bl${cc}$`).test(base)) return 'call';
  if (base === 'bi' || base === 'bih') return 'tableBranch';
  if (/^lp/.test(base)) return 'loop';
  if (base === 'rtie') return 'exceptionReturn';
  if (new RegExp(`^j${cc}?(_s)?$`).test(base) && /\[blink\]/.test(line.operands)) return 'return';
  if (new RegExp(`^jl${cc}?(_s)?$`).test(base) && /^\[/.test(line.operands)) return 'indirectCall';
  return undefined;
}

function fuzz(tc: GnuToolchain, seed: number, size: number): { compared: number; targets: number; kinds: number } {
  let x = seed >>> 0;
  const next = (): number => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return x >>> 0;
  };
  const bytes = new Uint8Array(size);
  for (let i = 0; i < size; i += 4) {
    const v = next();
    bytes.set([v & 0xff, (v >>> 8) & 0xff, (v >>> 16) & 0xff, v >>> 24], i);
  }
  let compared = 0;
  let targets = 0;
  let kinds = 0;
  let at = BASE;
  for (const line of disassembleBytes(tc, bytes, BASE)) {
    if (line.address !== at) assert.fail(`objdump and the walk disagree at ${hex(line.address)} / ${hex(at)}`);
    at += line.length;
    if (line.isData || line.address + 8 > BASE + size) continue; // undecodable for objdump too
    const insn = codec.decode(bytes.subarray(line.address - BASE), line.address);
    assert.equal(insn.length, line.length, `length at ${hex(line.address)}: ${line.text}`);
    compared++;
    const shown = referencedAddress(line);
    if (shown !== undefined && insn.target !== undefined && !/^(sub|ld.*\.as|ld.*\.aw|ld.*\.ab|st)/.test(line.text)) {
      assert.equal(insn.target, shown, `target at ${hex(line.address)}: ${line.text}`);
      targets++;
    }
    const k = objdumpKind(line);
    // Condition codes 0x10-0x1F are extension conditions: objdump prints a bare `b`/`bl`, we say conditional.
    const extensionCondition =
      insn.length === 4 && insn.bytes[1]! >> 3 <= 1 && (insn.bytes[2]! & 0x10) !== 0 && (insn.bytes[0]! & 1) === 0;
    if (k !== undefined && !(extensionCondition && k === 'branch' && insn.kind === 'condBranch')) {
      assert.equal(insn.kind, k, `kind at ${hex(line.address)}: ${line.text}`);
      kinds++;
    }
    if (/\.d\b/.test(line.mnemonic) && /^(b|j)/.test(line.mnemonic))
      assert.equal(insn.delaySlot, true, `delay slot at ${hex(line.address)}: ${line.text}`);
  }
  return { compared, targets, kinds };
}

for (const [name, tc] of [
  ['EM (em4_fpuda)', em],
  ['HS (archs)', hs],
] as const) {
  test(`arc: random bytes decode to the lengths, kinds and targets objdump finds: ${name}`, (t) => {
    let total = { compared: 0, targets: 0, kinds: 0 };
    for (const seed of [0x2545f491, 0x9e3779b9, 0x12345678, 0xdeadbeef]) {
      const r = fuzz(tc!, seed, 16000);
      total = {
        compared: total.compared + r.compared,
        targets: total.targets + r.targets,
        kinds: total.kinds + r.kinds,
      };
    }
    t.diagnostic(`${total.compared} instructions, ${total.targets} targets, ${total.kinds} kinds compared`);
    assert.ok(total.compared > 10000 && total.targets > 1000 && total.kinds > 1000);
  });
}

test('arc: the GNU assembler testsuite programs decode in step with objdump', (t) => {
  // The build script keeps gas's own ARC test programs from the binutils source: real, varied
  // assembly. Every file that assembles for EM or HS is walked end to end.
  const dir = join(toolCache, 'arc-binutils', 'gas-testsuite-arc');
  assert.ok(existsSync(dir), `${dir} is missing: rerun scripts/buildArcBinutils.sh with ARC_BINUTILS_FORCE=1`);
  let files = 0;
  let instructions = 0;
  for (const name of readdirSync(dir)
    .filter((f) => f.endsWith('.s'))
    .sort()) {
    const text = readFileSync(join(dir, name), 'utf8');
    // Skip other cores' files and user-defined extension instructions (their encodings are the file's own).
    if (/\.cpu\s+(?!(em|hs|archs))/i.test(text) || /\.ext(Instruction|CondCode|CoreRegister|AuxRegister)\b/i.test(text))
      continue;
    for (const tc of [em!, hs!]) {
      let prog;
      try {
        prog = assemble(tc, text.replace(/^\s*\.(globl|global)\s+start\b.*$/gm, ''), 0, false);
      } catch {
        continue; // not for this core
      }
      let expect: number | undefined;
      for (const line of prog.lines) {
        if (line.isData) {
          expect = undefined;
          continue;
        }
        if (expect !== undefined && line.address !== expect)
          assert.fail(`${name}: out of step at ${hex(line.address)}`);
        const insn = codec.decode(prog.text.subarray(line.address - prog.base), line.address);
        assert.equal(insn.length, line.length, `${name} (${tc.asFlags.join(' ')}): ${hex(line.address)} ${line.text}`);
        expect = line.address + insn.length;
        instructions++;
      }
      files++;
      break;
    }
  }
  t.diagnostic(`${files} gas testsuite files, ${instructions} instructions`);
  assert.ok(files > 50, `only ${files} files assembled`);
});

// ---------------------------------------------------------------------------------------------
// Encoders.

const encoderCases: { bytes: Uint8Array; asm: string }[] = [
  { bytes: enc.encodeLr(0, 0x250), asm: 'lr r0,[0x250]' },
  { bytes: enc.encodeLr(5, 0x21), asm: 'lr r5,[0x21]' },
  { bytes: enc.encodeLr(1, 0x12345), asm: 'lr r1,[0x12345]' },
  { bytes: enc.encodeLrRegister(2, 3), asm: 'lr r2,[r3]' },
  { bytes: enc.encodeSr(1, 0x255), asm: 'sr r1,[0x255]' },
  { bytes: enc.encodeSr({ imm: 0x10000 }, 0x255), asm: 'sr 0x10000,[0x255]' },
  { bytes: enc.encodeSr({ imm: 0x20000 }, 0x256), asm: 'sr 0x20000,[0x256]' },
  { bytes: enc.encodeSr(4, 0x7fff0000), asm: 'sr r4,[0x7fff0000]' },
  { bytes: enc.encodeSrRegister(0, 1), asm: 'sr r0,[r1]' },
  { bytes: enc.encodeMovLimm(0, 0x12345678), asm: 'mov r0,0x12345678' },
  { bytes: enc.encodeMovLimm(31, 0x80000000), asm: 'mov blink,0x80000000' },
  { bytes: enc.encodeMovS12(3, -5), asm: 'mov r3,-5' },
  { bytes: enc.encodeMovRegister(13, 0), asm: 'mov r13,r0' },
  { bytes: enc.encodeNop(), asm: 'nop' },
  { bytes: enc.encodeNopS(), asm: 'nop_s' },
  { bytes: enc.encodeReturnS(), asm: 'j_s [blink]' },
  { bytes: enc.encodeJ(0x12345678), asm: 'j 0x12345678' },
  { bytes: enc.encodeJ(0x1000, 1), asm: 'jeq 0x1000' },
  { bytes: enc.encodeJl(0x80000000), asm: 'jl 0x80000000' },
  { bytes: enc.encodeJl(0x1000, 2), asm: 'jlne 0x1000' },
  { bytes: enc.encodeJRegister(31), asm: 'j [blink]' },
  { bytes: enc.encodeJRegister(2, true), asm: 'jl [r2]' },
  { bytes: enc.encodePushS(0), asm: 'push_s r0' },
  { bytes: enc.encodePushS(13), asm: 'push_s r13' },
  { bytes: enc.encodePushS(31), asm: 'push_s blink' },
  { bytes: enc.encodePopS(15), asm: 'pop_s r15' },
  { bytes: enc.encodePopS(31), asm: 'pop_s blink' },
  { bytes: enc.encodePush(5), asm: 'st.aw r5,[sp,-4]' },
  { bytes: enc.encodePop(5), asm: 'ld.ab r5,[sp,4]' },
  { bytes: enc.encodeLd(1, 28, 4), asm: 'ld r1,[sp,4]' },
  { bytes: enc.encodeLd(2, { limm: 0x1038 }), asm: 'ld r2,[0x1038]' },
  { bytes: enc.encodeLd(2, 3, -256, 'byte'), asm: 'ldb r2,[r3,-256]' },
  { bytes: enc.encodeLd(4, 5, 255, 'half', 'aw'), asm: 'ldh.aw r4,[r5,255]' },
  { bytes: enc.encodeSt(0, 1, 4), asm: 'st r0,[r1,4]' },
  { bytes: enc.encodeSt(0, { limm: 0x2000 }), asm: 'st r0,[0x2000]' },
  { bytes: enc.encodeSt(7, 28, 8, 'byte'), asm: 'stb r7,[sp,8]' },
];

test('arc encoders: bytes equal what the GNU assembler produces, and objdump reads them back', () => {
  const src = encoderCases.map((c, i) => `.balign 4\ne${i}: ${c.asm}`).join('\n');
  const prog = assemble(em!, src, BASE);
  encoderCases.forEach((c, i) => {
    const at = prog.symbols.get(`e${i}`)! - prog.base;
    assert.deepEqual([...c.bytes], [...prog.text.subarray(at, at + c.bytes.length)], c.asm);
    const back = disassembleBytes(em!, c.bytes, BASE);
    assert.equal(back.length, 1, `${c.asm}: ${back.map((l) => l.text).join('; ')}`);
    assert.equal(back[0]!.length, c.bytes.length);
    assert.ok(!back[0]!.isData, `${c.asm}: objdump decodes it`);
  });
});

const branchEncoders: { bytes: () => Uint8Array; from: number; to: number; mnemonic: RegExp }[] = [
  { bytes: () => enc.encodeB(0x10000, 0x10000 + 0xfffffe), from: 0x10000, to: 0x10000 + 0xfffffe, mnemonic: /^b$/ },
  { bytes: () => enc.encodeB(0x1000002, 0x1000), from: 0x1000002, to: 0x1000, mnemonic: /^b$/ },
  { bytes: () => enc.encodeB(0x10002, 0x10008, true), from: 0x10002, to: 0x10008, mnemonic: /^b\.d$/ },
  {
    bytes: () => enc.encodeBcc(1, 0x10000, 0x10000 + 0xffffe),
    from: 0x10000,
    to: 0x10000 + 0xffffe,
    mnemonic: /^beq$/,
  },
  { bytes: () => enc.encodeBcc(0x0b, 0x200002, 0x100002), from: 0x200002, to: 0x100002, mnemonic: /^blt$/ },
  { bytes: () => enc.encodeBl(0x10000, 0x10000 + 0xfffffc), from: 0x10000, to: 0x10000 + 0xfffffc, mnemonic: /^bl$/ },
  { bytes: () => enc.encodeBl(0x10002, 0x8000, true), from: 0x10002, to: 0x8000, mnemonic: /^bl\.d$/ },
  { bytes: () => enc.encodeBlcc(2, 0x10000, 0x10100), from: 0x10000, to: 0x10100, mnemonic: /^blne$/ },
  { bytes: () => enc.encodeBrcc(0, 1, 2, 0x10000, 0x10000 + 254), from: 0x10000, to: 0x10000 + 254, mnemonic: /^breq/ },
  {
    bytes: () => enc.encodeBrcc(3, 1, { u6: 63 }, 0x10002, 0x10000 - 256),
    from: 0x10002,
    to: 0x10000 - 256,
    mnemonic: /^brge/,
  },
  {
    bytes: () => enc.encodeBrcc(1, 4, { limm: 0x12345678 }, 0x10000, 0x10010),
    from: 0x10000,
    to: 0x10010,
    mnemonic: /^brne/,
  },
  {
    bytes: () => enc.encodeBrcc(7, 4, { u6: 5 }, 0x10000, 0x10010, true),
    from: 0x10000,
    to: 0x10010,
    mnemonic: /^bbit1\.d/,
  },
];

test('arc branch encoders: objdump disassembles them to the intended absolute target', () => {
  for (const c of branchEncoders) {
    const [line] = disassembleBytes(em!, c.bytes(), c.from);
    assert.ok(line);
    assert.match(line.mnemonic, c.mnemonic, line.text);
    assert.equal(referencedAddress(line), c.to, line.text);
    assert.equal(codec.decode(c.bytes(), c.from).target, c.to, 'decoder agrees');
  }
});

test('arc encoders refuse what does not fit', () => {
  assert.throws(() => enc.encodeB(0, 0x1000000), RangeError);
  assert.throws(() => enc.encodeBl(0, 0x102), RangeError, 'BL targets are 32-bit aligned');
  assert.throws(() => enc.encodeBcc(1, 0, 0x100000), RangeError);
  assert.throws(() => enc.encodeBrcc(0, 0, 1, 0, 256), RangeError);
  assert.throws(() => enc.encodeSr({ imm: 1 }, 0x12345), RangeError, 'two limms');
  assert.throws(() => enc.encodePushS(5), RangeError, 'r5 has no PUSH_S form');
  assert.throws(() => enc.encodeLd(0, 1, 256), RangeError);
  assert.throws(() => enc.encodeMovLimm(62, 0), RangeError);
});

test('arc: zero-overhead loop bodies are reported with their LP_END', () => {
  const prog = assemble(em!, ` mov lp_count,4\n lp 1f\n add r0,r0,1\n add_s r1,r1,r0\n1: nop\n`, BASE);
  const insns: DecodedInstruction[] = [];
  for (let o = 0; o < prog.text.length;) {
    const insn = codec.decode(prog.text.subarray(o), BASE + o);
    insns.push(insn);
    o += insn.length;
  }
  const [loop] = arcLoopBodies(insns);
  assert.ok(loop);
  const lp = insns.find((i) => i.kind === 'loop')!;
  assert.deepEqual(loop, { lp: lp.address, start: lp.address + 4, end: insns[insns.length - 1]!.address });
});
