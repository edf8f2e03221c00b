import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { loadResultSetDocument } from '../../core/analysis/resultSet';
import { EXPORT_FORMATS } from '../../core/export/formats';
import { profileFromResultSets } from '../../core/profile/fromResultSet';
import type { Profile } from '../../core/profile/model';
import { cliWorkspace } from '../support/cliWorkspace';
import {
  checkCallgrindAndPprof,
  checkGprof,
  checkReadBack,
  stackFigures,
  type ExportedFiles,
  type StackFigures,
} from '../support/exportChecks';
import { fixtureElf, type FixtureTarget } from '../support/paths';

/**
 * A real call-graph descent through the `cyclelens` command line on both QEMU targets, with
 * `--export` of every format; each file is then read by its consumer and compared with the profile
 * model built from the same run's result sets (test/support/exportChecks.ts).
 */
for (const target of ['rv32', 'cortex-m4'] as FixtureTarget[]) {
  describe(`cyclelens descent --export on QEMU ${target}`, () => {
    const elf = fixtureElf(target, 'singlepass');
    const { dir, cli, close } = cliWorkspace(
      `cyclelens-export-${target}-`,
      [
        {
          name: 'fixture',
          executable: elf,
          server: { type: 'qemu', machine: target === 'rv32' ? 'virt' : 'mps2-an386' },
          stopAtEntry: 'main',
          programEnd: 'program_end',
        },
      ],
      { timeoutMs: 240_000 },
    );
    const prefix = target === 'rv32' ? 'riscv64-unknown-elf-' : 'arm-none-eabi-';
    const file = (id: string): string =>
      join(dir, 'out', `descent${EXPORT_FORMATS.find((f) => f.id === id)!.extension}`);
    let model: Profile;
    let fig: StackFigures;
    const exported = (): ExportedFiles => ({ model, file: (id) => file(id) });

    before(() => {
      mkdirSync(join(dir, 'out'));
    });

    after(close);

    it('writes every format from one descent', async () => {
      const exports = EXPORT_FORMATS.flatMap((f) => ['--export', `${f.id}:${file(f.id)}`]);
      const r = cli(
        'descent',
        '--config',
        '.vscode/launch.json',
        '--name',
        'fixture',
        '--threshold',
        '5%',
        '--out',
        join(dir, 'descent.json'),
        ...exports,
      );
      assert.equal(r.status, 0, r.stderr);
      for (const f of EXPORT_FORMATS)
        assert.match(r.stderr, new RegExp(`${f.label.replace(/[().]/g, '.')} written to `), f.id);
      model = profileFromResultSets(await loadResultSetDocument(join(dir, 'descent.json')), {
        generator: 'cyclelens-cli',
      });
      assert.ok(model.functions.filter((f) => f.inclusive).length >= 5, 'the descent measured functions');
      fig = stackFigures(model);
    });

    it('callgrind_annotate and go tool pprof agree with the model per function', () => {
      checkCallgrindAndPprof(exported(), fig);
    });

    it(
      'gprof prints the model’s self values and call counts against the ELF; ' + 'the importer reads the file back',
      () => {
        checkGprof(exported(), fig, elf, prefix);
      },
    );

    it('speedscope, folded, cpuprofile, CSV, DOT and JSON each read back', async () => {
      await checkReadBack(exported(), fig, 'process_packet');
    });
  });
}
