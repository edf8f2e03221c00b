import type { InjectionWarning } from '../../../common/dapCustom';
import type { Block } from './caveAllocator';
import { InjectionRefusedError, hex, refusal, warning } from './errors';
import { buildGroupStubs, memberRefusal } from './groupStubs';
import type { LiveMeasurements } from './liveMeasurements';
import { memoryKindAt } from './memoryMap';
import type { DispatchEntry, RuntimeLayout, StubRequest } from './payload';
import { type InjectionPlanner, reachableDisplaced } from './planner';
import { RECORD_SIZE, initialRecord } from './recordLayout';
import type {
  GroupOptions,
  InjectionServiceOptions,
  MeasureOptions,
  Measurement,
  MeasurementInfo,
} from './serviceTypes';
import type {
  BypassSite,
  CallSite,
  CaveReach,
  FunctionPlan,
  InjectionPlan,
  InjectionRefusal,
  PatchSite,
  PayloadKind,
} from './types';

/**
 * The planner-facing part of the injection service: asks InjectionPlanner for a plan, refuses what
 * cannot be patched safely here (overlaps with live patches, a resume point inside the bytes, code
 * in flash), and turns the plan into a stub, a record and patches in the reserved memory, which
 * LiveMeasurements then makes live. The caller has checked that the target is halted.
 */
export class MeasurementBuilder {
  constructor(
    private readonly o: InjectionServiceOptions,
    private readonly planner: InjectionPlanner,
    private readonly layout: RuntimeLayout,
    private readonly cave: CaveReach,
    private readonly live: LiveMeasurements,
  ) {}

  async measureFunction(target: string | number, options: MeasureOptions = {}): Promise<MeasurementInfo> {
    const plan = this.planner.planFunction(target);
    if (!plan.ok) {
      if (plan.callSites?.usable.length && options.callSitesIfTooShort) return this.measureCallSites(target, options);
      throw new InjectionRefusedError(withOffer(plan));
    }
    const payload = options.payload ?? 'software';
    if (plan.bodyEntries?.length) {
      if (payload === 'hardware')
        throw new InjectionRefusedError(
          refusal(
            'alternateLink',
            `${plan.function.name} is -msave-restore millicode, whose return is hooked by the ` +
              `software-accumulation stubs only. Measure it with software accumulation (the default ` +
              `payload).`,
          ),
        );
      const fn = plan.function.name;
      const names = [fn, ...plan.bodyEntries.map((b) => `${fn} (the jump into its body at ${hex(b.address)})`)];
      return this.installMembers(fn, names, [plan.entry, ...plan.bodyEntries], plan.warnings, 'function');
    }
    if (payload === 'hardware') this.live.claimHardwareSlot();
    try {
      const bypass = plan.bypass;
      return await this.install(
        plan.function.name,
        'function',
        payload,
        plan.warnings,
        [plan.entry],
        (record, at) => ({
          kind: 'function',
          payload,
          record,
          at,
          entry: plan.entry,
          ...(bypass ? { bypass: bypass.copy } : {}),
          ...(bypass?.code ? { bypassCode: bypass.code, bypassLength: bypass.shape.length } : {}),
        }),
        undefined,
        true,
        bypass,
      );
    } catch (err) {
      if (payload === 'hardware') this.live.dropHardwareClaim();
      throw err;
    }
  }

  /** Rewrites the function's direct calls to go through a stub (for functions too short to patch). */
  async measureCallSites(target: string | number, options: MeasureOptions = {}): Promise<MeasurementInfo> {
    const plan = this.planner.planCallSites(target);
    if (!plan.ok) throw new InjectionRefusedError(plan);
    const fn = plan.function;
    return this.install(
      fn.name,
      'callSites',
      options.payload ?? 'software',
      plan.warnings,
      [],
      (record, at) => ({ kind: 'callSite', payload: 'software', record, at, target: fn.start }),
      plan.sites,
    );
  }

  async measureRegion(start: number, end: number): Promise<MeasurementInfo> {
    const plan = this.planner.planRegion(start, end);
    if (!plan.ok) throw new InjectionRefusedError(plan);
    const name = `${plan.function.name} ${hex(start)}..${hex(end)}`;
    return this.install(name, 'region', 'software', plan.warnings, [plan.start, plan.end], (record, at) => ({
      kind: 'region',
      payload: 'software',
      record,
      at,
      start: plan.start,
      end: plan.end,
    }));
  }

  /**
   * One measurement over the entries of several functions: every member is entry-patched with a
   * stub of its own, and all stubs share one record, so it counts the union of their activations
   * (the record's depth counter makes a member called inside another count once) and every entry
   * through any member. All or nothing: if any member cannot be entry-patched the group is refused
   * with that member named, before anything is written or allocated. Members are never measured at
   * their call sites (those stubs link differently); hardware gating is refused.
   */
  async measureGroup(members: readonly string[], options: GroupOptions = {}): Promise<MeasurementInfo> {
    if (options.payload === 'hardware') {
      throw new InjectionRefusedError(
        refusal(
          'unrelocatable',
          'Groups are measured with software accumulation only: hardware gating gives one counter ' +
            'slot to one function. Inject the group with the software payload.',
        ),
      );
    }
    const plans = this.planGroup(members);
    const sites = plans.map((p) => p.entry);
    const names = plans.map((p) => p.function.name);
    const warnings = plans.flatMap((p) =>
      p.warnings.map((w) => ({ ...w, member: p.function.name, message: `${p.function.name}: ${w.message}` })),
    );
    return this.installMembers(options.name ?? names.join(' + '), names, sites, warnings, 'group');
  }

  /**
   * Entry stubs on one record (a group's members, or a millicode function's entry and the jumps
   * into its body): padded to one cost per pass, every exit stub the same code.
   */
  private async installMembers(
    name: string,
    names: string[],
    sites: PatchSite[],
    warnings: InjectionWarning[],
    kind: 'group' | 'function',
  ): Promise<MeasurementInfo> {
    const ranges = sites.map((st) => [st.address, st.address + st.original.length] as [number, number]);
    await forMembers(names, async (i) => {
      this.live.checkOverlap(sites[i]!.address, sites[i]!.original.length);
      await this.checkResumePoints([ranges[i]!]);
      this.checkMemory([ranges[i]!]);
    });
    if (this.live.hardwareGated) {
      throw new InjectionRefusedError(
        refusal(
          'unrelocatable',
          `${this.live.counter.name} is gated by a hardware-gating measurement; software accumulation ` +
            `reads the same counter. Remove that measurement first.`,
        ),
      );
    }
    const g = this.o.support.generator;
    // A trial at the cave's start refuses what cannot be relocated before anything is written.
    const trialRuntime = this.live.runtime ?? g.buildRuntime(this.layout);
    const trial = buildGroupStubs(
      g,
      sites.map((entry, i) => ({ name: names[i]!, entry, at: this.cave.start })),
      this.cave.start,
      trialRuntime,
      this.layout,
    );
    await this.live.ensureRuntime();
    const runtime = this.live.runtime!;
    const blocks: Block[] = [];
    try {
      const recordBlock = this.live.allocOrThrow(RECORD_SIZE);
      blocks.push(recordBlock);
      // Room for the padding the final addresses may add over the trial's.
      for (const t of trial) blocks.push(this.live.allocOrThrow(t.bytes.length + 64));
      const stubBlocks = blocks.slice(1);
      const stubs = buildGroupStubs(
        g,
        sites.map((entry, i) => ({ name: names[i]!, entry, at: stubBlocks[i]!.start })),
        recordBlock.start,
        runtime,
        this.layout,
      );
      stubs.forEach((st, i) => {
        if (st.bytes.length > stubBlocks[i]!.size) throw new Error(`the stub of ${names[i]} grew past its allocation`);
      });
      const first = stubs[0]!;
      // Every member's exit stub is the same code on the same record: the record names the first one.
      await this.o.access.writeMemory(
        BigInt(recordBlock.start),
        initialRecord((first.exit! | this.o.support.codeAddressBit) >>> 0, first.costs),
      );
      for (const [i, st] of stubs.entries()) await this.o.access.writeMemory(BigInt(stubBlocks[i]!.start), st.bytes);
      const patches: Measurement['patches'] = sites.map((st, i) => ({
        address: st.address,
        original: st.original,
        patched: g.encodePatch(st, stubs[i]!.entry, this.layout),
        stopAt: stopAfter(st),
      }));
      const info: MeasurementInfo = {
        id: this.live.takeId(),
        name,
        kind,
        ...(kind === 'group' ? { members: names } : {}),
        payload: 'software',
        counter: this.live.counter.name,
        patches: patches.map((p) => ({ address: p.address, length: p.patched.length })),
        stub: { address: stubBlocks[0]!.start, size: first.bytes.length },
        record: recordBlock.start,
        counted: first.counted,
        warnings,
        notes: [...new Set(stubs.flatMap((st) => st.notes))],
      };
      const pinned = pinsMemory(sites, name, warnings);
      await this.live.commit({ info, stub: first, blocks, patches, dispatch: [], pinned }, true);
      return info;
    } catch (err) {
      for (const b of blocks) this.live.release(b);
      await this.live.reclaimIfIdle();
      throw err;
    }
  }

  /** Every member's entry plan, or the refusal of the first member that has none. */
  private planGroup(members: readonly string[]): FunctionPlan[] {
    if (members.length === 0)
      throw new InjectionRefusedError(
        refusal('notFound', 'The group has no members: name the functions it measures together.'),
      );
    const plans: FunctionPlan[] = [];
    const seen = new Map<number, string>();
    for (const member of members) {
      const plan = this.planner.planFunction(member);
      if (!plan.ok) {
        const instead = plan.callSites?.usable.length
          ? ` Measure ${member} on its own (at its call sites), or leave it out of the group.`
          : ` Leave ${member} out of the group.`;
        throw memberRefusal(member, new InjectionRefusedError({ ...plan, reason: `${plan.reason}${instead}` }));
      }
      const why = soloReason(plan);
      if (why) {
        throw memberRefusal(
          member,
          new InjectionRefusedError(
            refusal(
              'alternateLink',
              `${member} is measured on its own, not in a group: ${why}. Leave it out of the group.`,
              plan.function.start,
            ),
          ),
        );
      }
      const before = seen.get(plan.function.start);
      if (before !== undefined) {
        const same = before === member ? `${member} is listed twice` : `${member} and ${before} are the same function`;
        throw new InjectionRefusedError(
          refusal(
            'branchIntoPatch',
            `${same} in the group; a function's entry can carry one patch. List each function once.`,
            plan.function.start,
          ),
        );
      }
      seen.set(plan.function.start, member);
      plans.push(plan);
    }
    return plans;
  }

  async install(
    name: string,
    kind: InjectionPlan['kind'],
    payload: PayloadKind,
    warnings: InjectionWarning[],
    sites: PatchSite[],
    request: (record: number, at: number) => StubRequest,
    callSites?: Array<CallSite & { original: Uint8Array }>,
    checkProgram = true,
    bypass?: BypassSite,
  ): Promise<MeasurementInfo> {
    for (const s of sites) this.live.checkOverlap(s.address, s.original.length);
    // A live diverting entry patch where the bypass goes does the bypass's work (same code, same count).
    const host = bypass ? this.live.divertingAt(bypass.address) : undefined;
    if (bypass && host === undefined) this.checkBypass(name, bypass);
    for (const c of callSites ?? []) this.live.checkOverlap(c.address, c.length);
    const ranges = [
      ...sites.map((s) => [s.address, s.address + s.original.length] as [number, number]),
      ...(bypass && host === undefined
        ? [[bypass.address, bypass.address + bypass.original.length] as [number, number]]
        : []),
      ...(callSites ?? []).map((c) => [c.address, c.address + c.length] as [number, number]),
    ];
    if (checkProgram) {
      await this.checkResumePoints(ranges);
      this.checkMemory(ranges);
    }
    await this.live.ensureRuntime();
    if (payload === 'software' && this.live.hardwareGated) {
      throw new InjectionRefusedError(
        refusal(
          'unrelocatable',
          `${this.live.counter.name} is gated by a hardware-gating measurement; software accumulation ` +
            `reads the same counter. Remove that measurement first.`,
        ),
      );
    }
    const g = this.o.support.generator;
    const runtime = this.live.runtime!;
    const recordBlock = this.live.allocOrThrow(RECORD_SIZE);
    const trial = g.buildStubs(request(recordBlock.start, this.cave.start), runtime, this.layout);
    const stubBlock = this.live.allocOrThrow(trial.bytes.length + 32);
    const blocks = [recordBlock, stubBlock];
    try {
      const stub = g.buildStubs(request(recordBlock.start, stubBlock.start), runtime, this.layout);
      if (stub.bytes.length > stubBlock.size) throw new Error('stub grew past its allocation');
      const id = this.live.takeId();
      let heldBase: number | undefined;
      if (payload === 'hardware') heldBase = await this.live.stopHardwareCounter();
      const exitAddress = stub.exit !== undefined ? (stub.exit | this.o.support.codeAddressBit) >>> 0 : 0;
      await this.o.access.writeMemory(BigInt(recordBlock.start), initialRecord(exitAddress, stub.costs, heldBase ?? 0));
      await this.o.access.writeMemory(BigInt(stubBlock.start), stub.bytes);
      const patches: Measurement['patches'] = [];
      if (kind === 'region') {
        patches.push({
          address: sites[0]!.address,
          original: sites[0]!.original,
          patched: g.encodePatch(sites[0]!, stub.entry, this.layout),
          stopAt: stopAfter(sites[0]!),
        });
        patches.push({
          address: sites[1]!.address,
          original: sites[1]!.original,
          patched: g.encodePatch(sites[1]!, stub.regionEnd!, this.layout),
          stopAt: stopAfter(sites[1]!),
        });
      } else {
        for (const s of sites)
          patches.push({
            address: s.address,
            original: s.original,
            patched: g.encodePatch(s, stub.entry, this.layout, stub.bypass),
            stopAt: stopAfter(s),
          });
      }
      let pendingBypass: Measurement['pendingBypass'];
      if (bypass) {
        const at: PatchSite = {
          address: bypass.address,
          shape: bypass.shape,
          displaced: [],
          resume: bypass.address,
          freeRegisters: 0,
          original: bypass.original,
        };
        const patch = {
          address: bypass.address,
          original: bypass.original,
          patched: g.encodePatch(at, stub.bypass!, this.layout),
        };
        if (host === undefined) patches.push(patch);
        else pendingBypass = { host, patch };
      }
      const dispatch: DispatchEntry[] = [];
      for (const c of callSites ?? []) {
        if (c.length === 2) dispatch.push({ returnAddress: c.address + 2, stub: stub.dispatchEntry! });
        patches.push({ address: c.address, original: c.original, patched: g.encodeCallSite(c, stub, this.layout) });
      }
      const info: MeasurementInfo = {
        id,
        name,
        kind,
        payload,
        counter: this.live.counter.name,
        patches: patches.map((p) => ({ address: p.address, length: p.patched.length })),
        stub: { address: stubBlock.start, size: stub.bytes.length },
        record: recordBlock.start,
        counted: stub.counted,
        warnings,
        notes: stub.notes,
      };
      const pinned = pinsMemory(sites, name, warnings);
      const diverts = sites.length === 1 && (sites[0]!.divert || sites[0]!.divertCode) ? sites[0]!.address : undefined;
      await this.live.commit(
        {
          info,
          stub,
          blocks,
          patches,
          dispatch,
          pinned,
          ...(heldBase !== undefined ? { heldBase } : {}),
          ...(diverts !== undefined ? { diverts } : {}),
          ...(pendingBypass ? { pendingBypass } : {}),
          ...(bypass ? { bypassAt: bypass.address } : {}),
        },
        checkProgram,
      );
      return info;
    } catch (err) {
      for (const b of blocks) this.live.release(b);
      await this.live.reclaimIfIdle();
      throw err;
    }
  }

  /** The bypass patch sits on another function's code; a live patch there (its own measurement) is in the way. */
  private checkBypass(name: string, bypass: BypassSite): void {
    try {
      this.live.checkOverlap(bypass.address, bypass.original.length);
    } catch (err) {
      if (!(err instanceof InjectionRefusedError)) throw err;
      throw new InjectionRefusedError(
        refusal(
          'branchIntoPatch',
          `${bypass.from}'s code falls through into ${name}'s entry; ` +
            `measuring ${name} patches ${hex(bypass.address)} to keep those passes out of its count, ` +
            `and ${err.refusal.reason} Measure ${name} and ${bypass.from} in different runs.`,
          bypass.address,
        ),
      );
    }
  }

  private checkMemory(ranges: Array<[number, number]>): void {
    for (const [s, e] of ranges) {
      const kind = memoryKindAt(this.o.memoryMap, s, e - s, this.o.support.arch.family);
      if ((kind === 'flash' || kind === 'rom') && !this.o.allowFlashWrites) {
        throw new InjectionRefusedError(
          refusal(
            'memory',
            `The code at ${hex(s)} is in ${kind}; a debugger write would not stick (or would need a ` +
              `flash erase). Run the code from RAM, or allow flash writes in the launch configuration.`,
            s,
          ),
        );
      }
    }
  }

  private async checkResumePoints(ranges: Array<[number, number]>): Promise<void> {
    const pc = (Number(await this.o.access.readRegister('pc')) & ~1) >>> 0;
    const points = [
      { what: 'The program counter', address: pc },
      ...((await this.o.support.resumePoints?.(this.o.access)) ?? []),
    ];
    for (const p of points) {
      for (const [s, e] of ranges) {
        if (p.address > s && p.address < e) {
          throw new InjectionRefusedError(
            refusal(
              'branchIntoPatch',
              `${p.what} is at ${hex(p.address)}, inside the bytes a patch at ${hex(s)} would overwrite; ` +
                `step past ${hex(e)} first.`,
              p.address,
            ),
          );
        }
      }
    }
  }
}

/**
 * Where a stop at the first byte of a patch is taken: a jump to a trampoline moves the code it
 * displaced into the trampoline, so the stop moves to `resume`, reached once those instructions
 * fall through to it. Undefined where the stop stays on the patch itself: a rewritten call still
 * runs in place, and displaced code that branches away never comes back (the stop is then taken
 * before the payload).
 */
function stopAfter(site: PatchSite): number | undefined {
  if (site.divertCode) return undefined; // it resumes past the next entry's patch, not at `resume`
  const live = reachableDisplaced(site.displaced);
  return live.length === site.displaced.length &&
    live.every((x) => x.kind === 'plain' || x.kind === 'call' || x.kind === 'it')
    ? site.resume
    : undefined;
}

/** A call displaced into a trampoline returns into it: that memory stays reserved for the session. */
function pinsMemory(sites: readonly PatchSite[], name: string, warnings: InjectionWarning[]): boolean {
  const pinned = sites.some((st) =>
    [...st.displaced, ...(st.divertCode ?? [])].some((x) => x.kind === 'call' || x.kind === 'indirectCall'),
  );
  if (pinned)
    warnings.push(
      warning(
        'memoryPinned',
        `A call is among the instructions moved into the trampoline of ${name}; its return lands ` +
          `there, so that memory stays reserved until the session ends.`,
      ),
    );
  return pinned;
}

/** Runs a check per member; a refusal comes back with the member named. */
async function forMembers(names: readonly string[], check: (i: number) => Promise<void>): Promise<void> {
  for (let i = 0; i < names.length; i++) {
    try {
      await check(i);
    } catch (err) {
      if (err instanceof InjectionRefusedError) throw memberRefusal(names[i]!, err);
      throw err;
    }
  }
}

/** Why a function's entry plan cannot join a group (millicode), or undefined. */
export function soloReason(plan: FunctionPlan): string | undefined {
  if (plan.entry.divert || plan.entry.divertCode)
    return 'its entry stub runs a copy of the code after the patch that skips the next entry';
  if (plan.bypass)
    return `code of ${plan.bypass.from} falls through into its entry and is diverted by a patch of its own`;
  if (plan.entry.link !== undefined)
    return (
      `it is linked through x${plan.entry.link} (millicode), and a group's exit stubs return ` +
      `through the standard link`
    );
  return undefined;
}

function withOffer(r: InjectionRefusal): InjectionRefusal {
  const offer = r.callSites;
  if (!offer || offer.usable.length === 0) return r;
  const missed = offer.missed.length + offer.indirectCalls.length;
  const missing = missed
    ? ` (missing ${offer.missed.length} site(s) that cannot be rewritten and ` +
      `${offer.indirectCalls.length} indirect call(s) in the program)`
    : '';
  return {
    ...r,
    reason: `${r.reason} It can be measured at its ${offer.usable.length} direct call site(s) instead${missing}.`,
  };
}
