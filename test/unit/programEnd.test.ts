import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { thumbInjectionArch } from '../../adapter/arch/cortex-m/trampolineThumb';
import { ElfImage } from '../../adapter/elf';
import { programModelFor } from '../../adapter/probe/callGraph';
import { InjectionPlanner } from '../../adapter/probe/injection/planner';
import { ProgramModel } from '../../adapter/probe/injection/programModel';
import { findProgramEnd, noProgramEndMessage } from '../../adapter/probe/programEnd';
import { readElfText, thumbToolchain } from '../support/gnuTools';
import { fixtureElf, fixturesDir } from '../support/paths';

/**
 * The end of a single-pass program, found in its code, checked against what objdump shows of the
 * same ELF: the fixture's main ends with `bl board_exit` (a semihosting exit that never returns);
 * the newlib program `sorting` returns from main to a start-up that calls exit(main()).
 */
const singlepass = fixtureElf('cortex-m4', 'singlepass');
const sorting = join(fixturesDir, 'build', 'cortex-m4', 'programs', 'sorting.elf');
const built = existsSync(singlepass) && existsSync(sorting);

describe(
  'program end found in the code',
  { skip: built ? false : 'fixtures not built (make -C test/fixtures)' },
  () => {
    it("main's last instruction calls a function that does not return: the run ends at its entry", () => {
      const model = programModelFor(ElfImage.loadSync(singlepass));
      const end = findProgramEnd(model);
      assert.deepEqual(end?.location, { function: 'board_exit' });
      assert.match(end!.how, /main's last instruction calls board_exit/);
      const main = model.functionNamed('main')!;
      const lines = readElfText(thumbToolchain(), singlepass).lines.filter(
        (l) => l.address >= main.start && l.address < main.end && !l.isData && l.mnemonic !== 'nop',
      );
      assert.match(lines.at(-1)!.text, /bl\s+[0-9a-f]+ <board_exit>/);
    });

    it('main returns: the run ends after the one call of main in the start-up code', () => {
      const end = findProgramEnd(programModelFor(ElfImage.loadSync(sorting)));
      assert.ok(end && 'address' in end.location, JSON.stringify(end));
      const at = Number(end.location.address);
      const lines = readElfText(thumbToolchain(), sorting).lines;
      const call = lines.find((l) => l.mnemonic === 'bl' && /<main>/.test(l.text));
      assert.ok(call, 'objdump shows the call of main');
      assert.equal(at, call.address + 4, 'the instruction after `bl main`');
      assert.match(end.how, /where main returns to Reset_Handler/);
    });

    it('nothing found: the message names programEnd and gives an example', () => {
      assert.equal(findProgramEnd({ functions: [] }), undefined);
      assert.match(
        noProgramEndMessage('/fw/app.elf'),
        /set `programEnd` in the launch configuration.*"programEnd": "halt"/i,
      );
    });

    it(
      "an indirect call reaches only functions whose address the program holds: newlib's locks " +
        'are called directly only',
      () => {
        const elf = ElfImage.loadSync(sorting);
        const model = new ProgramModel(elf, thumbInjectionArch());
        const planner = new InjectionPlanner(model, thumbInjectionArch(), { start: 0x00100000, size: 4096 });
        const direct = planner.planCallSites('__malloc_lock');
        assert.ok(direct.ok, JSON.stringify(direct));
        assert.deepEqual(
          direct.warnings.filter((w) => w.code === 'indirectCallsMissed'),
          [],
          'nothing holds the address of __malloc_lock',
        );
      },
    );
  },
);
