/**
 * The injector's RAM, as both the payloads and the service read it. All fields are 32-bit little
 * endian words; addresses are absolute.
 *
 * Control block, at the start of the reserved memory:
 *
 *   +0  magic 'CLNS' (0x534E4C43)   +4 layout version
 *   +8  shadow stack pointer: the next free slot (grows upwards)
 *   +12 shadow stack limit: one past the last slot
 *   +16 payload instruction counter: every payload path adds the number of instructions it ran
 *       (mod 2^32). A window that opens at P0 and closes at P1 contains exactly P1 - P0 payload
 *       instructions of other measurements (nested callees, recursion, interrupt handlers), which
 *       is how nesting is compensated exactly.
 *   +20 shadow stack base
 *   +24 reserved                    +28 reserved
 *   +32 shadow stack: one real return address per active measured call
 *
 * Measurement record (one per measurement):
 *
 *   +0  total, low word     } 64-bit sum of every pass's raw counter delta
 *   +4  total, high word    }
 *   +8  calls       every entry through the patch (recursive entries included)
 *   +12 passes      completed outermost passes (depth 1 -> 0): what total, min, max and the ring describe
 *   +16 min         smallest pass value (0xFFFFFFFF before the first pass)
 *   +20 max         largest pass value
 *   +24 depth       active entries: a pass opens at 0 -> 1 and closes at 1 -> 0 (recursion counts once);
 *                   for a region: 1 while a pass is open
 *   +28 start       counter value when the open pass began
 *   +32 ring index  passes written to the ring so far; slot = index & 7
 *   +36 untracked   entries not redirected (Cortex-M FNC_RETURN in LR, full shadow stack) or region
 *                   ends reached with no open pass
 *   +40 nested, low }  64-bit sum of payload instructions of other measurements inside passes
 *   +44 nested, high}
 *   +48 payload counter when the open pass began
 *   +52 exit stub address (with the Thumb bit on Cortex-M)
 *   +56 cost of an outermost entry  } payload instructions of each path of this measurement's own
 *   +60 cost of a nested entry      } stubs, added to the payload counter by the stubs
 *   +64 cost of an outermost exit   }
 *   +68 cost of a nested exit       }
 *   +72 held        hardware gating: the counter value while no pass is open
 *   +76 scratch     hardware gating: the counter value at a nested entry
 *   +80 ring[8]     the last eight pass values, each without the payloads of other measurements
 *  +112 end
 */
export const Ctrl = {
  magic: 0,
  version: 4,
  ssp: 8,
  sslimit: 12,
  pay: 16,
  ssbase: 20,
  shadow: 32,
} as const;

export const CTRL_MAGIC = 0x534e4c43;
export const LAYOUT_VERSION = 1;

export const Rec = {
  totalLo: 0,
  totalHi: 4,
  calls: 8,
  passes: 12,
  min: 16,
  max: 20,
  depth: 24,
  start: 28,
  ringIndex: 32,
  untracked: 36,
  nestedLo: 40,
  nestedHi: 44,
  payStart: 48,
  exit: 52,
  costEntryOuter: 56,
  costEntryNested: 60,
  costExitOuter: 64,
  costExitNested: 68,
  held: 72,
  scratch: 76,
  ring: 80,
} as const;

export const RING_SLOTS = 8;
export const RECORD_SIZE = 112;

/** Path costs of one measurement's stubs, in payload instructions. */
export interface PathCosts {
  entryOuter: number;
  entryNested: number;
  exitOuter: number;
  exitNested: number;
}

export interface RecordValues {
  total: bigint;
  calls: number;
  passes: number;
  min: number;
  max: number;
  depth: number;
  start: number;
  ringIndex: number;
  untracked: number;
  nested: bigint;
  held: number;
  /** The last min(passes, 8) pass values, oldest first. */
  lastPasses: number[];
}

/** The initial bytes of a record. */
export function initialRecord(exitAddress: number, costs: PathCosts, held = 0): Uint8Array {
  const b = Buffer.alloc(RECORD_SIZE);
  b.writeUInt32LE(0xffffffff, Rec.min);
  b.writeUInt32LE(exitAddress >>> 0, Rec.exit);
  b.writeUInt32LE(costs.entryOuter >>> 0, Rec.costEntryOuter);
  b.writeUInt32LE(costs.entryNested >>> 0, Rec.costEntryNested);
  b.writeUInt32LE(costs.exitOuter >>> 0, Rec.costExitOuter);
  b.writeUInt32LE(costs.exitNested >>> 0, Rec.costExitNested);
  b.writeUInt32LE(held >>> 0, Rec.held);
  return new Uint8Array(b);
}

export function decodeRecord(bytes: Uint8Array): RecordValues {
  const b = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const u = (off: number): number => b.readUInt32LE(off);
  const passes = u(Rec.passes);
  const ringIndex = u(Rec.ringIndex);
  const n = Math.min(ringIndex, RING_SLOTS);
  const lastPasses: number[] = [];
  for (let k = ringIndex - n; k < ringIndex; k++) lastPasses.push(u(Rec.ring + 4 * (k % RING_SLOTS)));
  return {
    total: (BigInt(u(Rec.totalHi)) << 32n) | BigInt(u(Rec.totalLo)),
    calls: u(Rec.calls),
    passes,
    min: u(Rec.min),
    max: u(Rec.max),
    depth: u(Rec.depth),
    start: u(Rec.start),
    ringIndex,
    untracked: u(Rec.untracked),
    nested: (BigInt(u(Rec.nestedHi)) << 32n) | BigInt(u(Rec.nestedLo)),
    held: u(Rec.held),
    lastPasses,
  };
}

/** The control block's initial bytes (shadow stack empty). */
export function initialControl(ctrl: number, shadowSlots: number): Uint8Array {
  const b = Buffer.alloc(Ctrl.shadow + 4 * shadowSlots);
  b.writeUInt32LE(CTRL_MAGIC, Ctrl.magic);
  b.writeUInt32LE(LAYOUT_VERSION, Ctrl.version);
  b.writeUInt32LE((ctrl + Ctrl.shadow) >>> 0, Ctrl.ssp);
  b.writeUInt32LE((ctrl + Ctrl.shadow + 4 * shadowSlots) >>> 0, Ctrl.sslimit);
  b.writeUInt32LE((ctrl + Ctrl.shadow) >>> 0, Ctrl.ssbase);
  return new Uint8Array(b);
}
