import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { loadResultSetDocument } from '../../core/analysis/resultSet';
import { EXPORT_FORMATS } from '../../core/export/formats';
import { importCsv } from '../../core/import/csv';
import { importFolded } from '../../core/import/folded';
import { importGmon } from '../../core/import/gmon';
import { calleeShares, profileStacks } from '../../core/profile/callTree';
import { profileFromResultSets } from '../../core/profile/fromResultSet';
import { loadProfile } from '../../core/profile/json';
import { functionsByName, type Profile } from '../../core/profile/model';
import { OWNER_TAG_VAR, newOwnerTag, waitForNoTaggedProcesses } from '../support/ownedProcesses';
import { fixtureElf, repoRoot, type FixtureTarget } from '../support/paths';
import { callgrindAnnotate, dotToSvg, elfFunctionSymbols, gprofFlat, pprofTop, speedscopeSchemaErrors } from '../support/profileConsumers';

/**
 * A real call-graph descent through the `cyclelens` command line on both QEMU targets, with
 * `--export` of every format; each file is then read by its consumer and compared with the profile
 * model built from the same run's result sets. Split callees make fractional shares, so integer
 * formats may differ from the model by rounding: at most one count per stack a function is on.
 */
for (const target of ['rv32', 'cortex-m4'] as FixtureTarget[]) {
  describe(`cyclelens descent --export on QEMU ${target}`, () => {
    const dir = mkdtempSync(join(tmpdir(), `cyclelens-export-${target}-`));
    const tag = newOwnerTag();
    const elf = fixtureElf(target, 'singlepass');
    const prefix = target === 'rv32' ? 'riscv64-unknown-elf-' : 'arm-none-eabi-';
    const file = (id: string): string => join(dir, 'out', `descent${EXPORT_FORMATS.find((f) => f.id === id)!.extension}`);
    let model: Profile;
    let top: Map<string, number>;
    let on: Map<string, number>;
    let slack: Map<string, number>;
    let note = '';

    before(() => {
      mkdirSync(join(dir, '.vscode'));
      mkdirSync(join(dir, 'out'));
      writeFileSync(
        join(dir, '.vscode', 'launch.json'),
        JSON.stringify({ version: '0.2.0', configurations: [{ type: 'cyclelens', request: 'launch', name: 'fixture', executable: elf, server: { type: 'qemu', machine: target === 'rv32' ? 'virt' : 'mps2-an386' }, stopAtEntry: 'main', programEnd: 'program_end' }] }),
      );
    });

    after(async () => {
      assert.deepEqual(await waitForNoTaggedProcesses(tag), [], 'the CLI leaves no QEMU or GDB behind');
      rmSync(dir, { recursive: true, force: true });
    });

    it('writes every format from one descent', async () => {
      const exports = EXPORT_FORMATS.flatMap((f) => ['--export', `${f.id}:${file(f.id)}`]);
      const r = spawnSync(process.execPath, [join(repoRoot, 'dist', 'cli.js'), 'descent', '--config', '.vscode/launch.json', '--name', 'fixture', '--threshold', '5%', '--out', join(dir, 'descent.json'), ...exports], {
        cwd: dir,
        encoding: 'utf8',
        timeout: 240_000,
        env: { ...process.env, [OWNER_TAG_VAR]: tag },
      });
      assert.equal(r.status, 0, r.stderr);
      for (const f of EXPORT_FORMATS) assert.match(r.stderr, new RegExp(`${f.label.replace(/[().]/g, '.')} written to `), f.id);
      model = profileFromResultSets(await loadResultSetDocument(join(dir, 'descent.json')), { generator: 'cyclelens-cli' });
      assert.ok(model.functions.filter((f) => f.inclusive).length >= 5, 'the descent measured functions');
      const tree = profileStacks(model);
      note = tree.note ?? '';
      top = new Map();
      on = new Map();
      slack = new Map();
      for (const s of tree.stacks) {
        const name = model.functions[s.frames[s.frames.length - 1]!]!.name;
        top.set(name, (top.get(name) ?? 0) + s.value);
        for (const id of new Set(s.frames)) {
          const n = model.functions[id]!.name;
          on.set(n, (on.get(n) ?? 0) + s.value);
          slack.set(n, (slack.get(n) ?? 0) + 1);
        }
      }
    });

    const near = (actual: number | undefined, wanted: number, name: string, what: string): void => {
      const allowed = (slack.get(name) ?? 0) + 1;
      assert.ok(actual !== undefined && Math.abs(actual - wanted) <= allowed, `${name} ${what}: ${actual} vs the model's ${wanted} (±${allowed})`);
    };

    it('callgrind_annotate and go tool pprof agree with the model per function', () => {
      const annotated = callgrindAnnotate(file('callgrind'));
      const pprof = pprofTop(file('pprof'));
      // The derived tree keeps each measured inclusive value, unless the callees' shares exceed it
      // (runs differ by where interrupts land), which its note then names.
      const shares = calleeShares(model);
      for (const f of model.functions) {
        if (!f.inclusive) continue;
        const allocated = (shares.get(f.id) ?? []).reduce((s, k) => s + model.functions[k.callee]!.inclusive!.value * k.fraction, 0);
        if (allocated <= f.inclusive.value) near(on.get(f.name) ?? 0, f.inclusive.value, f.name, 'the derived tree keeps the measured inclusive');
        else assert.match(note, new RegExp(`stacks add up to the callees' shares: .*${f.name}`));
      }
      for (const [name, value] of on) {
        near(annotated.inclusive.get(name), value, name, 'callgrind inclusive');
        near(annotated.self.get(name) ?? 0, top.get(name) ?? 0, name, 'callgrind self');
        near(pprof.get(name)?.cum, value, name, 'pprof cum');
        near(pprof.get(name)?.flat ?? 0, top.get(name) ?? 0, name, 'pprof flat');
      }
    });

    it('gprof prints the model’s self values and call counts against the ELF; the importer reads the file back', () => {
      const flat = gprofFlat(`${prefix}gprof`, elf, file('gmon'));
      const symbols = elfFunctionSymbols(`${prefix}nm`, elf);
      const back = functionsByName(importGmon(readFileSync(file('gmon')), { symbols }));
      let compared = 0;
      for (const [name, value] of top) {
        if (Math.round(value) === 0) continue;
        near(flat.get(name)?.self, value, name, 'gprof self');
        near(back.get(name)?.self?.value, value, name, 'gmon import self');
        compared++;
      }
      assert.ok(compared >= 3);
      const byName = functionsByName(model);
      for (const [name, row] of flat) {
        const calls = byName.get(name)?.calls;
        if (row.calls !== undefined && calls !== undefined && model.edges.some((e) => model.functions[e.callee]!.name === name)) assert.equal(row.calls, calls, `${name} calls`);
      }
    });

    it('speedscope, folded, cpuprofile, CSV, DOT and JSON each read back', async () => {
      assert.deepEqual(speedscopeSchemaErrors(JSON.parse(readFileSync(file('speedscope'), 'utf8'))), []);
      const folded = functionsByName(importFolded(readFileSync(file('folded'), 'utf8')));
      for (const [name, value] of on) near(folded.get(name)?.inclusive?.value, value, name, 'folded inclusive');
      const cpu = JSON.parse(readFileSync(file('cpuprofile'), 'utf8')) as { nodes: { callFrame: { functionName: string } }[]; samples: number[] };
      for (const name of top.keys()) assert.ok(cpu.nodes.some((n) => n.callFrame.functionName === name), `${name} in the .cpuprofile`);
      const csv = importCsv(readFileSync(file('csv'), 'utf8'), { linesText: readFileSync(file('csv-lines'), 'utf8') });
      assert.deepEqual(csv.functions.map((f) => [f.name, f.inclusive?.value, f.calls, f.status]), model.functions.map((f) => [f.name, f.inclusive?.value, f.calls, f.status]));
      assert.match(dotToSvg(file('dot')), /process_packet/);
      const saved = await loadProfile(file('json'));
      assert.deepEqual({ ...saved, createdAt: '' }, { ...model, createdAt: '' });
    });
  });
}
