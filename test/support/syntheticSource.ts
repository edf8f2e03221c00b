import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { saveProfile } from '../../core/profile/json';
import { emptyProfile, type Profile } from '../../core/profile/model';

/**
 * A C file of `count` one-line functions (`int fn_7(void) { return 7; }` on line 8) and a native
 * profile of it in `<root>/.cyclelens/profiles/`: function i has 1 + i % 97 instructions inclusive,
 * so shares differ and a few functions are hot. For the language server's scale and fault tests.
 */
export async function syntheticWorkspace(
  root: string,
  count: number,
): Promise<{ source: string; profile: Profile; profileFile: string }> {
  const source = join(root, 'src', 'many.c');
  mkdirSync(join(root, 'src'), { recursive: true });
  const lines: string[] = [];
  for (let i = 0; i < count; i++) lines.push(`int fn_${i}(void) { return ${i}; }`);
  writeFileSync(source, `${lines.join('\n')}\n`);
  const profile = emptyProfile({
    generator: 'test',
    program: { executable: join(root, 'many.elf') },
    unit: { kind: 'instructions' },
    provenance: { kind: 'exact', counter: 'minstret' },
  });
  let total = 0;
  for (let i = 0; i < count; i++) {
    const value = 1 + (i % 97);
    total += value;
    profile.functions.push({
      id: i,
      name: `fn_${i}`,
      status: 'measured',
      location: { path: source, line: i + 1 },
      inclusive: { value },
      self: { value },
      calls: 1,
    });
  }
  // A few hot functions: at least one hot diagnostic in any window of the file.
  for (let i = 0; i < count; i += 1000) profile.functions[i]!.inclusive = { value: total };
  profile.total = { value: total };
  profile.runs = [{ role: 'synthetic', method: 'synthetic profile of a generated file', total, measured: [] }];
  const profileFile = join(root, '.cyclelens', 'profiles', 'many.cyclelens-profile.json');
  mkdirSync(join(root, '.cyclelens', 'profiles'), { recursive: true });
  await saveProfile(profileFile, profile);
  return { source, profile, profileFile };
}
