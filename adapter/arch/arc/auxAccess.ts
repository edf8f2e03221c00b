import { CycleLensError, ErrorCode, errorMessage } from '../../errors';
import type { TargetAccess } from '../../probe/targetAccess';

/**
 * ARC auxiliary registers live in their own address space, reached by the core with LR/SR and by
 * a debugger either as named registers in the target description or through a gdbserver command.
 * The PCT code needs only "read/write aux register N", so it depends on this interface alone.
 */
export interface AuxRegisterAccess {
  /** How the registers are reached, for messages ("GDB registers", "OpenOCD monitor"). */
  readonly via: string;
  read(aux: number): Promise<number>;
  write(aux: number, value: number): Promise<void>;
}

/**
 * PCT aux register numbers: Linux arch/arc/include/asm/perf_event.h (ARC_REG_PCT_*, ARC_REG_CC_*).
 */
export const PctAux = {
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
} as const;

/**
 * The register names a gdbserver uses when it puts the PCT registers into its target description:
 * the lower-case register name, as OpenOCD's `arc add-reg -name pct_control -num 0x255 …` would
 * and as nSIM/OpenOCD name the other aux registers (status32, lp_start …).
 */
export const pctRegisterNames: ReadonlyMap<number, string> = new Map([
  [PctAux.PCT_BUILD, 'pct_build'],
  [PctAux.CC_BUILD, 'cc_build'],
  [PctAux.CC_INDEX, 'cc_index'],
  [PctAux.CC_NAME0, 'cc_name0'],
  [PctAux.CC_NAME1, 'cc_name1'],
  [PctAux.PCT_COUNTL, 'pct_countl'],
  [PctAux.PCT_COUNTH, 'pct_counth'],
  [PctAux.PCT_SNAPL, 'pct_snapl'],
  [PctAux.PCT_SNAPH, 'pct_snaph'],
  [PctAux.PCT_CONFIG, 'pct_config'],
  [PctAux.PCT_CONTROL, 'pct_control'],
  [PctAux.PCT_INDEX, 'pct_index'],
]);

export function auxName(aux: number): string {
  const name = pctRegisterNames.get(aux);
  return name ? `${name.toUpperCase()} (0x${aux.toString(16)})` : `aux 0x${aux.toString(16)}`;
}

/**
 * Aux registers through OpenOCD's ARC commands (src/target/arc_cmd.c): `arc jtag get-aux-reg N`
 * prints the value (OpenOCD 0.12 returns it as a decimal Jim result; later versions print
 * `0x%x`), `arc jtag set-aux-reg N V` prints nothing. OpenOCD answers a failed monitor command
 * with its message and still "OK", so the printed text is the only error signal: a read must print
 * exactly one number and a write nothing at all.
 */
export class MonitorAuxAccess implements AuxRegisterAccess {
  readonly via = 'the gdbserver monitor (`arc jtag get-aux-reg` / `set-aux-reg`)';

  constructor(private readonly target: TargetAccess) {}

  async read(aux: number): Promise<number> {
    const out = await this.run(`arc jtag get-aux-reg 0x${aux.toString(16)}`, aux, 'read');
    const value = parseMonitorNumber(out);
    if (value === undefined) {
      throw new CycleLensError(
        ErrorCode.CounterUnavailable,
        `Could not read ${auxName(aux)} through the gdbserver monitor: it answered '${out.trim().slice(0, 200)}'. ` +
          `The gdbserver must be OpenOCD with an ARC target, or expose the PCT registers in its ` +
          `target description.`,
      );
    }
    return value;
  }

  async write(aux: number, value: number): Promise<void> {
    const out = await this.run(
      `arc jtag set-aux-reg 0x${aux.toString(16)} 0x${(value >>> 0).toString(16)}`,
      aux,
      'write',
    );
    if (out.trim() !== '') {
      throw new CycleLensError(
        ErrorCode.CounterUnavailable,
        `Could not write ${auxName(aux)} through the gdbserver monitor: it answered '${out.trim().slice(0, 200)}'.`,
      );
    }
  }

  private async run(command: string, aux: number, what: string): Promise<string> {
    try {
      return await this.target.monitor(command);
    } catch (err) {
      if (err instanceof CycleLensError && err.code === ErrorCode.NotStopped) throw err;
      throw new CycleLensError(
        ErrorCode.CounterUnavailable,
        `Could not ${what} ${auxName(aux)}: \`monitor ${command}\` failed (${errorMessage(err)}). ` +
          `The gdbserver must be OpenOCD with an ARC target, or expose the PCT registers in its ` +
          `target description.`,
      );
    }
  }
}

/** The value a `get-aux-reg` printed: one decimal or 0x-hex number on the last non-empty line. */
export function parseMonitorNumber(text: string): number | undefined {
  const lines = text
    .split(/\r?\n/)
    .map((l) => l.trim())
    .filter((l) => l !== '');
  const last = lines[lines.length - 1];
  if (lines.length !== 1 || last === undefined || !/^(0x[0-9a-f]+|\d+)$/i.test(last)) return undefined;
  const value = Number(last);
  return Number.isSafeInteger(value) && value >= 0 && value <= 0xffffffff ? value : undefined;
}

/**
 * Aux registers as named registers of GDB's target description. Registers the description lacks
 * go to `fallback` (the monitor), so a description with only some PCT registers still works.
 * Every register write through GDB flushes its register cache (valops.c value_assign → the
 * target_changed observer → registers_changed), so a read after a write (CC_NAME after CC_INDEX,
 * SNAPL after the snapshot) fetches the fresh value from the target.
 */
export class RegisterAuxAccess implements AuxRegisterAccess {
  readonly via: string;

  constructor(
    private readonly target: TargetAccess,
    private readonly names: ReadonlyMap<number, string>,
    private readonly fallback?: AuxRegisterAccess,
  ) {
    this.via = fallback ? `GDB registers, with ${fallback.via} for the rest` : 'GDB registers';
  }

  async read(aux: number): Promise<number> {
    const name = this.names.get(aux);
    if (name === undefined) return this.viaFallback(aux).read(aux);
    try {
      return Number((await this.target.readRegister(name)) & 0xffffffffn);
    } catch (err) {
      throw wrapRegisterError(err, `read $${name}`, aux);
    }
  }

  async write(aux: number, value: number): Promise<void> {
    const name = this.names.get(aux);
    if (name === undefined) return this.viaFallback(aux).write(aux, value);
    try {
      await this.target.writeRegister(name, BigInt(value >>> 0));
    } catch (err) {
      throw wrapRegisterError(err, `write $${name}`, aux);
    }
  }

  private viaFallback(aux: number): AuxRegisterAccess {
    if (!this.fallback)
      throw new CycleLensError(
        ErrorCode.CounterUnavailable,
        `The target description has no register for ${auxName(aux)}.`,
      );
    return this.fallback;
  }
}

function wrapRegisterError(err: unknown, what: string, aux: number): unknown {
  if (err instanceof CycleLensError && err.code === ErrorCode.NotStopped) return err;
  return new CycleLensError(ErrorCode.CounterUnavailable, `Could not ${what} (${auxName(aux)}): ${errorMessage(err)}`);
}

/**
 * Picks how to reach the PCT registers on this target: by name when GDB's target description has
 * them (nSIM or an OpenOCD configured with `arc add-reg`), else through OpenOCD's monitor commands.
 */
export async function createArcAuxAccess(target: TargetAccess): Promise<AuxRegisterAccess> {
  const present = new Map<number, string>();
  for (const [aux, name] of pctRegisterNames) {
    if (await target.hasRegister(name)) present.set(aux, name);
  }
  const monitor = new MonitorAuxAccess(target);
  if (present.size === 0) return monitor;
  return new RegisterAuxAccess(target, present, present.size < pctRegisterNames.size ? monitor : undefined);
}

/**
 * Resolves how to reach the aux registers on first use: the choice reads GDB's register list, which
 * is only complete once GDB is connected to the target.
 */
export class DeferredAuxAccess implements AuxRegisterAccess {
  private resolved: Promise<AuxRegisterAccess> | undefined;

  constructor(private readonly target: TargetAccess) {}

  get via(): string {
    return 'GDB registers or OpenOCD monitor';
  }

  async read(aux: number): Promise<number> {
    return (await this.access()).read(aux);
  }

  async write(aux: number, value: number): Promise<void> {
    return (await this.access()).write(aux, value);
  }

  private access(): Promise<AuxRegisterAccess> {
    this.resolved ??= createArcAuxAccess(this.target);
    return this.resolved;
  }
}
