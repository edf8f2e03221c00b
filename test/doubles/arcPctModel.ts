/**
 * TEST DOUBLE — a register-level model of the Synopsys ARCv2 performance-counter block (PCT), so
 * that CycleLens's ARC counter code can be tested without an ARC chip or nSIM. It is not a
 * simulator of any real core: it implements what the public sources say the registers do, and
 * nothing is taken from CycleLens's own product code.
 *
 * Sources for every behaviour below (see also test/doubles/README.md):
 *  [L-H] Linux arch/arc/include/asm/perf_event.h (ARC maintainer's tree, kernel.org mirror
 *        linux_kernel_git_vgupta_arc @8b85a6b4; the same in later mainline kernels): aux numbers
 *        CC_BUILD 0xF6, CC_INDEX 0x240, CC_NAME0 0x241, CC_NAME1 0x242, PCT_BUILD 0xF5,
 *        PCT_COUNTL 0x250, PCT_COUNTH 0x251, PCT_SNAPL 0x252, PCT_SNAPH 0x253, PCT_CONFIG 0x254,
 *        PCT_CONTROL 0x255, PCT_INDEX 0x256, PCT_INT_CNTL/CNTH 0x25C/0x25D, PCT_INT_CTRL 0x25E,
 *        PCT_INT_ACT 0x25F; PCT_CONTROL_CC = bit 16 ("clear counts"), PCT_CONTROL_SN = bit 17
 *        ("snapshot"); PCT_CONFIG_USER = bit 18, PCT_CONFIG_KERN = bit 19; struct arc_reg_pct_build
 *        {v:8, s:2, i:1, r:5, c:8, m:8} (little-endian bit order) and arc_reg_cc_build {v:8, r:8, c:16}.
 *  [L-C] Linux arch/arc/kernel/perf_event.c (torvalds/linux @2555693d): counter width = 32 + (s << 4);
 *        number of counters = c; number of conditions = cc_build.c; names are read by writing
 *        CC_INDEX = i and reading CC_NAME0/CC_NAME1 into a char[8] through le32_to_cpu (so the
 *        first character is the least significant byte of CC_NAME0); reading a counter is
 *        PCT_INDEX = idx, PCT_CONTROL |= SN, then SNAPH/SNAPL; "there is no separate start/stop
 *        mechanism; stopping is achieved by assigning the 'never' condition" and "condition code
 *        #0 is always 'never'"; arc_pmu_add writes PCT_CONFIG = 0, COUNTL = 0, COUNTH = 0;
 *        arc_pmu_enable/disable write PCT_CONTROL = (old & 0xffff0000) | 1 / | 0 (bit 0 = global
 *        enable); a core without PCT has PCT_BUILD.v == 0.
 * Choices the sources do not settle, made explicit here so tests can rely on them:
 *  - CC and SN are actions: they act when written as 1 and read back as 0.
 *  - The snapshot copies the counter selected by PCT_INDEX (all the Linux driver needs).
 *  - COUNTH/SNAPH hold bits [width-1:32]; on a 32-bit build they read 0 and ignore writes.
 *  - Index 0 is named "never" by this double (the name real hardware reports is not public).
 *  - With neither USER nor KERN set in PCT_CONFIG the counter counts in both modes; the modelled
 *    CPU always runs in kernel mode (bare metal), so a USER-only counter never counts.
 */

export const PCT_AUX = {
  PCT_BUILD: 0xf5,
  CC_BUILD: 0xf6,
  CC_INDEX: 0x240,
  CC_NAME0: 0x241,
  CC_NAME1: 0x242,
  PCT_COUNTL: 0x250,
  PCT_COUNTH: 0x251,
  PCT_SNAPL: 0x252,
  PCT_SNAPH: 0x253,
  PCT_CONFIG: 0x254,
  PCT_CONTROL: 0x255,
  PCT_INDEX: 0x256,
  PCT_INT_CNTL: 0x25c,
  PCT_INT_CNTH: 0x25d,
  PCT_INT_CTRL: 0x25e,
  PCT_INT_ACT: 0x25f,
} as const;

/** Lower-case names the double's target description gives the PCT aux registers. */
export const PCT_REGISTER_NAMES: ReadonlyArray<readonly [name: string, aux: number]> = [
  ['pct_build', PCT_AUX.PCT_BUILD],
  ['cc_build', PCT_AUX.CC_BUILD],
  ['cc_index', PCT_AUX.CC_INDEX],
  ['cc_name0', PCT_AUX.CC_NAME0],
  ['cc_name1', PCT_AUX.CC_NAME1],
  ['pct_countl', PCT_AUX.PCT_COUNTL],
  ['pct_counth', PCT_AUX.PCT_COUNTH],
  ['pct_snapl', PCT_AUX.PCT_SNAPL],
  ['pct_snaph', PCT_AUX.PCT_SNAPH],
  ['pct_config', PCT_AUX.PCT_CONFIG],
  ['pct_control', PCT_AUX.PCT_CONTROL],
  ['pct_index', PCT_AUX.PCT_INDEX],
];

const CONTROL_ENABLE = 1 << 0;
const CONTROL_CLEAR = 1 << 16;
const CONTROL_SNAPSHOT = 1 << 17;
const CONFIG_USER = 1 << 18;
const CONFIG_KERN = 1 << 19;
/** The Linux driver's raw-event format is config:0-14; the condition index lives there. */
const CONFIG_CONDITION_MASK = 0x7fff;

/**
 * Condition names in a plausible ARC HS order. The list is the Linux driver's (crun, iall, ijmp,
 * ijmptak, bpok, bpfail, bpmp, bflush, bstall, imemrdc, imemwrc, dclm, dcsm, icm, edtlb, eitlb);
 * the indices are this double's invention: real builds differ, which is why software must
 * enumerate CC_NAME instead of assuming an index.
 */
export const DEFAULT_CONDITIONS: readonly string[] = [
  'never',
  'crun',
  'iall',
  'ijmp',
  'ijmptak',
  'bpok',
  'bpfail',
  'bpmp',
  'bflush',
  'bstall',
  'imemrdc',
  'imemwrc',
  'dclm',
  'dcsm',
  'icm',
  'edtlb',
  'eitlb',
];

export interface ArcPctBuild {
  /** false: PCT_BUILD reads 0 (no PCT) and every other PCT register is an illegal aux access. */
  present: boolean;
  /** PCT_BUILD.c: 1..255 (the Linux driver refuses more than 32). */
  counters: number;
  width: 32 | 48 | 64;
  /** Condition names by hardware index; index 0 must be the "never" condition. Names are 1..8 ASCII chars. */
  conditions: readonly string[];
  /** PCT_BUILD.v (any non-zero value means "present"). */
  version: number;
  /** CC_BUILD.v. */
  ccVersion: number;
  /** PCT_BUILD.i: counters can raise an overflow interrupt (modelled as a bit only). */
  interrupts: boolean;
}

export const DEFAULT_BUILD: ArcPctBuild = {
  present: true,
  counters: 2,
  width: 32,
  conditions: DEFAULT_CONDITIONS,
  version: 2,
  ccVersion: 1,
  interrupts: false,
};

/**
 * An access to an aux register the modelled core does not have (hardware: an instruction error;
 * JTAG: a failed transaction).
 */
export class IllegalAuxRegister extends Error {
  constructor(readonly aux: number) {
    super(`aux register 0x${aux.toString(16)} does not exist on this core`);
    this.name = 'IllegalAuxRegister';
  }
}

export class ArcPctModel {
  readonly build: ArcPctBuild;
  private readonly mask: bigint;
  private readonly counts: bigint[];
  private readonly configs: number[];
  private control = 0;
  private index = 0;
  private ccIndex = 0;
  private snapshot = 0n;
  private readonly intCounts: number[];
  private intCtrl = 0;
  private intAct = 0;

  constructor(build: Partial<ArcPctBuild> = {}) {
    this.build = { ...DEFAULT_BUILD, ...build };
    const b = this.build;
    if (b.present) {
      if (!Number.isInteger(b.counters) || b.counters < 1 || b.counters > 255)
        throw new Error(`counters must be 1..255, not ${b.counters}`);
      if (b.conditions.length < 1 || b.conditions.length > 0xffff)
        throw new Error('conditions must list 1..65535 names');
      for (const name of b.conditions) {
        if (!/^[\x21-\x7e]{1,8}$/.test(name))
          throw new Error(`condition name '${name}' must be 1..8 printable ASCII characters`);
      }
      if ((b.version & 0xff) === 0) throw new Error('a present PCT needs a non-zero version');
    }
    this.mask = (1n << BigInt(b.width)) - 1n;
    this.counts = new Array<bigint>(b.counters).fill(0n);
    this.configs = new Array<number>(b.counters).fill(0);
    this.intCounts = new Array<number>(b.counters * 2).fill(0);
  }

  /** The size field s of PCT_BUILD such that width = 32 + (s << 4). */
  private get sizeField(): number {
    return (this.build.width - 32) >> 4;
  }

  handles(aux: number): boolean {
    return (
      aux === PCT_AUX.PCT_BUILD ||
      aux === PCT_AUX.CC_BUILD ||
      (aux >= 0x240 && aux <= 0x242) ||
      (aux >= 0x250 && aux <= 0x256) ||
      (aux >= 0x25c && aux <= 0x25f)
    );
  }

  read(aux: number): number {
    const b = this.build;
    // Build configuration registers of absent components read as zero.
    if (!b.present) {
      if (aux === PCT_AUX.PCT_BUILD || aux === PCT_AUX.CC_BUILD) return 0;
      throw new IllegalAuxRegister(aux);
    }
    switch (aux) {
      case PCT_AUX.PCT_BUILD:
        return (
          ((b.version & 0xff) |
            (this.sizeField << 8) |
            ((b.interrupts ? 1 : 0) << 10) |
            ((b.counters & 0xff) << 16)) >>>
          0
        );
      case PCT_AUX.CC_BUILD:
        return ((b.ccVersion & 0xff) | (b.conditions.length << 16)) >>> 0;
      case PCT_AUX.CC_INDEX:
        return this.ccIndex;
      case PCT_AUX.CC_NAME0:
        return this.nameWord(0);
      case PCT_AUX.CC_NAME1:
        return this.nameWord(4);
      case PCT_AUX.PCT_COUNTL:
        return Number(this.selectedCount() & 0xffffffffn);
      case PCT_AUX.PCT_COUNTH:
        return Number((this.selectedCount() >> 32n) & 0xffffffffn);
      case PCT_AUX.PCT_SNAPL:
        return Number(this.snapshot & 0xffffffffn);
      case PCT_AUX.PCT_SNAPH:
        return Number((this.snapshot >> 32n) & 0xffffffffn);
      case PCT_AUX.PCT_CONFIG:
        return this.index < b.counters ? this.configs[this.index]! : 0;
      case PCT_AUX.PCT_CONTROL:
        return this.control;
      case PCT_AUX.PCT_INDEX:
        return this.index;
      case PCT_AUX.PCT_INT_CNTL:
      case PCT_AUX.PCT_INT_CNTH:
        return this.index < b.counters ? this.intCounts[this.index * 2 + (aux - PCT_AUX.PCT_INT_CNTL)]! : 0;
      case PCT_AUX.PCT_INT_CTRL:
        return this.intCtrl;
      case PCT_AUX.PCT_INT_ACT:
        return this.intAct;
      default:
        throw new IllegalAuxRegister(aux);
    }
  }

  write(aux: number, value: number): void {
    const b = this.build;
    const v = value >>> 0;
    if (!b.present) throw new IllegalAuxRegister(aux);
    switch (aux) {
      case PCT_AUX.PCT_BUILD:
      case PCT_AUX.CC_BUILD:
      case PCT_AUX.CC_NAME0:
      case PCT_AUX.CC_NAME1:
      case PCT_AUX.PCT_SNAPL:
      case PCT_AUX.PCT_SNAPH:
        return; // read-only: writes are ignored
      case PCT_AUX.CC_INDEX:
        this.ccIndex = v & 0xffff;
        return;
      case PCT_AUX.PCT_COUNTL:
        this.setSelectedCount((this.selectedCount() & ~0xffffffffn) | BigInt(v));
        return;
      case PCT_AUX.PCT_COUNTH:
        this.setSelectedCount((this.selectedCount() & 0xffffffffn) | (BigInt(v) << 32n));
        return;
      case PCT_AUX.PCT_CONFIG:
        if (this.index < b.counters) this.configs[this.index] = v & (CONFIG_CONDITION_MASK | CONFIG_USER | CONFIG_KERN);
        return;
      case PCT_AUX.PCT_CONTROL:
        if (v & CONTROL_CLEAR) this.counts.fill(0n);
        if (v & CONTROL_SNAPSHOT) this.snapshot = this.selectedCount();
        this.control = v & CONTROL_ENABLE;
        return;
      case PCT_AUX.PCT_INDEX:
        this.index = v & 0xff;
        return;
      case PCT_AUX.PCT_INT_CNTL:
      case PCT_AUX.PCT_INT_CNTH:
        if (this.index < b.counters) this.intCounts[this.index * 2 + (aux - PCT_AUX.PCT_INT_CNTL)] = v;
        return;
      case PCT_AUX.PCT_INT_CTRL:
        this.intCtrl = v;
        return;
      case PCT_AUX.PCT_INT_ACT:
        this.intAct &= ~v; // write 1 to clear
        return;
      default:
        throw new IllegalAuxRegister(aux);
    }
  }

  /**
   * The core executed work that raised each named condition `n` times (e.g. { crun: 7, iall: 5 }).
   * Every enabled counter whose PCT_CONFIG selects one of those conditions advances, modulo 2^width.
   */
  count(increments: ReadonlyMap<string, bigint> | Readonly<Record<string, bigint | number>>, kernelMode = true): void {
    if (!this.build.present || (this.control & CONTROL_ENABLE) === 0) return;
    const get = (name: string): bigint => {
      const v =
        increments instanceof Map ? increments.get(name) : (increments as Record<string, bigint | number>)[name];
      return v === undefined ? 0n : BigInt(v);
    };
    for (let n = 0; n < this.build.counters; n++) {
      const config = this.configs[n]!;
      const condition = config & CONFIG_CONDITION_MASK;
      if (condition === 0 || condition >= this.build.conditions.length) continue; // #0 is "never"
      const user = (config & CONFIG_USER) !== 0;
      const kern = (config & CONFIG_KERN) !== 0;
      if ((user || kern) && !(kernelMode ? kern : user)) continue;
      const inc = get(this.build.conditions[condition]!);
      if (inc !== 0n) this.counts[n] = (this.counts[n]! + inc) & this.mask;
    }
  }

  /** Test inspection: the raw hardware value of counter n. */
  peekCount(n: number): bigint {
    return this.counts[n] ?? 0n;
  }

  /** Test inspection: PCT_CONFIG of counter n. */
  peekConfig(n: number): number {
    return this.configs[n] ?? 0;
  }

  get enabled(): boolean {
    return (this.control & CONTROL_ENABLE) !== 0;
  }

  /** Sets state the way firmware (or a previous tool) might have left it, for restore tests. */
  preset(n: number, config: number, count: bigint): void {
    this.configs[n] = config;
    this.counts[n] = count & this.mask;
  }

  private selectedCount(): bigint {
    return this.index < this.build.counters ? this.counts[this.index]! : 0n;
  }

  private setSelectedCount(value: bigint): void {
    if (this.index < this.build.counters) this.counts[this.index] = value & this.mask;
  }

  /** Four characters of the selected condition's name, first character in the least significant byte. */
  private nameWord(offset: number): number {
    const name = this.build.conditions[this.ccIndex] ?? '';
    let word = 0;
    for (let i = 0; i < 4; i++) {
      const code = offset + i < name.length ? name.charCodeAt(offset + i) : 0;
      word |= code << (8 * i);
    }
    return word >>> 0;
  }
}

/** Condition list with indices 1.. permuted by a seeded shuffle (index 0 stays "never"). */
export function shuffledConditions(seed: number, base: readonly string[] = DEFAULT_CONDITIONS): string[] {
  const rest = base.slice(1);
  let s = seed >>> 0 || 1;
  for (let i = rest.length - 1; i > 0; i--) {
    s = (Math.imul(s, 1103515245) + 12345) >>> 0;
    const j = s % (i + 1);
    [rest[i], rest[j]] = [rest[j]!, rest[i]!];
  }
  return [base[0]!, ...rest];
}
