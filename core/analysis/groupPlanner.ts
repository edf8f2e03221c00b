import type { CallGraphIndex } from './callGraphIndex';
import { groupKey, type Ledger } from './analysisRun';

/** Groups one function may join: after that it is measured alone, so descent always ends. */
const MAX_GROUPINGS = 4;

/**
 * Plans descent steps with group measurements. Functions that look hot (estimate at or above the
 * threshold, a member of a pair that came out hot, or the member that blocked a group) take a slot
 * each; the ones that look cold are packed into groups whose estimates add up to `packing` x
 * threshold, of members that do not call one another (a caller's own value already bounds its
 * callees). A group that comes out at or above the threshold rescales its members' estimates to
 * its value and is split on the next step. Slots left over split the largest groups further.
 */
export class GroupPlanner {
  private readonly scale = new Map<string, number>();
  private readonly floor = new Map<string, number>();
  /** Members of a pair that came out hot: one of the two is hot, so both are measured alone. */
  private readonly hotPair = new Set<string>();
  private learned = 0;
  /** Every group measured so far: one is never measured twice. */
  private readonly measured = new Set<string>();
  /** How many functions one run can patch (singles and group members), once the target said. */
  private capacity = Number.POSITIVE_INFINITY;
  /** Groups each function was in. */
  private readonly groupings = new Map<string, number>();

  constructor(
    private readonly index: CallGraphIndex,
    private readonly prior: ReadonlyMap<string, number>,
    private readonly slots: number,
    private readonly threshold: number,
    private readonly packing: number,
    /** Functions a group may hold (an entry patch can measure them); all when undefined. */
    private readonly groupable?: ReadonlySet<string>,
  ) {}

  private guess(f: string, U: ReadonlyMap<string, number>): number {
    const prior = (this.prior.get(f) ?? 0) * (this.scale.get(f) ?? 1);
    return Math.min(U.get(f)!, Math.max(this.floor.get(f) ?? 0, prior));
  }

  plan(
    candidates: readonly string[],
    U: ReadonlyMap<string, number>,
    ready: (f: string) => boolean,
    ledger: Ledger,
  ): { batch: string[]; groups: string[][] } {
    const guess = new Map(candidates.map((f) => [f, this.guess(f, U)]));
    const order = [...candidates].sort((a, b) => Number(ready(b)) - Number(ready(a)) || guess.get(b)! - guess.get(a)!);
    // With room for fewer than two patches per slot, groups would hold a member or two each: every
    // function is measured alone.
    const roomy = this.capacity >= 2 * this.slots;
    const alone = (f: string): boolean =>
      !roomy ||
      ledger.groupRefused.has(f) ||
      (this.groupable !== undefined && !this.groupable.has(f)) ||
      (this.groupings.get(f) ?? 0) >= MAX_GROUPINGS ||
      guess.get(f)! >= this.threshold ||
      this.hotPair.has(f);
    const singles = order.filter(alone);
    const capacity = this.packing * this.threshold;
    const packs: { members: string[]; sum: number }[] = [];
    for (const f of order) {
      if (alone(f)) continue;
      const g = guess.get(f)!;
      const fit = packs.find((p) => p.sum + g <= capacity && p.members.every((m) => !this.index.related(m, f)));
      if (fit) {
        fit.members.push(f);
        fit.sum += g;
      } else {
        packs.push({ members: [f], sum: g });
      }
    }
    // A group measured before that left its members open is split, never measured again.
    for (let i = 0; i < packs.length; i++) {
      const p = packs[i]!;
      if (p.members.length < 2 || !this.measured.has(groupKey(p.members))) continue;
      const half = Math.ceil(p.members.length / 2);
      const sum = (ms: string[]): number => ms.reduce((acc, m) => acc + guess.get(m)!, 0);
      const a = p.members.slice(0, half);
      const b = p.members.slice(half);
      packs.splice(i, 1, { members: a, sum: sum(a) }, { members: b, sum: sum(b) });
      i--;
    }
    // Singles due now (ready, or looking hot) come first; the others (looking ahead at functions
    // that cannot join a group) take only the slots the groups leave: a group of unready functions
    // decides many at once, a single one.
    const due = (f: string): boolean => ready(f) || guess.get(f)! >= this.threshold || this.hotPair.has(f);
    const later = singles.filter((f) => !due(f));
    const first = singles.filter(due);
    // Blind groups (no call counts) get half the slots at least: idle group slots split the packs.
    const least = this.slots > 1 ? (this.prior.size > 0 ? 1 : Math.ceil(this.slots / 2)) : 0;
    const groupSlots =
      packs.length > 0
        ? Math.max(Math.min(least, this.prior.size > 0 ? packs.length : least), this.slots - first.length)
        : 0;
    const batch = first.slice(0, this.slots - groupSlots);
    const chosen = packs.slice(0, this.slots - batch.length);
    // Idle slots split the groups with the largest estimates: fewer members, less to redo.
    for (;;) {
      if (batch.length + chosen.length >= this.slots) break;
      let widest = -1;
      for (let i = 0; i < chosen.length; i++)
        if (chosen[i]!.members.length > 1 && (widest < 0 || chosen[i]!.sum > chosen[widest]!.sum)) widest = i;
      if (widest < 0) break;
      const members = [...chosen[widest]!.members].sort((a, b) => guess.get(b)! - guess.get(a)!);
      const halves = [
        { members: [] as string[], sum: 0 },
        { members: [] as string[], sum: 0 },
      ];
      for (const m of members) {
        // Equal estimates (none known: every guess 0) alternate, so the halves are halves.
        const [a, b] = [halves[0]!, halves[1]!];
        const h = a.sum < b.sum || (a.sum === b.sum && a.members.length <= b.members.length) ? a : b;
        h.members.push(m);
        h.sum += guess.get(m)!;
      }
      chosen.splice(widest, 1, ...halves);
    }
    batch.push(...later.slice(0, Math.max(0, this.slots - batch.length - chosen.length)));
    // Within the room the target has for patches: the last groups give up members to later runs.
    let room = this.capacity - batch.length;
    for (const p of chosen) {
      p.members = p.members.slice(0, Math.max(0, room));
      room -= p.members.length;
    }
    for (let i = chosen.length - 1; i >= 0; i--) if (chosen[i]!.members.length === 0) chosen.splice(i, 1);
    for (const p of chosen) if (p.members.length === 1) batch.push(p.members[0]!);
    const groups = chosen.filter((p) => p.members.length > 1).map((p) => p.members);
    for (const g of groups) {
      this.measured.add(groupKey(g));
      for (const m of g) this.groupings.set(m, (this.groupings.get(m) ?? 0) + 1);
    }
    return { batch, groups };
  }

  /** Learns from the groups measured since the last call: hot ones rescale their members. */
  learn(ledger: Ledger, resultSet: number): void {
    for (const g of ledger.groups.slice(this.learned)) {
      if (g.resultSet !== resultSet || g.value < this.threshold) continue;
      const sum = g.members.reduce((acc, m) => acc + (this.prior.get(m) ?? 0) * (this.scale.get(m) ?? 1), 0);
      for (const m of g.members) {
        if (sum > 0) this.scale.set(m, ((this.scale.get(m) ?? 1) * g.value) / sum);
        // Nothing known of the members (no call counts): a hot group is usually one hot member
        // among cold ones, so it is halved (each member takes its share of two groups' room), not
        // spread evenly, which would measure every member alone.
        const part =
          sum > 0
            ? g.value / g.members.length
            : (Math.max(2, Math.ceil(Math.sqrt(g.members.length))) * this.packing * this.threshold) / g.members.length;
        this.floor.set(m, Math.max(this.floor.get(m) ?? 0, part));
        if (g.members.length === 2) this.hotPair.add(m);
      }
    }
    this.learned = ledger.groups.length;
    // A group refused as a whole, with no member to blame, found the end of the target's room for
    // patches (the reserved memory): later runs patch what this one got in and half of what it did
    // not, and learn again if that is still too much.
    const rs = ledger.resultSets[resultSet];
    const whole = rs?.refused.filter((r) => r.members && r.blockedBy === undefined) ?? [];
    if (rs && whole.length > 0) {
      const fitted = rs.measurements.length + (rs.groups ?? []).reduce((n, g) => n + g.members.length, 0);
      const missed = whole.reduce((n, r) => n + r.members!.length, 0);
      this.capacity = Math.min(this.capacity, Math.max(this.slots, fitted + Math.floor(missed / 2)));
    }
  }
}
