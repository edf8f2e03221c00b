import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { EXPORT_FORMATS, exportFormat } from '../../core/export/formats';
import { importCallgrind } from '../../core/import/callgrind';
import { importCsv } from '../../core/import/csv';
import { importFolded } from '../../core/import/folded';
import { importGmon } from '../../core/import/gmon';
import { functionsByName, type Profile } from '../../core/profile/model';
import {
  callgrindAnnotate,
  dotToSvg,
  elfFunctionSymbols,
  gprofFlat,
  pprofTop,
  pprofTraces,
  speedscopeSchemaErrors,
} from '../support/profileConsumers';
import { fixtureElf } from '../support/paths';
import { expected, sampleAddresses, sampleProfile, type SampleName } from '../support/sampleProfiles';

/**
 * Every export format, read by the program that consumes it (callgrind_annotate, go tool pprof,
 * speedscope's schema, gprof against the fixture ELF, Graphviz) or by the project's importer, and
 * compared with the figures worked out by hand for the sample profile.
 */
const dir = mkdtempSync(join(tmpdir(), 'cyclelens-export-'));
after(() => rmSync(dir, { recursive: true, force: true }));

function write(id: string, p: Profile = sampleProfile()): string {
  const format = exportFormat(id)!;
  const path = join(dir, `sample${format.extension}`);
  writeFileSync(path, format.write(p));
  return path;
}

const names = Object.keys(expected.inclusive) as SampleName[];

describe('profile exports read by their consumers', () => {
  it('the registry lists every format once, each with an extension and the tools that open it', () => {
    const ids = EXPORT_FORMATS.map((f) => f.id);
    assert.deepEqual([...new Set(ids)], ids);
    assert.deepEqual(ids.sort(), [
      'callgrind',
      'cpuprofile',
      'csv',
      'csv-lines',
      'dot',
      'folded',
      'gmon',
      'json',
      'pprof',
      'speedscope',
    ]);
    for (const f of EXPORT_FORMATS) assert.ok(f.extension.startsWith('.') && f.opensIn.length > 5, f.id);
  });

  it('callgrind: callgrind_annotate prints the model’s self and inclusive totals per function', () => {
    const file = write('callgrind');
    const annotated = callgrindAnnotate(file);
    assert.equal(annotated.total, 10_000);
    for (const n of names) {
      assert.equal(annotated.self.get(n), expected.self[n], `${n} self`);
      assert.equal(annotated.inclusive.get(n), expected.inclusive[n], `${n} inclusive`);
    }
    const text = readFileSync(file, 'utf8');
    assert.match(text, /^events: instructions$/m);
    // Per-line data becomes line positions, and the importer reads them back.
    const back = importCallgrind(text, { file });
    assert.deepEqual(
      back.lines
        .filter((l) => l.path === '/fw/fir_filter.c' && l.line >= 20)
        .map((l) => [l.line, l.self.value])
        .sort(),
      [
        [20, 3_000],
        [21, 2_000],
      ],
    );
    const f = functionsByName(back);
    for (const n of names) assert.equal(f.get(n)?.inclusive?.value, expected.inclusive[n], `${n} inclusive read back`);
    for (const [n, c] of Object.entries(expected.calls)) assert.equal(f.get(n)?.calls, c, `${n} calls read back`);
  });

  it('callgrind: SysTick ticks are named ticks, never cycles', () => {
    const p = sampleProfile();
    p.unit = { kind: 'ticks', perTick: { count: 40, kind: 'instructions' } };
    const text = exportFormat('callgrind')!.write(p) as string;
    assert.match(text, /^events: systick_ticks$/m);
    assert.match(text, /^event: systick_ticks : SysTick ticks \(×40 instructions\)$/m);
    assert.doesNotMatch(text, /cycles/);
  });

  it('pprof: go tool pprof -top prints the model’s flat (self) and cum (inclusive) per function', () => {
    const file = write('pprof');
    assert.deepEqual([...readFileSync(file).subarray(0, 2)], [0x1f, 0x8b], 'gzipped');
    const top = pprofTop(file);
    for (const n of names) assert.deepEqual(top.get(n), { flat: expected.self[n], cum: expected.inclusive[n] }, n);
    // The stacks carry the call tree, the shared callee under both callers.
    const traces = pprofTraces(file);
    assert.match(traces, /Type: instructions/);
    assert.match(traces, /50\s+crc16_block\s+histogram_fill\s+main/);
    assert.match(traces, /50\s+crc16_block\s+main/);
  });

  it('speedscope: valid against the schema the speedscope package ships; both profiles add up to the total', () => {
    const json = JSON.parse(readFileSync(write('speedscope'), 'utf8')) as {
      profiles: {
        type: string;
        unit: string;
        weights?: number[];
        events?: { type: string; at: number }[];
        endValue: number;
      }[];
      name: string;
    };
    assert.deepEqual(speedscopeSchemaErrors(json), []);
    const [sampled, evented] = json.profiles;
    assert.equal(sampled?.unit, 'none');
    assert.match(json.name, /instructions/);
    assert.equal(
      sampled?.weights?.reduce((s, v) => s + v, 0),
      10_000,
    );
    assert.equal(evented?.endValue, 10_000);
    assert.equal(
      evented?.events?.filter((e) => e.type === 'O').length,
      evented?.events?.filter((e) => e.type === 'C').length,
    );
    assert.equal(Math.max(...(evented?.events ?? []).map((e) => e.at)), 10_000);
    // A schema check that cannot fail would prove nothing: a broken file is refused.
    assert.notDeepEqual(speedscopeSchemaErrors({ ...json, profiles: [{ type: 'sampled' }] }), []);
  });

  it('folded stacks: read back by the importer with the same self and inclusive per function', () => {
    const text = readFileSync(write('folded'), 'utf8');
    assert.match(text, /^main;histogram_fill;fir_filter 5000$/m);
    const back = functionsByName(importFolded(text, { unit: { kind: 'instructions' } }));
    for (const n of names) {
      assert.equal(back.get(n)?.self?.value, expected.self[n], `${n} self`);
      assert.equal(back.get(n)?.inclusive?.value, expected.inclusive[n], `${n} inclusive`);
    }
  });

  it('folded stacks keep spaces and brackets in a name; only `;` and line breaks are replaced', () => {
    const p = sampleProfile();
    const renamed: Partial<Record<SampleName, string>> = {
      fir_filter: 'operator new(unsigned int)',
      histogram_fill: 'fill;step\n[cold]',
    };
    for (const f of p.functions) f.name = renamed[f.name as SampleName] ?? f.name;
    const text = readFileSync(write('folded', p), 'utf8');
    assert.match(text, /^main;fill_step_\[cold\];operator new\(unsigned int\) 5000$/m);
    const back = functionsByName(importFolded(text, { unit: { kind: 'instructions' } }));
    for (const n of names) {
      const name = (renamed[n] ?? n).replace(/[;\n]/g, '_');
      assert.equal(back.get(name)?.self?.value, expected.self[n], `${name} self`);
      assert.equal(back.get(name)?.inclusive?.value, expected.inclusive[n], `${name} inclusive`);
    }
  });

  it('Chrome .cpuprofile: each function’s sample durations add up to its self value', () => {
    const doc = JSON.parse(readFileSync(write('cpuprofile'), 'utf8')) as {
      nodes: { id: number; callFrame: { functionName: string }; children: number[] }[];
      samples: number[];
      timeDeltas: number[];
      endTime: number;
      startTime: number;
    };
    const byId = new Map(doc.nodes.map((n) => [n.id, n]));
    const self = new Map<string, number>();
    const times = doc.timeDeltas.map((_, i) => doc.timeDeltas.slice(0, i + 1).reduce((s, v) => s + v, 0));
    doc.samples.forEach((id, i) => {
      const duration = (i + 1 < times.length ? times[i + 1]! : doc.endTime) - times[i]!;
      const name = byId.get(id)!.callFrame.functionName;
      self.set(name, (self.get(name) ?? 0) + duration);
    });
    for (const n of names) assert.equal(self.get(n), expected.self[n], n);
    for (const n of doc.nodes) for (const c of n.children) assert.ok(byId.has(c));
  });

  for (const target of ['rv32', 'cortex-m4'] as const) {
    it(
      `gmon.out: ${target} gprof prints the model’s self values and call counts against the ` +
        `fixture ELF, and the importer reads it back`,
      () => {
        const elf = fixtureElf(target, 'singlepass');
        const prefix = target === 'rv32' ? 'riscv64-unknown-elf-' : 'arm-none-eabi-';
        const symbols = elfFunctionSymbols(`${prefix}nm`, elf);
        const at = sampleAddresses(symbols);
        const file = join(dir, `${target}.gmon.out`);
        writeFileSync(file, exportFormat('gmon')!.write(sampleProfile(at, elf)));
        const flat = gprofFlat(`${prefix}gprof`, elf, file);
        for (const n of names) assert.equal(flat.get(n)?.self, expected.self[n], `${n} self`);
        for (const [n, c] of Object.entries(expected.calls)) assert.equal(flat.get(n)?.calls, c, `${n} calls`);
        const back = functionsByName(importGmon(readFileSync(file), { symbols, file }));
        for (const n of names) {
          assert.equal(back.get(n)?.self?.value, expected.self[n], `${n} self read back`);
          assert.equal(back.get(n)?.inclusive?.value, expected.inclusive[n], `${n} inclusive read back`);
        }
        for (const [n, c] of Object.entries(expected.calls))
          assert.equal(back.get(n)?.calls, c, `${n} calls read back`);
        assert.equal(back.get('main')?.address, at.main.address);
      },
    );
  }

  it('gmon.out: a self value above a 16-bit bin is written as several records that gprof adds up', () => {
    const elf = fixtureElf('rv32', 'singlepass');
    const symbols = elfFunctionSymbols('riscv64-unknown-elf-nm', elf);
    const p = sampleProfile(sampleAddresses(symbols), elf);
    for (const f of p.functions) {
      f.inclusive = { value: f.inclusive!.value * 100 };
      if (f.self) f.self = { value: f.self.value * 100 };
    }
    const file = join(dir, 'large.gmon.out');
    writeFileSync(file, exportFormat('gmon')!.write(p));
    const flat = gprofFlat('riscv64-unknown-elf-gprof', elf, file);
    for (const n of names) assert.equal(flat.get(n)?.self, expected.self[n] * 100, n);
  });

  it('DOT: dot -Tsvg renders the annotated graph', () => {
    const svg = dotToSvg(write('dot'));
    for (const n of names) assert.match(svg, new RegExp(n));
    assert.match(svg, /50×/);
  });

  it('CSV: both tables read back with the same figures', () => {
    const p = sampleProfile();
    p.functions[2]!.inclusive = { value: 5_000, bound: { low: 4_990, high: 5_010, kind: 'quantisation' } };
    p.functions[1]!.name = 'odd, "quoted" name';
    const back = importCsv(exportFormat('csv')!.write(p) as string, {
      linesText: exportFormat('csv-lines')!.write(p) as string,
    });
    assert.deepEqual(
      back.functions.map((f) => [f.name, f.inclusive, f.self?.value, f.calls, f.location, f.status]),
      p.functions.map((f) => [f.name, f.inclusive, f.self?.value, f.calls, f.location, f.status]),
    );
    assert.deepEqual(
      back.lines.map((l) => [l.path, l.line, l.self.value, l.function]),
      p.lines.map((l) => [l.path, l.line, l.self.value, l.function]),
    );
    assert.equal(back.unit.kind, 'instructions');
  });
});
