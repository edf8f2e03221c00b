import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import type { ExportFormatId } from '../../core/export/formats';
import { importCsv } from '../../core/import/csv';
import { importFolded } from '../../core/import/folded';
import { importGmon } from '../../core/import/gmon';
import { calleeShares, profileStacks } from '../../core/profile/callTree';
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
}

export function stackFigures(model: Profile): StackFigures {
  const tree = profileStacks(model);
  const top = new Map<string, number>();
  const on = new Map<string, number>();
  const slack = new Map<string, number>();
  for (const s of tree.stacks) {
    const name = model.functions[s.frames[s.frames.length - 1]!]!.name;
    top.set(name, (top.get(name) ?? 0) + s.value);
    for (const id of new Set(s.frames)) {
      const n = model.functions[id]!.name;
      on.set(n, (on.get(n) ?? 0) + s.value);
      slack.set(n, (slack.get(n) ?? 0) + 1);
    }
  }
  return { top, on, slack, note: tree.note ?? '' };
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
  // The derived tree keeps each measured inclusive value, unless the callees' shares exceed it
  // (a shared callee split by calls where its calls cost differently, runs that differ by where
  // interrupts land), which its note then names. Such a function's stacks add up to its callees'
  // shares, so the functions above it carry that excess too, and no more.
  const shares = calleeShares(model);
  const overfull: string[] = [];
  const excess = new Map<number, number>();
  for (const f of model.functions) {
    if (!f.inclusive) continue;
    const allocated = (shares.get(f.id) ?? []).reduce(
      (s, k) => s + model.functions[k.callee]!.inclusive!.value * k.fraction,
      0,
    );
    if (allocated > f.inclusive.value) {
      overfull.push(f.name);
      excess.set(f.id, Math.max(0, (fig.on.get(f.name) ?? 0) - f.inclusive.value));
    }
  }
  const below = (id: number): Set<number> => {
    const seen = new Set<number>();
    const queue = [id];
    for (let i = 0; i < queue.length; i++)
      for (const k of shares.get(queue[i]!) ?? [])
        if (!seen.has(k.callee)) {
          seen.add(k.callee);
          queue.push(k.callee);
        }
    return seen;
  };
  for (const f of model.functions) {
    if (!f.inclusive || overfull.includes(f.name)) continue;
    const carried = [...below(f.id)].reduce((sum, g) => sum + (excess.get(g) ?? 0), 0);
    const on = fig.on.get(f.name) ?? 0;
    if (carried === 0) near(fig, on, f.inclusive.value, f.name, 'the derived tree keeps the measured inclusive');
    else
      assert.ok(
        on >= f.inclusive.value - (fig.slack.get(f.name) ?? 0) - 1 &&
          on <= f.inclusive.value + carried + (fig.slack.get(f.name) ?? 0) + 1,
        `${f.name}: the derived tree holds ${on}, its measured inclusive ${f.inclusive.value} and at most the ${carried} its overfull callees carry`,
      );
  }
  // The note names the first five and counts the rest: every one is named or counted, and no other.
  const named = /stacks add up to the callees' shares: (.*?)(?: and (\d+) more)?\.(?: |$)/.exec(fig.note);
  if (overfull.length === 0) assert.ok(!named, `the note names functions whose callees' shares fit: ${fig.note}`);
  else {
    assert.ok(named, `the note names none of ${overfull.join(', ')}: ${fig.note}`);
    const names = named[1]!.split(', ');
    for (const n of names) assert.ok(overfull.includes(n), `the note names ${n}, whose callees' shares fit in it`);
    assert.equal(
      names.length + Number(named[2] ?? 0),
      overfull.length,
      `the note accounts for ${overfull.join(', ')}: ${fig.note}`,
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

/** The target's gprof against the ELF prints the model's self values and call counts; the importer reads the file back. */
export function checkGprof(x: ExportedFiles, fig: StackFigures, elf: string, toolPrefix: string): void {
  const { model } = x;
  const flat = gprofFlat(`${toolPrefix}gprof`, elf, x.file('gmon'));
  const symbols = elfFunctionSymbols(`${toolPrefix}nm`, elf);
  const back = functionsByName(importGmon(readFileSync(x.file('gmon')), { symbols }));
  let compared = 0;
  for (const [name, value] of fig.top) {
    if (Math.round(value) === 0) continue;
    near(fig, flat.get(name)?.self, value, name, 'gprof self');
    near(fig, back.get(name)?.self?.value, value, name, 'gmon import self');
    compared++;
  }
  assert.ok(compared >= 3);
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
