import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ElfImage } from '../../adapter/elf';
import { staticCallGraph } from '../../adapter/probe/callGraph';
import { callgrindText } from '../../core/export/callgrind';
import { cpuProfileJson } from '../../core/export/cpuprofile';
import { foldedName, foldedStacks } from '../../core/export/folded';
import { gmonBytes } from '../../core/export/gmon';
import { pprofBytes } from '../../core/export/pprof';
import { speedscopeJson } from '../../core/export/speedscope';
import { importFolded } from '../../core/import/folded';
import { NOT_MEASURED, profileStacks, treeFigures } from '../../core/profile/callTree';
import { emptyProfile, functionsByName, type Profile } from '../../core/profile/model';
import { runOracle, type OracleSummary } from '../oracle/oracle';
import type { ToolTarget } from '../oracle/binutils';
import {
  callgrindAnnotate,
  gprofFlat,
  pprofTop,
  pprofTraces,
  speedscopeSchemaErrors,
} from '../support/profileConsumers';
import { OWNER_TAG_VAR, killTagged, newOwnerTag } from '../support/ownedProcesses';
import { fixturesDir } from '../support/paths';

/**
 * The call-tree programs (test/fixtures/programs: sharedbody, ptrsort, dsubrun) on both targets,
 * against the oracle's exact calling-context tree from QEMU's instruction trace:
 * - a profile holding that tree: every stack-based export, read back by its real consumer
 *   (callgrind_annotate, `go tool pprof -top` and `-traces`, speedscope's schema, gprof, the
 *   folded importer, the .cpuprofile's own sums), gives each function the oracle's self and
 *   inclusive counts exactly, and its stacks add up to the run's total;
 * - a profile of per-function inclusive values only, as a descent measures them, on the static
 *   call graph: the derived tree invents no own time (each frame's own value at most the oracle's
 *   exclusive count, plus the bound where a split is estimated), a function that calls through a
 *   pointer gets none, and the stacks add up to the total.
 */

const TARGETS: readonly ToolTarget[] = ['rv32', 'cortex-m4'];
const PROGRAMS = ['sharedbody', 'ptrsort', 'dsubrun'] as const;
const PREFIX: Record<ToolTarget, string> = { rv32: 'riscv64-unknown-elf-', 'cortex-m4': 'arm-none-eabi-' };

const tag = newOwnerTag();
const scratch = mkdtempSync(join(tmpdir(), 'cyclelens-calltree-'));
before(() => {
  process.env[OWNER_TAG_VAR] = tag;
});
after(() => {
  killTagged(tag);
  rmSync(scratch, { recursive: true, force: true });
});

interface OracleTree {
  self: Map<string, number>;
  inclusive: Map<string, number>;
  total: number;
}

/** The oracle's tree per function: own count where it is the top frame, inclusive on its stacks (once each). */
function oracleTree(o: OracleSummary): OracleTree {
  const self = new Map<string, number>();
  const inclusive = new Map<string, number>();
  let total = 0;
  for (const c of o.contexts) {
    total += c.self;
    const top = c.frames.at(-1)!;
    self.set(top, (self.get(top) ?? 0) + c.self);
    for (const f of new Set(c.frames)) inclusive.set(f, (inclusive.get(f) ?? 0) + c.self);
  }
  return { self, inclusive, total };
}

/** A profile whose stacks are the oracle's contexts (what an exact per-context measurement records). */
function recordedProfile(o: OracleSummary, elf: string): Profile {
  const p = emptyProfile({
    generator: 'test',
    program: { executable: elf },
    unit: { kind: 'instructions' },
    provenance: { kind: 'oracle', source: 'QEMU instruction trace' },
  });
  const names = [...new Set(o.contexts.flatMap((c) => c.frames))];
  const byName = new Map(o.functions.map((f) => [f.name, f]));
  p.functions = names.map((name, id) => {
    const f = byName.get(name);
    return {
      id,
      name,
      status: 'measured',
      ...(f && f.start > 0 ? { address: f.start, size: f.end - f.start } : {}),
      ...(f ? { inclusive: { value: f.inclusive }, calls: f.calls } : {}),
    };
  });
  const ids = new Map(names.map((n, i) => [n, i]));
  p.stacks = o.contexts.map((c) => ({ frames: c.frames.map((n) => ids.get(n)!), value: c.self }));
  p.total = { value: o.trace.instructions };
  return p;
}

function exact(actual: number | undefined, wanted: number, what: string): void {
  assert.equal(actual ?? 0, wanted, what);
}

/**
 * Left out until the oracle is mended: on Cortex-M4 the trace analyser takes 802 control transfers
 * in libgcc's soft-float code (dsubrun's __aeabi_dsub/__adddf3) for exception entries at unknown
 * handlers, so its calling-context tree nests 802 frames deep and is not the truth. dsubrun on RV32
 * is checked here; the run-on convention itself in test/unit/profileModel.test.ts.
 */
const ORACLE_DEFECT = new Set(['cortex-m4/dsubrun']);

for (const target of TARGETS) {
  for (const program of PROGRAMS) {
    if (ORACLE_DEFECT.has(`${target}/${program}`)) continue;
    describe(`call tree of ${program} on ${target} against the trace`, () => {
      const elf = join(fixturesDir, 'build', target, 'programs', `${program}.elf`);
      let oracle: OracleSummary;
      let truth: OracleTree;

      before(async () => {
        oracle = await runOracle({ elf, target, timeoutMs: 120_000 });
        truth = oracleTree(oracle);
      });

      it("the oracle's calling-context tree covers every instruction", () => {
        assert.equal(truth.total, oracle.trace.instructions);
        assert.ok(oracle.totals.consistent);
        assert.ok(truth.inclusive.size >= 4);
      });

      it("every export of the recorded tree gives the oracle's self and inclusive per function", () => {
        const p = recordedProfile(oracle, elf);
        const file = (ext: string): string => join(scratch, `${target}-${program}.${ext}`);
        writeFileSync(file('callgrind'), callgrindText(p));
        writeFileSync(file('pb.gz'), pprofBytes(p));
        writeFileSync(file('speedscope.json'), speedscopeJson(p));
        writeFileSync(file('folded'), foldedStacks(p));
        writeFileSync(file('cpuprofile'), cpuProfileJson(p));
        writeFileSync(file('gmon.out'), gmonBytes(p));

        const cg = callgrindAnnotate(file('callgrind'));
        const pprof = pprofTop(file('pb.gz'));
        for (const [name, inclusive] of truth.inclusive) {
          const self = truth.self.get(name) ?? 0;
          exact(cg.inclusive.get(name), inclusive, `${name} callgrind inclusive`);
          exact(cg.self.get(name), self, `${name} callgrind self`);
          exact(pprof.get(name)?.cum, inclusive, `${name} pprof cum`);
          exact(pprof.get(name)?.flat, self, `${name} pprof flat`);
        }
        // `go tool pprof -traces`: each sample's value heads its block; they add up to the run.
        const traced = pprofTraces(file('pb.gz'))
          .split('\n')
          .map((l) => /^\s+(\d+)\s+\S/.exec(l))
          .filter((m): m is RegExpExecArray => m !== null)
          .reduce((s, m) => s + Number(m[1]), 0);
        assert.equal(traced, truth.total, 'pprof -traces adds up to the run');

        const ss = JSON.parse(readFileSync(file('speedscope.json'), 'utf8')) as {
          shared: { frames: { name: string }[] };
          profiles: { type: string; samples?: number[][]; weights?: number[] }[];
        };
        assert.deepEqual(speedscopeSchemaErrors(ss), []);
        const sampled = ss.profiles.find((x) => x.type === 'sampled')!;
        const ssSelf = new Map<string, number>();
        const ssIncl = new Map<string, number>();
        sampled.samples!.forEach((frames, i) => {
          const w = sampled.weights![i]!;
          const top = ss.shared.frames[frames.at(-1)!]!.name;
          ssSelf.set(top, (ssSelf.get(top) ?? 0) + w);
          for (const f of new Set(frames)) {
            const n = ss.shared.frames[f]!.name;
            ssIncl.set(n, (ssIncl.get(n) ?? 0) + w);
          }
        });
        assert.equal(
          sampled.weights!.reduce((s, w) => s + w, 0),
          truth.total,
          'speedscope weighs the run once',
        );
        for (const [name, inclusive] of truth.inclusive) {
          exact(ssIncl.get(name), inclusive, `${name} speedscope inclusive`);
          exact(ssSelf.get(name), truth.self.get(name) ?? 0, `${name} speedscope self`);
        }

        const folded = functionsByName(importFolded(readFileSync(file('folded'), 'utf8')));
        for (const [name, inclusive] of truth.inclusive)
          exact(folded.get(foldedName(name))?.inclusive?.value, inclusive, `${name} folded inclusive`);
        const cpu = JSON.parse(readFileSync(file('cpuprofile'), 'utf8')) as { endTime: number; timeDeltas: number[] };
        assert.equal(cpu.endTime, truth.total, '.cpuprofile spans the run');

        // gprof's flat profile: the histogram holds each located function's own count.
        const flat = gprofFlat(`${PREFIX[target]}gprof`, elf, file('gmon.out'));
        const located = new Set(p.functions.filter((f) => f.address !== undefined).map((f) => f.name));
        let compared = 0;
        for (const [name, self] of truth.self) {
          if (!located.has(name) || self === 0) continue;
          // Symbols at one address (vfprintf and __d_vfprintf) are one function to gprof, under either name.
          const aliases = oracle.functions.find((f) => f.name === name)?.aliases ?? [];
          const row = [name, ...aliases].map((n) => flat.get(n)).find((r) => r !== undefined);
          // gprof lists no `.part.N` copy: its count is in the function before it (checked there).
          if (row === undefined && /\.part\.\d+$/.test(name)) continue;
          // A symbol gprof does not list (a local `.part.0` copy, a label inside newlib's assembly)
          // keeps its bin, which gprof credits to the function listed before it.
          const f = oracle.functions.find((x) => x.name === name)!;
          const inside = oracle.functions
            .filter(
              (g) =>
                g !== f &&
                g.start > f.start &&
                g.start <= f.end &&
                located.has(g.name) &&
                ![g.name, ...g.aliases].some((n) => flat.has(n)),
            )
            .reduce((sum, g) => sum + (truth.self.get(g.name) ?? 0), 0);
          assert.ok(
            row !== undefined && row.self >= self && row.self <= self + inside,
            `${name} gprof self: ${row?.self} vs the trace's ${self} (+${inside} of unlisted symbols after it)`,
          );
          compared++;
        }
        assert.ok(compared >= 3, 'gprof shows the functions');
      });

      it('a tree derived from per-function inclusive values invents no own time', () => {
        const graph = staticCallGraph(ElfImage.loadSync(elf));
        const p = emptyProfile({
          generator: 'test',
          program: { executable: elf },
          unit: { kind: 'instructions' },
          provenance: { kind: 'injected', payload: 'accumulated', counter: 'instructions (oracle figures)' },
        });
        const measured = new Map(oracle.functions.map((f) => [f.name, f]));
        p.functions = graph.functions.map((g, id) => {
          const f = measured.get(g.name);
          return {
            id,
            name: g.name,
            address: g.address,
            size: g.size,
            status: f ? 'measured' : 'unreached',
            ...(f ? { inclusive: { value: f.inclusive }, calls: f.calls } : {}),
            ...(graph.indirectCallers.includes(g.name) ? { indirectCalls: true } : {}),
          };
        });
        const ids = new Map(p.functions.map((f) => [f.name, f.id]));
        const calls = new Map(oracle.edges.map((e) => [`${e.caller}\u0000${e.callee}`, e.calls]));
        p.edges = graph.edges.map((e) => {
          const n = calls.get(`${e.caller}\u0000${e.callee}`);
          return { caller: ids.get(e.caller)!, callee: ids.get(e.callee)!, kind: e.kind, calls: n ?? 0 };
        });
        p.total = { value: oracle.trace.instructions };
        const tree = profileStacks(p);
        const fig = treeFigures(tree);
        const sum = tree.stacks.reduce((s, x) => s + x.value, 0);
        assert.ok(Math.abs(sum - truth.total) <= 1e-6 * truth.total, `stacks ${sum} vs the run's ${truth.total}`);
        const upper = new Map<number, number>();
        for (const s of tree.stacks) {
          const top = s.frames.at(-1)!;
          upper.set(top, (upper.get(top) ?? 0) + (s.bound?.high ?? s.value));
        }
        for (const f of tree.functions) {
          if (f.name === NOT_MEASURED) continue;
          const own = fig.self[f.id]!;
          if (own <= 0) continue;
          // Own time only where measurement supports it: never a pointer caller's, and never above
          // what the function's code ran by more than its estimate's bound allows.
          assert.ok(!f.indirectCalls, `${f.name} calls through a pointer and got ${own} of own time`);
          const truthSelf = truth.self.get(f.name) ?? 0;
          assert.ok(
            own <= Math.max(truthSelf, upper.get(f.id)!) + 1,
            `${f.name}: own ${own} in the derived tree, ${truthSelf} in the trace`,
          );
        }
        if (program === 'sharedbody') {
          // The trace: body runs 1 % under warm_up, 99 % under measure; measure itself is tiny.
          assert.ok(
            fig.self[ids.get('measure')!]! <=
              (truth.self.get('measure') ?? 0) + 1 + fig.inclusive[ids.get('warm_up')!]!,
          );
          assert.ok(fig.inclusive[ids.get('warm_up')!]! <= measured.get('warm_up')!.inclusive + 1e-6);
        }
      });
    });
  }
}
