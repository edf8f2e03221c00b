import { CycleLensError, ErrorCode } from '../../errors';
import { CaveAllocator, type Block } from './caveAllocator';
import { InjectionRefusedError, hex, refusal } from './errors';
import type { PatchWriter } from './patchWriter';
import type { RuntimeImage, RuntimeLayout } from './payload';
import { Ctrl, initialControl } from './recordLayout';
import type { InjectionServiceOptions, Measurement, MeasurementInfo, StopPoint, TargetCode } from './serviceTypes';
import type { CounterSource } from './types';

/**
 * What is live on the target during one session: the measurements patched in, the reserved memory
 * they hold, the runtime and counter set-up they share, the one hardware-gating slot, and the
 * program's thread pointer while the runtime owns it. Memory comes back only when no call is in
 * flight through a stub (the runtime's shadow stack is empty).
 */
export class LiveMeasurements {
  private readonly measurements = new Map<number, Measurement>();
  private allocator: CaveAllocator;
  private installed: RuntimeImage | undefined;
  private nextId = 1;
  private hardwareSlotInUse = false;
  private savedThreadPointer: bigint | undefined;

  constructor(
    private readonly o: InjectionServiceOptions,
    private readonly layout: RuntimeLayout,
    /** The reserved memory left for stubs and records once the runtime's place is set aside. */
    private readonly stubRanges: Block[],
    private readonly patches: PatchWriter,
  ) {
    this.allocator = new CaveAllocator(stubRanges);
  }

  get counter(): CounterSource {
    return this.o.support.generator.counter;
  }

  /** The runtime once `ensureRuntime` has put it on the target. */
  get runtime(): RuntimeImage | undefined {
    return this.installed;
  }

  get size(): number {
    return this.measurements.size;
  }

  get(id: number): Measurement | undefined {
    return this.measurements.get(id);
  }

  ids(): number[] {
    return [...this.measurements.keys()];
  }

  all(): Measurement[] {
    return [...this.measurements.values()];
  }

  list(): MeasurementInfo[] {
    return [...this.measurements.values()].map((m) => m.info);
  }

  takeId(): number {
    return this.nextId++;
  }

  /** Whether a hardware-gating measurement holds the counter (software accumulation then reads a stopped counter). */
  get hardwareGated(): boolean {
    return this.hardwareSlotInUse;
  }

  // ---- memory and runtime ----------------------------------------------------------------------

  allocOrThrow(size: number): Block {
    const b = this.allocator.allocate(size, 4);
    if (!b) {
      throw new InjectionRefusedError(
        refusal(
          'memory',
          `The reserved memory at ${hex(this.o.reserved.start)} is full (${this.allocator.freeBytes} ` +
            `bytes free, ${size} needed); remove measurements or reserve more RAM.`,
        ),
      );
    }
    return b;
  }

  release(block: Block): void {
    this.allocator.release(block);
  }

  async ensureRuntime(): Promise<void> {
    if (this.installed) return;
    const g = this.o.support.generator;
    const runtime = g.buildRuntime(this.layout);
    const setup = await this.o.support.prepareCounter?.(this.o.access);
    if (setup) await this.runOnTarget(setup);
    await this.o.access.writeMemory(
      BigInt(this.layout.ctrl),
      initialControl(this.layout.ctrl, this.layout.shadowSlots),
    );
    if (g.dispatchTable)
      await this.o.access.writeMemory(BigInt(this.layout.dispatchTable), g.dispatchTable([], this.layout));
    await this.o.access.writeMemory(BigInt(runtime.address), runtime.bytes);
    if (this.layout.threadPointer !== undefined) {
      const original = await this.o.access.readRegister('tp');
      this.savedThreadPointer = original;
      this.patches.setThreadPointer(original);
      await this.o.access.writeRegister('tp', BigInt(this.layout.threadPointer));
    }
    this.installed = runtime;
  }

  /** Runs `code` in the cave with the program's registers saved and restored around it. */
  private async runOnTarget(code: TargetCode): Promise<void> {
    const runner = this.o.runner;
    if (!runner)
      throw new CycleLensError(
        ErrorCode.Unsupported,
        `${code.what} needs code run on the target, and no run control was given to the injector.`,
      );
    const probe = code.build(0);
    const block = this.allocOrThrow(probe.bytes.length + 16);
    const built = code.build(block.start);
    const saved = new Map<string, bigint>();
    try {
      await this.o.access.writeMemory(BigInt(block.start), built.bytes);
      for (const r of this.o.support.registers) saved.set(r, await this.o.access.readRegister(r));
      await this.o.access.writeRegister('pc', BigInt((built.entry | this.o.support.codeAddressBit) >>> 0));
      if (!(await runner.runTo(built.done, 10_000)))
        throw new CycleLensError(ErrorCode.CommandFailed, `${code.what} did not finish on the target.`);
    } finally {
      for (const [r, v] of saved) await this.o.access.writeRegister(r, v);
      this.allocator.release(block);
    }
  }

  private async writeDispatchTable(): Promise<void> {
    const g = this.o.support.generator;
    if (!g.dispatchTable) return;
    const entries = [...this.measurements.values()].flatMap((m) => m.dispatch);
    await this.o.access.writeMemory(BigInt(this.layout.dispatchTable), g.dispatchTable(entries, this.layout));
  }

  async reclaimIfIdle(): Promise<void> {
    if (!this.installed) return;
    const ssp = await this.o.access.readU32(BigInt(this.layout.ctrl + Ctrl.ssp));
    const base = this.layout.ctrl + Ctrl.shadow;
    if (ssp !== base) return;
    this.allocator.reclaim();
    if (this.measurements.size === 0 && this.savedThreadPointer !== undefined) {
      // tp goes back only when no exit stub can run any more (they reach the runtime through it).
      await this.o.access.writeRegister('tp', this.savedThreadPointer);
      this.savedThreadPointer = undefined;
      this.installed = undefined;
      this.patches.clear();
    }
  }

  /**
   * The target is being reset, every measurement already removed. Nothing can run from the
   * reserved memory afterwards (a call in flight or one returning into a pinned stub is gone with
   * the reset), and the reset undoes the counter set-up and the thread pointer: all of the memory
   * comes back and the next injection installs the runtime anew.
   */
  targetReset(): void {
    if (this.measurements.size > 0)
      throw new CycleLensError(ErrorCode.CommandFailed, 'Remove the injected measurements before the target is reset.');
    this.allocator = new CaveAllocator(this.stubRanges);
    this.installed = undefined;
    this.savedThreadPointer = undefined;
    this.patches.clear();
  }

  /**
   * The target ended and its memory with it (an emulator that exits with the program): no patch
   * is left anywhere, so the measurements are forgotten and the journal is cleared, and the next
   * launch has nothing to restore.
   */
  targetGone(): void {
    this.measurements.clear();
    this.allocator = new CaveAllocator(this.stubRanges);
    this.installed = undefined;
    this.savedThreadPointer = undefined;
    this.patches.clear();
  }

  // ---- measurements going live and away --------------------------------------------------------

  /** Makes a built measurement live (see PatchWriter.apply); a failed write leaves nothing of it behind. */
  async commit(m: Measurement, checkProgram: boolean): Promise<void> {
    const { id } = m.info;
    const { patches, dispatch } = m;
    this.measurements.set(id, m);
    if (dispatch.length) await this.writeDispatchTable();
    try {
      await this.patches.apply(id, patches, checkProgram);
    } catch (err) {
      this.measurements.delete(id);
      if (dispatch.length) await this.writeDispatchTable();
      throw err;
    }
    for (const w of m.info.warnings) this.o.log?.(`${w.message}\n`);
  }

  async remove(id: number): Promise<void> {
    const m = this.measurements.get(id);
    if (!m) throw new CycleLensError(ErrorCode.InvalidRequest, `There is no measurement #${id}.`);
    const problems = await this.patches.restore(m.patches);
    this.measurements.delete(id);
    // Its diverting entry patch stood in for another measurement's bypass: that one goes in now.
    for (const other of this.measurements.values()) {
      const b = other.pendingBypass;
      if (b?.host !== id) continue;
      await this.patches.apply(other.info.id, [b.patch], true);
      other.patches.push(b.patch);
      delete other.pendingBypass;
    }
    if (m.dispatch.length) await this.writeDispatchTable();
    if (m.info.payload === 'hardware') await this.releaseHardwareSlot();
    // A call displaced into the stub returns into it: that memory stays reserved for the session.
    if (!m.pinned) for (const b of m.blocks) this.allocator.release(b);
    this.patches.forget(id);
    await this.reclaimIfIdle();
    if (problems.length)
      throw new CycleLensError(ErrorCode.CommandFailed, `Measurement #${id} was removed, but ${problems.join('; ')}.`);
  }

  async removeSilently(id: number): Promise<void> {
    const m = this.measurements.get(id);
    if (!m) return;
    await this.patches.restoreUnchecked(m.patches);
    this.measurements.delete(id);
    for (const b of m.blocks) this.allocator.release(b);
  }

  /**
   * Where a stop wanted at `address` has to be taken while the measurements are in. Outside every
   * patch it is the address itself. At the first byte of a jump to a trampoline the program never
   * executes the original instructions there: it runs them relocated and comes back at the resume
   * point, so the stop moves there, after the payload (a window closing at `address` is closed
   * when it is taken). Where the displaced code branches away (a tiny function's return) the stop
   * stays on the jump, before the payload. Inside patched bytes no stop can be taken, and the
   * reason names the measurement in the way.
   */
  stopPointFor(address: number): StopPoint {
    const a = (address & ~1) >>> 0;
    for (const m of this.measurements.values()) {
      for (const p of m.patches) {
        if (a < p.address || a >= p.address + p.patched.length) continue;
        const who = `measurement #${m.info.id} (${m.info.name})`;
        if (a !== p.address)
          return {
            ok: false,
            reason:
              `${hex(a)} is inside the bytes patched by ${who}, so the program never executes it there. ` +
              `Remove that measurement, or stop elsewhere.`,
          };
        // Where the displaced code branches away it never comes back: stop on the jump itself.
        return p.stopAt !== undefined
          ? { ok: true, address: p.stopAt, moved: { from: a, measurement: who } }
          : { ok: true, address };
      }
    }
    return { ok: true, address };
  }

  /** The live measurement whose entry patch at `address` diverts the code there (Measurement.diverts). */
  divertingAt(address: number): number | undefined {
    for (const m of this.measurements.values()) if (m.diverts === address) return m.info.id;
    return undefined;
  }

  checkOverlap(address: number, length: number): void {
    for (const m of this.measurements.values()) {
      for (const p of m.patches) {
        if (address < p.address + p.patched.length && p.address < address + length) {
          if (p.address === m.bypassAt)
            throw new InjectionRefusedError(
              refusal(
                'branchIntoPatch',
                `${hex(address)} carries the patch of measurement #${m.info.id} (${m.info.name}) that keeps ` +
                  `the code here, which falls through into its entry, out of its count. Measure both in one ` +
                  `request (the adapter puts this one first), or remove #${m.info.id} first.`,
                address,
              ),
            );
          throw new InjectionRefusedError(
            refusal(
              'branchIntoPatch',
              `${hex(address)} is already patched by measurement #${m.info.id} (${m.info.name}); remove it first.`,
              address,
            ),
          );
        }
      }
    }
  }

  // ---- the hardware-gating slot ----------------------------------------------------------------

  claimHardwareSlot(): void {
    const c = this.counter;
    if (c.kind !== 'csr')
      throw new InjectionRefusedError(
        refusal(
          'unrelocatable',
          `Hardware gating needs a counter with an inhibit bit; ${c.name} has none. Use software accumulation.`,
        ),
      );
    if (this.hardwareSlotInUse)
      throw new InjectionRefusedError(
        refusal(
          'unrelocatable',
          `${c.name} already gates another measurement; hardware gating takes one counter slot per ` +
            `measurement. Use software accumulation for more.`,
        ),
      );
    if ([...this.measurements.values()].some((m) => m.info.payload === 'software')) {
      throw new InjectionRefusedError(
        refusal(
          'unrelocatable',
          `Software measurements read ${c.name} as a free-running counter; gating it would break ` +
            `them. Remove them first, or use software accumulation.`,
        ),
      );
    }
    this.hardwareSlotInUse = true;
  }

  /** A claim whose measurement was never installed: the counter was not touched yet. */
  dropHardwareClaim(): void {
    this.hardwareSlotInUse = false;
  }

  async releaseHardwareSlot(): Promise<void> {
    this.hardwareSlotInUse = false;
    const c = this.counter;
    if (c.kind === 'csr')
      await this.o.access.writeRegister(
        'mcountinhibit',
        (await this.o.access.readRegister('mcountinhibit')) & ~(1n << BigInt(c.inhibitBit)),
      );
  }

  /** Stops the gated counter and returns the value it holds (the measurement's zero). */
  async stopHardwareCounter(): Promise<number> {
    const c = this.counter;
    if (c.kind !== 'csr') throw new Error('not a CSR counter');
    const inhibit = await this.o.access.readRegister('mcountinhibit');
    await this.o.access.writeRegister('mcountinhibit', inhibit | (1n << BigInt(c.inhibitBit)));
    const value = await this.o.access.readRegister(c.name);
    // QEMU 7.2 keeps counting while inhibited: writing the value back makes it hold (a no-op on hardware).
    await this.o.access.writeRegister(c.name, value);
    return Number(value & 0xffffffffn);
  }
}
