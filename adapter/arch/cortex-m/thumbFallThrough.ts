import type { DecodedInstruction } from '../codec';
import { InjectionRefusedError, refusal } from '../../probe/injection/errors';
import { reachableDisplaced } from '../../probe/injection/planner';
import { Ctrl } from '../../probe/injection/recordLayout';
import { withoutJumpTo } from '../../probe/injection/returnHooks';
import type { PatchSite } from '../../probe/injection/types';
import {
  encodeAddImmediate,
  encodeLdrImmediate,
  encodeMovt,
  encodeMovw,
  encodePop,
  encodePush,
  encodeStrImmediate,
} from './thumbEncoder';
import type { ThumbCodec } from './thumbDecoder';
import type { ThumbRelocator } from './thumbRelocator';
import { R, SYSM_PRIMASK, ThumbAssembler, thCpsidI, thMrs, thMsr } from './trampolineThumbIsa';

/**
 * Code that runs on into a patched entry on Thumb (docs/design.md, "Millicode"): libgcc's
 * `__aeabi_fsub` is one `eor.w` that falls through into `__addsf3`, `__aeabi_cfrcmple` ends with a
 * `b` to the next instruction, `__aeabi_cfcmple`. The trace keeps such a pass in the function it
 * started in, so it must not run the entry patch of the next one:
 * - a bypass patch on that code sends it to a copy in the entry's stub: the code relocated, then the
 *   instructions the entry patch displaced, then a jump past the patch. The copy runs a few more
 *   instructions than the original (the patch's jump, relocation, the jump back, and its own
 *   bookkeeping); it adds exactly those to the payload counter, so an open window of another
 *   measurement (the caller's) leaves them out like any other payload;
 * - an entry stub whose displaced code resumes at such an entry (PatchSite.divertCode) runs the
 *   next entry's displaced instructions too and resumes past that patch.
 * A last `b` to the entry itself is left out of a copy: it jumps to the instruction after it.
 */

const { r0: R0, r1: R1, r2: R2 } = R;

/** Instructions in relocated Thumb code (literal words after an LDR pc are not decoded as code). */
export function decodeAllCode(codec: ThumbCodec, bytes: Uint8Array, at: number): number {
  let n = 0;
  let offset = 0;
  while (offset < bytes.length) {
    const insn = codec.decode(bytes.subarray(offset), at + offset);
    n++;
    offset += insn.length;
    // A jump through a literal (LDR.W pc, [pc, #k]) is followed by padding and the literal word.
    if (insn.kind === 'indirectBranch' && insn.mnemonic === 'ldr' && insn.target !== undefined)
      offset = insn.target + 4 - at;
  }
  return n;
}

/** One run of program instructions to relocate, and the bytes a patch overwrites among them. */
export interface RelocationPart {
  insns: readonly DecodedInstruction[];
  patched: { start: number; end: number };
}

export interface RelocatedRun {
  bytes: Uint8Array;
  /** Instructions the relocated code runs (to its end or its jump). */
  count: number;
  /** Program instructions the original runs over the same path (a left-out `b` included). */
  program: number;
  falls: boolean;
  notes: string[];
  /** With `evenExits`: instructions of the jumps conditional branches leave by (each path runs one). */
  exitJumps: number;
}

/** Relocates the parts one after the other at `at`; each but the last must fall through. */
export function relocateParts(
  relocator: ThumbRelocator,
  codec: ThumbCodec,
  parts: readonly RelocationPart[],
  at: number,
  evenExits = false,
): RelocatedRun {
  const chunks: Uint8Array[] = [];
  const notes: string[] = [];
  let pc = at;
  let program = 0;
  let exitJumps = 0;
  let falls = true;
  for (const [k, part] of parts.entries()) {
    const next = parts[k + 1]?.insns[0]?.address;
    const live = reachableDisplaced(part.insns);
    const moved = next !== undefined ? withoutJumpTo(live, next) : live;
    program += live.length;
    if (moved.length === 0) continue;
    const r = relocator.relocate(moved, pc, { patched: part.patched, ...(evenExits ? { evenExits } : {}) });
    if (!r.ok) throw new InjectionRefusedError(refusal('unrelocatable', `Cannot move ${r.reason}.`, r.address));
    if (!r.fallsThrough && next !== undefined)
      throw new InjectionRefusedError(
        refusal(
          'unrelocatable',
          `The code before 0x${next.toString(16)} leaves before it reaches it.`,
          moved.at(-1)!.address,
        ),
      );
    chunks.push(r.bytes);
    notes.push(...r.notes);
    pc += r.bytes.length;
    falls = r.fallsThrough;
    exitJumps += r.exitJumps ?? 0;
  }
  const bytes = new Uint8Array(pc - at);
  let o = 0;
  for (const c of chunks) {
    bytes.set(c, o);
    o += c.length;
  }
  return { bytes, count: decodeAllCode(codec, bytes, at), program, falls, notes, exitJumps };
}

/** The parts an entry stub relocates: its displaced code, then the next entry's when it diverts. */
export function entryParts(site: PatchSite): RelocationPart[] {
  const own: RelocationPart = {
    insns: site.displaced,
    patched: { start: site.address, end: site.address + site.shape.length },
  };
  const next = site.divertCode;
  if (!next?.length) return [own];
  const start = next[0]!.address;
  return [own, { insns: next, patched: { start, end: site.divertResume ?? start } }];
}

/** Instructions of `payCode`: push, mrs, cpsid, movw, movt, ldr, addw, str, msr, pop. */
const PAY_INSTRUCTIONS = 10;

/**
 * Adds `k` to the payload counter with interrupts masked, every register and the flags kept
 * (ADDW sets none). Always 30 bytes (`k` below 4096 is an ADDW), so the code after it is placed before `k` is known.
 */
function payCode(ctrl: number, k: number): Uint8Array[] {
  return [
    encodePush([R0, R1, R2]),
    thMrs(R2, SYSM_PRIMASK),
    thCpsidI(),
    encodeMovw(R0, ctrl & 0xffff),
    encodeMovt(R0, ctrl >>> 16),
    encodeLdrImmediate(R1, R0, Ctrl.pay),
    encodeAddImmediate(R1, R1, k),
    encodeStrImmediate(R1, R0, Ctrl.pay),
    thMsr(SYSM_PRIMASK, R2),
    encodePop([R0, R1, R2]),
  ];
}

/**
 * The copy a bypass patch jumps to (label `B`): the payload bookkeeping, `code` (the instructions
 * of the code that falls through, from the bypass patch to the entry) relocated, the entry's
 * displaced instructions, and the jump past the entry patch. Returns the payload instructions a
 * pass through it adds.
 */
export function emitBypass(
  a: ThumbAssembler,
  relocator: ThumbRelocator,
  codec: ThumbCodec,
  site: PatchSite,
  code: readonly DecodedInstruction[],
  bypassLength: number,
  ctrl: number,
  jumpTo: (a: ThumbAssembler, target: number, name: string) => void,
): number {
  a.label('B');
  const pay = 30;
  const start = code[0]!.address;
  const parts = [{ insns: code, patched: { start, end: start + bypassLength } }, ...entryParts(site)];
  const r = relocateParts(relocator, codec, parts, a.pc + pay);
  // The patch's jump, the bookkeeping, the relocated code and the jump back, less what the original runs.
  const k = 1 + PAY_INSTRUCTIONS + r.count + (r.falls ? 1 : 0) - r.program;
  const chunks = payCode(ctrl, k);
  if (chunks.length !== PAY_INSTRUCTIONS || chunks.reduce((n, c) => n + c.length, 0) !== pay)
    throw new Error('the bypass bookkeeping is not 10 instructions in 30 bytes');
  for (const c of chunks) a.i(c);
  a.code(r.bytes, r.count);
  if (r.falls) jumpTo(a, site.divertResume ?? site.resume, 'bypassResume');
  a.label('B_end');
  return k;
}
