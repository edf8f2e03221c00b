import type { Profile, ProfileFunction } from '../profile/model';
import { profileStacks, treeFigures } from '../profile/callTree';
import { roundKeepingSum } from './common';

/**
 * GNU gprof's gmon.out (binutils gprof/gmon_out.h, version 1): a 20-byte header ("gmon", version,
 * 12 spare bytes), then tagged records. A histogram record (tag 0) holds low pc, high pc, the bin
 * count, the sampling rate, a 15-byte dimension name and its abbreviation, then 16-bit bins; an arc
 * record (tag 1) holds the call site, the callee's entry and a 32-bit count. Numbers are in the
 * target's byte order and addresses in its width, because gprof reads them with the ELF's BFD.
 *
 * Each function's self value (its value on top of the call tree's stacks, core/profile/callTree.ts)
 * becomes a one-bin histogram over the function's first two bytes: gprof wants every record at the
 * same scale (bytes per bin), and a bin inside the function is credited to it whole. A 16-bit bin
 * holds at most 65,535: gprof adds up records with the same range, so a larger value is written as
 * several records. The rate is 1 per unit and the dimension is the unit's name, so gprof's
 * "seconds" columns print the profile's counts. The `[not measured]` frame has no address, so
 * gmon.out leaves the unattributed time out: gprof's total is the run's total less that frame's
 * value.
 */

export interface GmonOptions {
  /** Address width of the target: 4 for RV32, Cortex-M and ARC (default), 8 for a 64-bit host. */
  addressBytes?: 4 | 8;
  littleEndian?: boolean;
}

export const GMON_MAGIC = 'gmon';
export const GMON_TAG_TIME_HIST = 0;
export const GMON_TAG_CG_ARC = 1;
const MAX_BIN = 0xffff;
/** gprof keeps every record in memory; past this many a profile is too large for the format's 16-bit bins. */
const MAX_RECORDS = 2_000_000;

export class GmonWriteError extends Error {
  override name = 'GmonWriteError';
}

export function gmonBytes(p: Profile, options: GmonOptions = {}): Uint8Array {
  const addressBytes = options.addressBytes ?? 4;
  const le = options.littleEndian ?? true;
  const chunks: Buffer[] = [];
  const header = Buffer.alloc(20);
  header.write(GMON_MAGIC, 0, 'latin1');
  header.writeUInt32LE(1, 4);
  if (!le) header.writeUInt32BE(1, 4);
  chunks.push(header);
  const located = p.functions.filter((f) => f.address !== undefined);
  if (located.length === 0 && p.functions.length > 0)
    throw new GmonWriteError(
      'gmon.out needs function addresses, and this profile has none: export a profile measured on an ELF with symbols.',
    );
  const [dimension, abbreviation] = dimensionOf(p);
  // The self values of the tree every format reads: a function's value on top of its stacks. Time in
  // the `[not measured]` frame has no address, so the histogram leaves it out.
  const tree = profileStacks(p);
  const figures = treeFigures(tree);
  const fromTree = tree.stacks.length > 0;
  let records = 0;
  for (const f of located) {
    let self = Math.round(fromTree ? figures.self[f.id]! : (f.self?.value ?? 0));
    if (self <= 0) continue;
    // Thumb entry points have bit 0 set; code starts at the even address (ARMv7-M ARM A5.1.2).
    const low = evenAddress(f.address!);
    const high = low + 2;
    while (self > 0) {
      if (++records > MAX_RECORDS)
        throw new GmonWriteError(
          `gmon.out holds 16-bit histogram bins: ${f.name}'s value needs more than ${MAX_RECORDS} ` +
            `records. Export pprof or callgrind for profiles this large.`,
        );
      const bin = Math.min(MAX_BIN, self);
      self -= bin;
      const rec = Buffer.alloc(1 + 2 * addressBytes + 8 + 16 + 2);
      let at = 0;
      rec.writeUInt8(GMON_TAG_TIME_HIST, at++);
      at = writeAddress(rec, at, low, addressBytes, le);
      at = writeAddress(rec, at, high, addressBytes, le);
      at = writeU32(rec, at, 1, le);
      at = writeU32(rec, at, 1, le);
      rec.write(dimension.padEnd(15, '\0').slice(0, 15), at, 'latin1');
      at += 15;
      rec.write(abbreviation, at++, 'latin1');
      if (le) rec.writeUInt16LE(bin, at);
      else rec.writeUInt16BE(bin, at);
      chunks.push(rec);
    }
  }
  for (const arc of arcsOf(p)) {
    const rec = Buffer.alloc(1 + 2 * addressBytes + 4);
    let at = 0;
    rec.writeUInt8(GMON_TAG_CG_ARC, at++);
    at = writeAddress(rec, at, arc.from, addressBytes, le);
    at = writeAddress(rec, at, arc.self, addressBytes, le);
    writeU32(rec, at, arc.count, le);
    chunks.push(rec);
  }
  return new Uint8Array(Buffer.concat(chunks));
}

/** The unit as gprof's dimension: 15 bytes and a one-letter abbreviation. Ticks stay ticks. */
function dimensionOf(p: Profile): [string, string] {
  switch (p.unit.kind) {
    case 'cycles':
      return ['cycles', 'c'];
    case 'instructions':
      return ['instructions', 'i'];
    case 'ticks':
      return ['systick-ticks', 't'];
    case 'samples':
      return ['samples', 's'];
    case 'events':
      return [(p.unit.event ?? 'events').slice(0, 15), 'e'];
  }
}

/**
 * Call arcs with their counts: an edge's own count, else the callee's calls split over the edges
 * without a count. The call site is an address inside the caller (gprof finds the caller by it).
 */
function arcsOf(p: Profile): { from: number; self: number; count: number }[] {
  const out: { from: number; self: number; count: number }[] = [];
  const byCallee = new Map<number, { caller: ProfileFunction; calls?: number }[]>();
  for (const e of p.edges) {
    const caller = p.functions[e.caller];
    const callee = p.functions[e.callee];
    if (!caller || !callee || caller.address === undefined || callee.address === undefined) continue;
    const list = byCallee.get(e.callee) ?? [];
    if (list.some((x) => x.caller.id === caller.id)) continue;
    list.push({ caller, ...(e.calls !== undefined ? { calls: e.calls } : {}) });
    byCallee.set(e.callee, list);
  }
  for (const [calleeId, list] of byCallee) {
    const callee = p.functions[calleeId]!;
    const known = list.reduce((s, x) => s + (x.calls ?? 0), 0);
    // A recursive edge without a count gets none of the rest: how many entries were recursive is
    // unknown, and gprof's calls column (all entries from other functions) then shows the model's count.
    const outside = list.filter((x) => x.calls === undefined && x.caller.id !== calleeId);
    const unknown = outside.length > 0 ? outside : list.filter((x) => x.calls === undefined);
    const rest =
      unknown.length > 0 && callee.calls !== undefined
        ? roundKeepingSum(unknown.map(() => Math.max(0, callee.calls! - known) / unknown.length))
        : [];
    let u = 0;
    for (const x of list) {
      const count = x.calls ?? (unknown.includes(x) ? rest[u++] : 0) ?? 0;
      if (count <= 0) continue;
      const site = evenAddress(x.caller.address!) + Math.min(2, Math.max(0, (x.caller.size ?? 1) - 1));
      out.push({ from: site, self: callee.address!, count: Math.min(count, 0xffffffff) });
    }
  }
  return out;
}

/** Clears bit 0 (a Thumb entry point's marker) without JavaScript's signed 32-bit bitwise operators. */
export function evenAddress(a: number): number {
  return a - (a % 2);
}

function writeAddress(buf: Buffer, at: number, value: number, bytes: 4 | 8, le: boolean): number {
  if (bytes === 4) return writeU32(buf, at, value >>> 0, le);
  if (le) buf.writeBigUInt64LE(BigInt(value), at);
  else buf.writeBigUInt64BE(BigInt(value), at);
  return at + 8;
}

function writeU32(buf: Buffer, at: number, value: number, le: boolean): number {
  if (le) buf.writeUInt32LE(value >>> 0, at);
  else buf.writeUInt32BE(value >>> 0, at);
  return at + 4;
}
