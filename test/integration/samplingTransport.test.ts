import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pcFromMonitorRegisters } from '../../adapter/arch/monitorRegisters';
import { archPlugin } from '../../adapter/arch/registry';
import { ElfImage } from '../../adapter/elf/elfImage';
import { QmpMonitor } from '../../adapter/sampling/qmpMonitor';
import type { FixtureTarget } from '../support/paths';
import { fixtureElf } from '../support/paths';

/**
 * The monitor sampler's channel, QMP, against a real QEMU running hotloop: replies to pipelined
 * commands come back to the command that asked (events interleaved and skipped), and the PC read
 * through `human-monitor-command` while the guest runs lies in the program's code.
 */
async function withQemu(target: FixtureTarget, fn: (qmp: QmpMonitor) => Promise<void>): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'cyclelens-qmp-test-'));
  const sock = join(dir, 'qmp.sock');
  const qemu = spawn(
    target === 'rv32' ? 'qemu-system-riscv32' : 'qemu-system-arm',
    [
      ...(target === 'rv32' ? ['-M', 'virt', '-bios', 'none'] : ['-M', 'mps2-an386']),
      '-semihosting-config',
      'enable=on,target=native',
      '-icount',
      'shift=0,sleep=off',
      '-kernel',
      fixtureElf(target, 'hotloop'),
      '-display',
      'none',
      '-serial',
      'null',
      '-qmp',
      `unix:${sock},server=on,wait=off`,
    ],
    { stdio: 'ignore' },
  );
  const exited = new Promise<void>((r) => qemu.once('exit', () => r()));
  let qmp: QmpMonitor | undefined;
  try {
    // The socket file appears at bind(), a moment before QEMU listens on it.
    for (let i = 0; i < 200 && !qmp; i++) {
      await new Promise((r) => setTimeout(r, 100));
      if (existsSync(sock)) qmp = await QmpMonitor.connect(sock, 20_000).catch(() => undefined);
    }
    assert.ok(qmp, 'QEMU opened no QMP socket within 20 s');
    await fn(qmp!);
  } finally {
    qmp?.close();
    qemu.kill();
    await exited;
    rmSync(dir, { recursive: true, force: true });
  }
}

for (const target of ['rv32', 'cortex-m4'] as FixtureTarget[]) {
  const family = target === 'rv32' ? 'riscv' : 'cortex-m';
  describe(`QMP PC reads on ${target}`, () => {
    it('answers pipelined commands in order, skipping the events between them', async () => {
      await withQemu(target, async (qmp) => {
        // Four commands written before any answer: each reply must reach its own command.
        const [regs1, status1, stopped, regs2, status2] = await Promise.all([
          qmp.human('info registers'),
          qmp.execute('query-status'),
          qmp.execute('stop'), // emits a STOP event before its reply
          qmp.human('info registers'),
          qmp.execute('query-status'),
        ]);
        assert.ok(pcFromMonitorRegisters(family, regs1) !== undefined, regs1.slice(0, 200));
        assert.equal((status1 as { running: boolean }).running, true);
        assert.deepEqual(stopped, {});
        assert.ok(pcFromMonitorRegisters(family, regs2) !== undefined, regs2.slice(0, 200));
        assert.equal((status2 as { running: boolean }).running, false);
        // Halted, the PC no longer moves: two reads agree.
        assert.equal(
          pcFromMonitorRegisters(family, await qmp.human('info registers')),
          pcFromMonitorRegisters(family, regs2),
        );
        assert.equal(qmp.inFlight, 0);
        await assert.rejects(qmp.execute('no-such-command'), /CommandNotFound/);
      });
    });

    it('reads PCs of the running program, many distinct ones, inside its functions', async () => {
      const image = ElfImage.loadSync(fixtureElf(target, 'hotloop'));
      await withQemu(target, async (qmp) => {
        // Past QEMU's reset code, which no function of the program covers.
        await new Promise((r) => setTimeout(r, 1_000));
        const pcs: number[] = [];
        for (let i = 0; i < 200; i++) {
          const pc = pcFromMonitorRegisters(family, await qmp.human('info registers'));
          assert.ok(pc !== undefined);
          pcs.push(pc);
          // The guest runs on between reads (a pause, not a measurement: nothing here depends on its length).
          await new Promise((r) => setTimeout(r, 2));
        }
        // While QEMU completes a Cortex-M exception return, R15 holds the EXC_RETURN token
        // (0xfffffff8): no code address, and the samplers count such reads apart
        // (ArchSampling.isReturnToken). The others lie inside the program's sized functions, but for
        // the odd read in code no sized symbol covers (vector-table stubs, start-up assembly).
        const isReturnToken = archPlugin(family).sampling.isReturnToken ?? ((): boolean => false);
        const code = pcs.filter((pc) => !isReturnToken(pc));
        assert.ok(
          code.length >= pcs.length / 2,
          `${pcs.length - code.length} of ${pcs.length} reads were exception returns`,
        );
        const outside = code.filter((pc) => image.functionContaining(pc) === undefined);
        assert.ok(
          outside.length <= code.length / 20,
          `outside every function: ${outside.map((pc) => `0x${pc.toString(16)}`).join(', ')}`,
        );
        // The guest ran between reads: a hot loop of many blocks gives many different PCs.
        assert.ok(new Set(pcs).size >= 5, `${new Set(pcs).size} distinct PCs`);
      });
    });
  });
}
