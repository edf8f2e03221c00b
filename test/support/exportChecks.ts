import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import type { ExportFormatId } from '../../core/export/formats';
import { importCsv } from '../../core/import/csv';
import { importFolded } from '../../core/import/folded';
import { importGmon } from '../../core/import/gmon';
import { NOT_MEASURED, profileStacks } from '../../core/profile/callTree';
import { loadProfile } from '../../core/profile/json';
import { functionsByName, type Profile } from '../../core/profile/model';
import {
  callgrindAnnotate,
  dotToSvg,
  elfFunctionSymbols,
  gprofFlat,
  pprofTop,
  speedscopeSchemaErrors,
} from './profileConsumers';

/**
 * Every export of one profile, read by its real consumer and compared with the profile model it was
 * written from: the command line's `--export` and the editor's Export Profile… are checked alike.
 * Split callees make fractional shares, so integer formats may differ from the model by rounding:
 * at most one count per stack a function is on.
 */
export interface ExportedFiles {
  model: Profile;
  /** Where the export of each format was written. */
  file(id: ExportFormatId): string;
}

/** Each function's value on top of the derived stacks (self) and on them (inclusive). */
export interface StackFigures {
  top: Map<string, number>;
  on: Map<string, number>;
  /** How many stacks each function is on: the rounding an integer format may add. */
  slack: Map<string, number>;
  note: string;
  /** What all stacks add up to. */
  stacksTotal: number;
}

export function stackFigures(model: Profile): StackFigures {
  const tree = profileStacks(model);
  const top = new Map<string, number>();
  const on = new Map<string, number>();
  const slack = new Map<string, number>();
  let stacksTotal = 0;
  for (const s of tree.stacks) {
    stacksTotal += s.value;
    const name = tree.functions[s.frames[s.frames.length - 1]!]!.name;
    top.set(name, (top.get(name) ?? 0) + s.value);
    for (const id of new Set(s.frames)) {
      const n = tree.functions[id]!.name;
      on.set(n, (on.get(n) ?? 0) + s.value);
      slack.set(n, (slack.get(n) ?? 0) + 1);
    }
  }
  return { top, on, slack, note: tree.note ?? '', stacksTotal };
}

function near(fig: StackFigures, actual: number | undefined, wanted: number, name: string, what: string): void {
  const allowed = (fig.slack.get(name) ?? 0) + 1;
  assert.ok(
    actual !== undefined && Math.abs(actual - wanted) <= allowed,
    `${name} ${what}: ${actual} vs the model's ${wanted} (±${allowed})`,
  );
}

/** callgrind_annotate's and `go tool pprof -top`'s per-function totals against the model's. */
export function checkCallgrindAndPprof(x: ExportedFiles, fig: StackFigures): void {
  const { model } = x;
  const annotated = callgrindAnnotate(x.file('callgrind'));
  const pprof = pprofTop(x.file('pprof'));
  // The tree keeps each measured inclusive value, but for the functions its note names as not all
  // placed (part ran from callers without a value, or did not fit in its callers'): never more.
  const unplaced =
    /and is not on their stacks: (.*?)(?: and \d+ more)?\.(?: |$)/.exec(fig.note)?.[1]?.split(', ') ?? [];
  for (const f of model.functions) {
    if (!f.inclusive) continue;
    const on = fig.on.get(f.name) ?? 0;
    const slack = (fig.slack.get(f.name) ?? 0) + 1;
    if (unplaced.length === 0) near(fig, on, f.inclusive.value, f.name, 'the tree keeps the measured inclusive');
    else
      assert.ok(
        on <= f.inclusive.value + slack,
        `${f.name}: the tree holds ${on}, above its measured ${f.inclusive.value}`,
      );
  }
  // Every stack adds up to the run's total, and no frame's own value goes beyond what is measured.
  if (model.total) {
    const sum = fig.stacksTotal;
    assert.ok(
      Math.abs(sum - model.total.value) <= 1e-6 * model.total.value + 1,
      `stacks sum ${sum}, total ${model.total.value}`,
    );
  }
  for (const f of model.functions) {
    const top = fig.top.get(f.name) ?? 0;
    if (top <= 1 || !f.inclusive) continue;
    if (f.self) near(fig, top, f.self.value, f.name, 'own value on the stacks is the measured self');
    else
      assert.ok(
        !f.indirectCalls &&
          model.edges.every((e) => e.caller !== f.id || e.callee === f.id || model.functions[e.callee]!.inclusive),
        `${f.name} has ${top} of own time on the stacks, but calls what was not measured`,
      );
  }
  assert.ok(fig.on.size >= 3, 'the model has stacks to compare');
  for (const [name, value] of fig.on) {
    near(fig, annotated.inclusive.get(name), value, name, 'callgrind inclusive');
    near(fig, annotated.self.get(name) ?? 0, fig.top.get(name) ?? 0, name, 'callgrind self');
    near(fig, pprof.get(name)?.cum, value, name, 'pprof cum');
    near(fig, pprof.get(name)?.flat ?? 0, fig.top.get(name) ?? 0, name, 'pprof flat');
  }
}

/**
 * The target's gprof against the ELF prints the model's self values and call counts; the importer reads
 * the file back.
 */
export function checkGprof(x: ExportedFiles, fig: StackFigures, elf: string, toolPrefix: string): void {
  const { model } = x;
  const flat = gprofFlat(`${toolPrefix}gprof`, elf, x.file('gmon'));
  const symbols = elfFunctionSymbols(`${toolPrefix}nm`, elf);
  const back = functionsByName(importGmon(readFileSync(x.file('gmon')), { symbols }));
  let compared = 0;
  for (const [name, value] of fig.top) {
    // The `[not measured]` frame has no address for a histogram bin: checked against the total below.
    if (name === NOT_MEASURED || Math.round(value) === 0) continue;
    near(fig, flat.get(name)?.self, value, name, 'gprof self');
    near(fig, back.get(name)?.self?.value, value, name, 'gmon import self');
    compared++;
  }
  assert.ok(compared >= 3);
  // gmon.out leaves the unattributed time out: what gprof and the importer hold, plus the model's
  // `[not measured]` value, is the run's total. Each function's bins are its rounded self (±0.5).
  const unattributed = fig.top.get(NOT_MEASURED) ?? 0;
  const runTotal = model.total?.value ?? fig.stacksTotal;
  const allowed = fig.top.size + 1;
  assert.ok(!flat.has(NOT_MEASURED) && !back.has(NOT_MEASURED), 'gmon.out holds no frame without an address');
  for (const [what, held] of [
    ['gprof', [...flat.values()].reduce((sum, r) => sum + r.self, 0)],
    ['the gmon import', [...back.values()].reduce((sum, f) => sum + (f.self?.value ?? 0), 0)],
  ] as const)
    assert.ok(
      Math.abs(held + unattributed - runTotal) <= allowed,
      `${what} holds ${held}, and with the ${unattributed} not measured that is not the run's ` +
        `${runTotal} (±${allowed})`,
    );
  const byName = functionsByName(model);
  for (const [name, row] of flat) {
    const calls = byName.get(name)?.calls;
    if (
      row.calls !== undefined &&
      calls !== undefined &&
      model.edges.some((e) => model.functions[e.callee]!.name === name)
    )
      assert.equal(row.calls, calls, `${name} calls`);
  }
}

/** speedscope's schema, the folded and CSV importers, the .cpuprofile's nodes, `dot -Tsvg` and the JSON loader. */
export async function checkReadBack(x: ExportedFiles, fig: StackFigures, drawnFunction: string): Promise<void> {
  const { model } = x;
  assert.deepEqual(speedscopeSchemaErrors(JSON.parse(readFileSync(x.file('speedscope'), 'utf8'))), []);
  const folded = functionsByName(importFolded(readFileSync(x.file('folded'), 'utf8')));
  for (const [name, value] of fig.on) near(fig, folded.get(name)?.inclusive?.value, value, name, 'folded inclusive');
  const cpu = JSON.parse(readFileSync(x.file('cpuprofile'), 'utf8')) as {
    nodes: { callFrame: { functionName: string } }[];
    samples: number[];
  };
  for (const name of fig.top.keys())
    assert.ok(
      cpu.nodes.some((n) => n.callFrame.functionName === name),
      `${name} in the .cpuprofile`,
    );
  const csv = importCsv(readFileSync(x.file('csv'), 'utf8'), { linesText: readFileSync(x.file('csv-lines'), 'utf8') });
  assert.deepEqual(
    csv.functions.map((f) => [f.name, f.inclusive?.value, f.calls, f.status]),
    model.functions.map((f) => [f.name, f.inclusive?.value, f.calls, f.status]),
  );
  assert.match(dotToSvg(x.file('dot')), new RegExp(drawnFunction));
  const saved = await loadProfile(x.file('json'));
  assert.deepEqual({ ...saved, createdAt: '' }, { ...model, createdAt: '' });
}
