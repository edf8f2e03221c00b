import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { thumbInjectionArch } from '../../adapter/arch/cortex-m/trampolineThumb';
import { ElfImage } from '../../adapter/elf';
import { ProgramModel } from '../../adapter/probe/injection/programModel';
import { fixturesDir } from '../support/paths';

/**
 * Functions as real toolchains leave them in the symbol table (newlib on Cortex-M4): assembly with
 * no `.size`, and static functions of two files with one name. Both must be functions the injector
 * can find, or descent cannot measure them.
 */
const ELF = join(fixturesDir, 'build', 'cortex-m4', 'programs', 'crc32.elf');
const skip = existsSync(ELF) ? false : 'cortex-m4 programs not built (make -C test/fixtures)';

describe('the program model on newlib symbols', { skip }, () => {
  const elf = existsSync(ELF) ? ElfImage.loadSync(ELF) : undefined;
  const model = elf ? new ProgramModel(elf, thumbInjectionArch()) : undefined;

  it('an assembly function with no size runs to the next function', () => {
    const sym = elf!.symbols.functionNamed('memchr')!;
    assert.equal(sym.size, 0, 'newlib leaves memchr unsized');
    const fn = model!.functionNamed('memchr');
    assert.ok(fn, 'memchr is a function of the model');
    const next = elf!.symbols.functions.find((s) => s.sectionIndex === sym.sectionIndex && s.address > sym.address)!;
    assert.equal(fn.start, sym.address);
    assert.equal(fn.end, next.address);
    assert.ok(fn.instructions.length > 4, `memchr decodes (${fn.instructions.length} instructions)`);
    assert.ok(
      fn.instructions.some((i) => i.kind === 'return'),
      'and has its return',
    );
  });

  it('no unsized label inside another function becomes a function of its own', () => {
    // (Sized symbols may overlap: newlib's Arm strcmp claims 8 bytes of the next function.)
    const unsized = model!.functions.filter((fn) => elf!.symbols.aliasesAt(fn.start).every((a) => a.size === 0));
    assert.ok(unsized.length >= 1);
    for (const fn of unsized) {
      const owner = model!.functions.find((o) => o !== fn && o.start < fn.start && fn.start < o.end);
      assert.equal(owner, undefined, `${fn.name} at 0x${fn.start.toString(16)} lies inside ${owner?.name}`);
    }
  });

  it('name@0xADDRESS names the static function that starts there', () => {
    const statics = elf!.symbols.named('__sbprintf').filter((s) => s.kind === 'function');
    assert.equal(statics.length, 2, 'two files define a static __sbprintf');
    for (const s of statics)
      assert.equal(model!.functionNamed(`__sbprintf@0x${s.address.toString(16)}`)?.start, s.address);
    assert.equal(model!.functionNamed('__sbprintf@0x4'), undefined, 'an address where no such function starts');
    assert.equal(
      model!.functionNamed(`memchr@0x${statics[0]!.address.toString(16)}`),
      undefined,
      'a name that is not the one there',
    );
  });
});
