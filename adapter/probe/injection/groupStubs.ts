import { InjectionRefusedError, refusal } from './errors';
import type { PayloadGenerator, RuntimeImage, RuntimeLayout, StubImage, StubPadding } from './payload';
import type { PatchSite } from './types';

/**
 * Stubs of a group measurement: one entry stub per member (each displaces different
 * instructions), all on one record. The record holds one set of path costs and the service
 * compensates one own overhead per pass, whichever member opened it, so the stubs are padded until
 * they agree on both. What differs between members is the relocated code (extra instructions, a
 * jump back or none) and, on RV32, the exit registers loaded before the window opens; the exit
 * stubs are the same code on the same record, so any member's exit stub serves all of them.
 */
export interface GroupMemberStub {
  /** The member's function, for messages. */
  name: string;
  entry: PatchSite;
  /** Where its stub goes. */
  at: number;
}

/** Padding rounds: a pad can move code across a reach boundary and change a stub once more. */
const ROUNDS = 4;

export function buildGroupStubs(
  g: PayloadGenerator,
  members: readonly GroupMemberStub[],
  record: number,
  runtime: RuntimeImage,
  layout: RuntimeLayout,
): StubImage[] {
  let padding: StubPadding[] = members.map(() => ({ outside: 0, inside: 0 }));
  // Any member's exit stub serves all: it gives back what any member's callers keep.
  const exitKeeps = members.reduce((m, x) => (m | (x.entry.keptRegisters ?? 0)) >>> 0, 0);
  for (let round = 0; round < ROUNDS; round++) {
    const stubs = members.map((m, i) => buildMember(g, m, record, padding[i]!, runtime, layout, exitKeeps));
    const next = padTowardsEqual(stubs, padding);
    if (!next) return stubs;
    padding = next;
  }
  throw new InjectionRefusedError(
    refusal(
      'unrelocatable',
      `The trampolines of ${members.map((m) => m.name).join(', ')} could not be brought to one ` +
        `cost per pass, which a shared record needs; measure them separately.`,
    ),
  );
}

function buildMember(
  g: PayloadGenerator,
  m: GroupMemberStub,
  record: number,
  padding: StubPadding,
  runtime: RuntimeImage,
  layout: RuntimeLayout,
  exitKeeps: number,
): StubImage {
  try {
    return g.buildStubs(
      { kind: 'function', payload: 'software', record, at: m.at, entry: m.entry, padding, exitKeeps },
      runtime,
      layout,
    );
  } catch (err) {
    if (err instanceof InjectionRefusedError) throw memberRefusal(m.name, err);
    throw err;
  }
}

/**
 * The padding that lifts every stub to the costliest member, or undefined when they already agree.
 * `counted.outer` is the in-window part; the nested entry path runs the same in-window part plus
 * what precedes the window, so their difference is the part before it.
 */
function padTowardsEqual(stubs: readonly StubImage[], padding: readonly StubPadding[]): StubPadding[] | undefined {
  const inside = stubs.map((s) => s.counted.outer);
  const outside = stubs.map((s) => s.costs.entryNested - s.counted.outer);
  const first = stubs[0]!;
  const same = stubs.every((s) => sameCosts(s, first) && s.counted.outer === first.counted.outer);
  if (same) return undefined;
  const maxInside = Math.max(...inside);
  const maxOutside = Math.max(...outside);
  return padding.map((p, i) => ({
    inside: p.inside + maxInside - inside[i]!,
    outside: p.outside + maxOutside - outside[i]!,
  }));
}

function sameCosts(a: StubImage, b: StubImage): boolean {
  return (
    a.costs.entryOuter === b.costs.entryOuter &&
    a.costs.entryNested === b.costs.entryNested &&
    a.costs.exitOuter === b.costs.exitOuter &&
    a.costs.exitNested === b.costs.exitNested
  );
}

/** A member's refusal as the group's: the member named first, the planner's sentence after it. */
export function memberRefusal(member: string, err: InjectionRefusedError): InjectionRefusedError {
  const r = err.refusal;
  return new InjectionRefusedError({
    ok: false,
    code: r.code,
    reason: `Group member ${member} cannot be entry-patched, so nothing of the group was injected: ${r.reason}`,
    ...(r.address !== undefined ? { address: r.address } : {}),
    member,
  });
}
