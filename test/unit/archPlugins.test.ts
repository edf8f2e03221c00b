import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { TargetFamily } from '../../common/launchArgs';
import { isUnsupported } from '../../adapter/arch/archPlugin';
import { archFamilies, archPlugin, isTargetFamily } from '../../adapter/arch/registry';
import { memoryKindAt } from '../../adapter/probe/injection/memoryMap';
import { FakeTargetAccess } from '../support/fakeTargetAccess';

/** Every family the launch arguments declare: the registry must answer each. */
const declared: Record<TargetFamily, true> = { 'cortex-m': true, riscv: true, arc: true };

describe('arch plugin registry', () => {
  test('every declared family resolves to its own plugin, and nothing else does', () => {
    assert.deepEqual([...archFamilies].sort(), Object.keys(declared).sort());
    for (const family of archFamilies) assert.equal(archPlugin(family).family, family);
    assert.equal(isTargetFamily('riscv'), true);
    assert.equal(isTargetFamily('mips'), false);
    assert.equal(isTargetFamily('toString'), false);
    assert.equal(isTargetFamily(undefined), false);
  });

  for (const family of Object.keys(declared) as TargetFamily[]) {
    test(`${family}: the plugin fills the contract`, () => {
      const p = archPlugin(family);
      assert.ok(p.displayName.length > 0);
      assert.ok(p.traits.coreRegisters.has('pc'), 'the PC is a core register');
      assert.ok(p.traits.maxInstructionLength >= p.traits.instructionAlignment);
      assert.ok(
        p.traits.coreRegisters.has(p.abi.returnAddressRegister),
        `return address register ${p.abi.returnAddressRegister} is a core register`,
      );
      assert.ok(p.abi.returnHooks.length > 0);
      assert.equal(typeof p.codec.decode, 'function');
      assert.equal(typeof p.relocator.relocate, 'function');
      assert.ok(p.defaultGdb.length > 0);
      // Building units must not touch the target (discovery does that later).
      const units = p.createCounterUnits(new FakeTargetAccess(), { stepInstruction: async () => undefined });
      assert.ok(units.length > 0);
      for (const u of units) assert.equal(u.info().present, false);
      for (const part of [p.injection, p.callGraph, p.qemu, p.lldb]) {
        if (isUnsupported(part)) assert.match(part.unsupported, /\w+.*\w/, 'an unsupported part says why');
      }
      if (!isUnsupported(p.injection)) {
        const arch = p.injection.arch();
        assert.equal(arch.family, family);
        assert.equal(p.abi.freeAtEntry, arch.freeAtEntry, 'one source for the free registers');
        assert.ok(p.traits.coreRegisters.has(p.abi.threadPointerRegister ?? 'pc'));
        assert.equal(arch.threadPointer !== undefined, p.abi.threadPointerRegister !== undefined);
        assert.ok(!isUnsupported(p.callGraph), 'a family with injection has a static disassembly');
      }
      if (!isUnsupported(p.qemu)) {
        assert.ok(p.qemu.machines[p.qemu.defaultMachine], 'the default machine has known facts');
        assert.ok(p.qemu.binary.startsWith('qemu-system-') && p.qemu.debianPackage.startsWith('qemu-system-'));
        assert.ok(p.sampling.monitorPc, 'QEMU targets can be sampled through the monitor');
      }
      if (!isUnsupported(p.lldb)) assert.match(p.lldb.triple, /^[a-z0-9_]+-[a-z]+-/);
    });
  }

  test(
    'facts per family: Cortex-M default map is flash below 0x20000000, RISC-V interrupted PC is ' +
      'mepc, ARC has no QEMU',
    () => {
      assert.equal(memoryKindAt(undefined, 0x1000, 4, 'cortex-m'), 'flash');
      assert.equal(memoryKindAt(undefined, 0x20000000, 4, 'cortex-m'), 'unknown');
      assert.equal(memoryKindAt(undefined, 0x1000, 4, 'riscv'), 'unknown');
      assert.equal(archPlugin('riscv').abi.interruptedPcRegister, 'mepc');
      assert.equal(archPlugin('cortex-m').abi.interruptedPcRegister, undefined);
      assert.ok(isUnsupported(archPlugin('arc').qemu));
      assert.ok(isUnsupported(archPlugin('arc').injection));
      const rvLldb = archPlugin('riscv').lldb;
      assert.ok(
        isUnsupported(rvLldb) && /use `"debugger": "gdb"`/.test(rvLldb.unsupported),
        'LLDB on RISC-V is refused with the fix',
      );
      const cmLldb = archPlugin('cortex-m').lldb;
      assert.ok(!isUnsupported(cmLldb) && cmLldb.triple === 'armv7em-none-eabi');
    },
  );
});
