import { emptyProfile, type Profile, type ProfileFunction, type Unit } from '../profile/model';
import { ProfileError } from '../profile/profileError';

/** What every importer shares: size limits, and a profile that grows a function per new name. */

/** Imported files larger than this are refused before parsing (a profile of firmware is far smaller). */
export const MAX_IMPORT_BYTES = 512 * 1024 * 1024;

export function malformed(file: string, where: string, what: string, fix: string): never {
  throw new ProfileError('malformed', `${file}${where ? ` ${where}` : ''}: ${what}. ${fix}`);
}

export class ProfileBuilder {
  readonly profile: Profile;
  private readonly ids = new Map<string, number>();

  constructor(generator: string, executable: string, unit: Unit, provenance: Profile['provenance']) {
    this.profile = emptyProfile({
      generator,
      program: { executable },
      unit,
      provenance,
      analysis: { scenario: 'import' },
    });
  }

  fn(name: string): ProfileFunction {
    let id = this.ids.get(name);
    if (id === undefined) {
      id = this.profile.functions.length;
      this.ids.set(name, id);
      this.profile.functions.push({ id, name, status: 'measured' });
    }
    return this.profile.functions[id]!;
  }

  edge(caller: number, callee: number, calls?: number): void {
    const e = this.profile.edges.find((x) => x.caller === caller && x.callee === callee);
    if (e) {
      if (calls !== undefined) e.calls = (e.calls ?? 0) + calls;
    } else {
      this.profile.edges.push({ caller, callee, kind: 'call', ...(calls !== undefined ? { calls } : {}) });
    }
  }
}

/** Adds to an optional measure. */
export function add(m: { value: number } | undefined, v: number): { value: number } {
  return { value: (m?.value ?? 0) + v };
}
