import { existsSync } from 'node:fs';
import { fixtureElf } from '../support/paths';
import { ToolTarget } from './binutils';
import { SampleBuild, buildSamples, canBuildSamples } from './samplePrograms';

/** An ELF the ELF-reader and oracle tests check against the GNU tools. */
export interface TestElf {
  name: string;
  target: ToolTarget;
  path: string;
  debug: boolean;
  sample?: SampleBuild;
}

export const FIXTURE_PROGRAMS = ['singlepass', 'cyclic', 'cyclic_limited', 'nodebug'] as const;
const TARGETS: readonly ToolTarget[] = ['cortex-m4', 'rv32'];

/** Built fixture firmware (test/fixtures/build), for whichever targets have been built. */
export function fixtureElfs(): TestElf[] {
  const found: TestElf[] = [];
  for (const target of TARGETS) {
    for (const program of FIXTURE_PROGRAMS) {
      const path = fixtureElf(target, program);
      if (existsSync(path))
        found.push({ name: `fixture ${target}/${program}`, target, path, debug: program !== 'nodebug' });
    }
  }
  return found;
}

let samples: SampleBuild[] | undefined;

/** The sample programs, compiled once per test process for every target with a compiler. */
export function sampleElfs(): TestElf[] {
  samples ??= buildSamples(TARGETS.filter(canBuildSamples));
  return samples.map((s) => ({
    name: `sample ${s.target}/${s.variant}`,
    target: s.target,
    path: s.elf,
    debug: s.variant !== 'nodebug',
    sample: s,
  }));
}
