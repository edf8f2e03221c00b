import { CycleLensError, ErrorCode } from '../../errors';
import type { DecodedInstruction } from '../../arch/codec';
import { hex } from './errors';
import type { LiveMeasurements } from './liveMeasurements';
import type { MeasurementBuilder } from './measurementBuilder';
import { RECORD_SIZE, decodeRecord } from './recordLayout';
import type {
  Calibration,
  InjectionServiceOptions,
  Measurement,
  MeasurementInfo,
  MeasurementResults,
} from './serviceTypes';
import type { CaveReach, InjectionArch, PatchSite, PayloadKind } from './types';

/** Stack for the calibration driver (the Cortex-M stubs push four registers). */
const CALIBRATION_STACK = 128;

/**
 * The read-out part of the injection service: a measurement's record on the target turned into
 * counts in counter units, with the payloads' own instructions taken out, and the calibration that
 * measures on this target what a payload adds per pass (docs/design.md, "Measurement semantics").
 */
export class MeasurementReadout {
  /** Outer-pass overhead of hardware gating measured on this target (calibrate('hardware')). */
  private calibratedHardwareOverhead: number | undefined;

  constructor(
    private readonly o: InjectionServiceOptions,
    private readonly unitsPerInstruction: number,
    private readonly cave: CaveReach,
    private readonly live: LiveMeasurements,
    private readonly builder: MeasurementBuilder,
  ) {}

  async read(measurements: readonly Measurement[]): Promise<MeasurementResults[]> {
    const out: MeasurementResults[] = [];
    for (const m of measurements) out.push(await this.readOne(m));
    return out;
  }

  /**
   * Runs an empty function `calls` times on the target with its measurement injected (interrupts
   * masked) and compares the per-pass count with the payload's stated counted instructions. The
   * target's registers are saved and restored; the program does not notice.
   */
  async calibrate(calls = 200, payload: PayloadKind = 'software'): Promise<Calibration> {
    const runner = this.o.runner;
    if (!runner) throw new CycleLensError(ErrorCode.Unsupported, 'Calibration needs run control (a TargetRunner).');
    await this.live.ensureRuntime();
    const g = this.o.support.generator;
    const probe = g.calibrationCode(0, calls);
    const block = this.live.allocOrThrow(probe.bytes.length + 16 + CALIBRATION_STACK);
    const code = g.calibrationCode(block.start, calls);
    await this.o.access.writeMemory(BigInt(block.start), code.bytes);
    const fnBytes = code.bytes.subarray(code.fn - block.start, code.driver - block.start);
    const insns = decodeAllSafe(this.o.support.arch, fnBytes, code.fn);
    const shape = this.o.support.arch.choosePatch(
      code.fn,
      {
        start: block.start,
        size: block.size,
        ...(this.cave.threadPointerBase !== undefined ? { threadPointerBase: this.cave.threadPointerBase } : {}),
      },
      this.o.support.arch.freeAtEntry,
    );
    if (typeof shape === 'string') throw new CycleLensError(ErrorCode.CommandFailed, shape);
    const displaced = [];
    let covered = 0;
    for (const i of insns) {
      if (covered >= shape.length) break;
      displaced.push(i);
      covered += i.length;
    }
    const site: PatchSite = {
      address: code.fn,
      shape,
      displaced,
      resume: code.fn + covered,
      freeRegisters: this.o.support.arch.freeAtEntry,
      original: fnBytes.slice(0, covered),
    };
    const saved = new Map<string, bigint>();
    for (const r of this.o.support.registers) saved.set(r, await this.o.access.readRegister(r));
    let info: MeasurementInfo | undefined;
    try {
      if (payload === 'hardware') this.live.claimHardwareSlot();
      info = await this.builder.install(
        '[calibration]',
        'function',
        payload,
        [],
        [site],
        (record, at) => ({ kind: 'function', payload, record, at, entry: site }),
        undefined,
        false,
      );
      // A stack of its own at the top of the block: the program's SP may not be set up yet (at reset).
      await this.o.access.writeRegister('pc', BigInt((code.driver | this.o.support.codeAddressBit) >>> 0));
      await this.o.access.writeRegister('sp', BigInt(((block.start + block.size) & ~7) >>> 0));
      const halted = await runner.runTo(code.done, 20_000);
      const pc = Number(await this.o.access.readRegister('pc'));
      if (!halted || pc !== code.done)
        throw new CycleLensError(
          ErrorCode.CommandFailed,
          `The calibration run did not reach its end (pc ${hex(pc)}, expected ${hex(code.done)}).`,
        );
      const result = (await this.read(this.live.all())).find((r) => r.id === info!.id)!;
      const perPass = result.passes ? (result.total - result.nested) / result.passes : 0;
      if (payload === 'hardware')
        this.calibratedHardwareOverhead = perPass - code.functionInstructions * this.unitsPerInstruction;
      return {
        calls,
        passes: result.passes,
        counter: this.live.counter.name,
        perPassRaw: perPass,
        functionInstructions: code.functionInstructions,
        measuredOverhead: perPass - code.functionInstructions * this.unitsPerInstruction,
        statedOverhead: info.counted.outer * this.unitsPerInstruction,
        explanation: info.counted.explanation,
        lastPasses: result.last.raw,
      };
    } finally {
      if (info) await this.live.removeSilently(info.id);
      if (payload === 'hardware') await this.live.releaseHardwareSlot();
      for (const [r, v] of saved) await this.o.access.writeRegister(r, v);
      this.live.release(block);
      await this.live.reclaimIfIdle();
    }
  }

  private async readOne(m: Measurement): Promise<MeasurementResults> {
    const v = decodeRecord(await this.o.access.readMemory(BigInt(m.info.record), RECORD_SIZE));
    const u = this.unitsPerInstruction;
    const own = m.info.counted.outer * u;
    let total = Number(v.total);
    let nested = Number(v.nested) * u;
    // What compensation takes out of each pass: the same amount for the total and for every pass.
    let perPass = own;
    let compensated = total - nested - own * v.passes;
    if (m.info.payload === 'hardware' && m.heldBase !== undefined) {
      const outer = this.calibratedHardwareOverhead ?? own;
      perPass = outer;
      // The gated counter itself holds the total; recursive entries of this same measurement are
      // in `nested` at their full cost but the counter skipped all but `counted.nested` of them.
      total = (v.held - m.heldBase) >>> 0;
      const recursive = v.calls - v.passes;
      nested -= recursive * (m.info.counted.nestedPayload ?? 0) * u;
      compensated = total - nested - outer * v.passes - m.info.counted.nested * u * recursive;
      // The recursive entries' own payload is payload inside the passes too: `nested` holds all of it.
      nested = total - compensated - outer * v.passes;
    }
    const raw = v.lastPasses;
    return {
      id: m.info.id,
      name: m.info.name,
      kind: m.info.kind,
      payload: m.info.payload,
      counter: m.info.counter,
      calls: v.calls,
      passes: v.passes,
      untracked: v.untracked,
      open: v.depth,
      total,
      nested,
      compensatedTotal: compensated,
      ownOverheadPerPass: perPass,
      min: v.passes ? v.min : null,
      max: v.passes ? v.max : null,
      mean: v.passes ? total / v.passes : null,
      meanCompensated: v.passes ? compensated / v.passes : null,
      last: { raw, compensated: raw.map((x) => x - perPass) },
    };
  }
}

function decodeAllSafe(arch: InjectionArch, bytes: Uint8Array, address: number): DecodedInstruction[] {
  const out = [];
  let at = 0;
  while (at < bytes.length) {
    const i = arch.codec.decode(bytes.subarray(at), address + at);
    out.push(i);
    at += i.length;
  }
  return out;
}
