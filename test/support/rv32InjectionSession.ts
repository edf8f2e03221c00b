import assert from 'node:assert/strict';
import { join } from 'node:path';
import { rv32InjectionSupport } from '../../adapter/arch/riscv/trampolineRv32';
import type { Debugger } from '../../adapter/debugger/debugger';
import { parseLocationSpec } from '../../adapter/debugger/locations';
import { ElfImage } from '../../adapter/elf';
import { debuggerTargetRunner } from '../../adapter/probe/debuggerRunner';
import { InjectionService } from '../../adapter/probe/injection/injectionService';
import { resolveReservedMemory } from '../../adapter/probe/injection/reservedMemory';
import type { ReservedMemory } from '../../adapter/probe/injection/types';
import { DebuggerTargetAccess } from '../../adapter/probe/targetAccess';
import { QemuServer } from '../../adapter/servers/qemu';
import { qemuMemoryMap } from '../../adapter/target/targetFacts';
import { startGdb } from './gdb';

/** One RV32 program on QEMU `virt` with the injection service over real GDB, as the adapter wires it. */
export interface Rv32InjectionSession {
  gdb: Debugger;
  access: DebuggerTargetAccess;
  svc: InjectionService;
  /** What the program printed so far. */
  output(): Promise<string>;
  /** Runs to a breakpoint at `location` (a function or file:line) and removes it. */
  runTo(location: string): Promise<void>;
  close(): Promise<void>;
}

/**
 * Starts `elfPath` halted at reset under `-icount shift=0`, with reserved memory resolved as the
 * README's configuration resolves it (free RAM of virt's memory map) and a fresh journal directory
 * under `scratch`.
 */
export async function startRv32InjectionSession(elfPath: string, scratch: string): Promise<Rv32InjectionSession> {
  const elf = ElfImage.loadSync(elfPath);
  let out = '';
  const qemu = new QemuServer({ type: 'qemu', icount: 0 });
  await qemu.start({ executable: elfPath, family: 'riscv', cwd: scratch, log: (l) => (out += l) });
  const gdb = await startGdb(scratch, 'riscv');
  try {
    await gdb.loadProgram(elfPath);
    await gdb.connectRemote(qemu.gdbAddress);
  } catch (err) {
    await gdb.exit();
    await qemu.stop();
    throw err;
  }
  const access = new DebuggerTargetAccess(gdb);
  const virtMap = qemuMemoryMap('virt')!;
  const svc = new InjectionService({
    access,
    elf,
    support: rv32InjectionSupport(),
    isHalted: () => gdb.executionState === 'stopped',
    journalDir: join(scratch, `journal-${Date.now()}-${Math.random().toString(36).slice(2)}`),
    reserved: resolveReservedMemory(elf, { memoryMap: virtMap }) as ReservedMemory,
    memoryMap: virtMap,
    runner: debuggerTargetRunner(gdb),
  });
  return {
    gdb,
    access,
    svc,
    async output() {
      await qemu.flushOutput();
      return out;
    },
    async runTo(location: string) {
      const bp = await gdb.insertBreakpoint({ location: parseLocationSpec(location) });
      const stopped = gdb.waitForStop(120_000);
      await gdb.continue();
      const stop = await stopped;
      assert.ok(stop?.breakpointIds.includes(bp.id), `stopped at ${location} (${stop?.reason ?? 'no stop'})`);
      await gdb.deleteBreakpoints([bp.id]);
    },
    async close() {
      await gdb.exit();
      await qemu.stop();
    },
  };
}
