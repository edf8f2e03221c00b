import type {
  CodeLocation,
  InjectArguments,
  InjectResponse,
  InjectedMeasurementInfo,
  InjectedResult,
  InjectedResultsResponse,
  InjectionRefusedTarget,
  PlanInjectionArguments,
  PlanInjectionResponse,
} from '../../common/dapCustom';
import { CustomRequests } from '../../common/dapCustom';
import { isUnsupported } from '../arch/archPlugin';
import { archPlugin } from '../arch/registry';
import { CycleLensError, ErrorCode, errorMessage } from '../errors';
import type { CounterUnitInfo } from '../probe/counters';
import {
  InjectionRefusedError,
  InjectionService,
  resolveReservedMemory,
  type StopPoint,
  restoreFromJournal,
  describeRestore,
  journalDir,
  type MeasurementInfo,
  type MeasurementKind,
  type MeasurementResults,
  type MemoryRegion,
  soloReason,
} from '../probe/injection';
import { DebuggerTargetAccess } from '../probe/targetAccess';
import { validateReservedMemory } from './launchValidation';
import type { DebugTarget, TargetOutput } from '../target/debugTarget';
import { interruptSamplerShare } from '../sampling/interruptSampler';
import type { CustomRequestHandlers } from './customRequestTypes';

type InjectionRequestName = (typeof CustomRequests)[
  'inject' | 'injectedResults' | 'removeInjections' | 'planInjection'];

/**
 * The `cyclelens/inject*` requests: injected measurements that count with the target's own
 * instructions while it runs. Translation only; InjectionService plans, patches and restores.
 */
export class InjectionRequests {
  private service: InjectionService | undefined;
  private sources = new Map<number, InjectedMeasurementInfo['source']>();
  /** What each live measurement was asked as: a restart applies the requests again. */
  private requests = new Map<number, InjectArguments>();
  private counterAtFirstInjection: bigint | undefined;

  constructor(
    private readonly target: () => DebugTarget,
    private readonly log: (o: TargetOutput) => void,
    /** The counter units discovery found: the family's plugin picks the counter payloads read. */
    private readonly counters: () => readonly CounterUnitInfo[],
  ) {}

  handlers(): CustomRequestHandlers<InjectionRequestName> {
    return {
      [CustomRequests.inject]: (a) => this.inject(a),
      [CustomRequests.injectedResults]: () => this.results(),
      [CustomRequests.removeInjections]: (a) => this.remove(a.ids),
      [CustomRequests.planInjection]: (a) => this.planEntries(a),
    };
  }

  /** Which functions an entry patch can measure (nothing is written): groups take only those. */
  private async planEntries(a: PlanInjectionArguments): Promise<PlanInjectionResponse> {
    if (!Array.isArray(a?.functions))
      throw new CycleLensError(
        ErrorCode.InvalidLaunchArgs,
        'planInjection needs `functions`: the names of the functions to plan',
      );
    const target = this.target();
    const service = this.service ?? (await target.withHalted(() => this.serviceFor(target)));
    return {
      functions: a.functions.map((name) => {
        try {
          const plan = service.plan(name);
          const solo = plan.ok && plan.kind === 'function' ? soloReason(plan) : undefined;
          return plan.ok
            ? { name, entry: true, ...(solo ? { solo } : {}) }
            : { name, entry: false, callSites: (plan.callSites?.usable.length ?? 0) > 0, reason: plan.reason };
        } catch (err) {
          return { name, entry: false, reason: errorMessage(err) };
        }
      }),
    };
  }

  /** Before a reset: every measurement out, and the service forgets what the reset undoes. */
  async beforeReset(): Promise<void> {
    await this.removeAll();
    this.service?.targetReset();
  }

  /** Where a stop wanted at `address` is taken while measurements are patched in (see InjectionService). */
  stopPointFor(address: number): StopPoint {
    return this.service?.stopPointFor(address) ?? { ok: true, address };
  }

  /** At launch, with the target halted: put back what a crashed session left patched. */
  async restoreJournal(): Promise<void> {
    const target = this.target();
    // A family without injected measurements never left a journal.
    if (isUnsupported(archPlugin(target.config.family).injection)) return;
    const report = await restoreFromJournal(
      new DebuggerTargetAccess(target.debugger),
      target.config.image,
      journalDir(target.config.cwd),
    );
    const message = describeRestore(report, target.config.image);
    if (message) this.log({ category: message.important ? 'important' : 'console', text: message.text });
  }

  /** Removes every patch: before a reset, a restart or the end of the session. */
  async removeAll(): Promise<void> {
    if (!this.service) return;
    const service = this.service;
    await this.target().withHalted(() => service.removeAll());
    this.sources.clear();
    this.requests.clear();
    this.counterAtFirstInjection = undefined;
  }

  /** The requests of the live measurements, to apply again after a restart (`reapply`). */
  liveRequests(): InjectArguments[] {
    return [...this.requests.values()];
  }

  /**
   * After a restart, with the target halted at its entry: the measurements asked for before it,
   * injected again. Undefined when there were none.
   */
  async reapply(requests: readonly InjectArguments[]): Promise<InjectResponse | undefined> {
    if (requests.length === 0) return undefined;
    const out: InjectResponse = { injected: [], refused: [] };
    for (const a of requests) {
      const r = await this.inject(a);
      out.injected.push(...r.injected);
      out.refused.push(...r.refused);
    }
    return out;
  }

  /**
   * The target ended. An emulator takes the patched memory with it, so nothing is left patched:
   * the journal is cleared and the next launch has nothing to restore. A board keeps its memory
   * (and so the patches, when the session could not remove them): its journal stays.
   */
  targetEnded(memoryGone: boolean): void {
    if (!memoryGone || !this.service) return;
    this.service.targetGone();
    this.sources.clear();
    this.requests.clear();
    this.counterAtFirstInjection = undefined;
  }

  private async inject(a: InjectArguments): Promise<InjectResponse> {
    const target = this.target();
    return target.withHalted(async () => {
      const service = await this.serviceFor(target);
      const injected: InjectedMeasurementInfo[] = [];
      const refused: InjectionRefusedTarget[] = [];
      // Millicode whose entry stub diverts the code after it goes first: a restore entry that code
      // falls through into then needs no patch of its own there (MeasurementBuilder.install).
      const diverts = (t: InjectArguments['targets'][number]): number => {
        if (!('function' in t)) return 1;
        try {
          const plan = service.plan(t.function);
          return plan.ok && plan.kind === 'function' && (plan.entry.divert || plan.entry.divertCode) ? 0 : 1;
        } catch {
          return 1;
        }
      };
      for (const t of [...a.targets].sort((x, y) => diverts(x) - diverts(y))) {
        try {
          const options = {
            ...(a.payload ? { payload: a.payload } : {}),
            callSitesIfTooShort: a.callSitesIfTooShort ?? true,
          };
          let info: MeasurementInfo;
          let source: InjectedMeasurementInfo['source'];
          let region: InjectedMeasurementInfo['region'];
          if ('group' in t) {
            info = await service.measureGroup(t.group, {
              ...(a.payload ? { payload: a.payload } : {}),
              ...(t.name !== undefined ? { name: t.name } : {}),
            });
            source = this.sourceOf(t.group[0]);
          } else if ('function' in t) {
            info = await service.measureFunction(t.function, options);
            source = this.sourceOf(t.function);
          } else {
            const [start, end] = [this.address(t.start), this.address(t.end)];
            info = await service.measureRegion(start, end);
            region = regionFields(this.target().config.image.functionContaining(start)?.name, start, end);
            source =
              'path' in t.start
                ? { path: t.start.path, line: t.start.line, ...('path' in t.end ? { endLine: t.end.line } : {}) }
                : undefined;
          }
          this.sources.set(info.id, source);
          this.requests.set(info.id, {
            targets: [t],
            ...(a.payload ? { payload: a.payload } : {}),
            ...(a.callSitesIfTooShort !== undefined ? { callSitesIfTooShort: a.callSitesIfTooShort } : {}),
          });
          injected.push(toWireInfo(info, source, region, service.instructionsPerCounterUnit));
        } catch (err) {
          if (!(err instanceof InjectionRefusedError) && !(err instanceof CycleLensError)) throw err;
          const member = err instanceof InjectionRefusedError ? err.refusal.member : undefined;
          refused.push({ target: t, reason: errorMessage(err), ...(member !== undefined ? { member } : {}) });
        }
      }
      if (injected.length > 0 && this.counterAtFirstInjection === undefined)
        this.counterAtFirstInjection = await this.counterNow(service);
      return { injected, refused };
    });
  }

  private async results(): Promise<InjectedResultsResponse> {
    const service = this.service;
    if (!service) return { results: [] };
    return this.target().withHalted(async () => {
      const results = (await service.read()).map(toWireResult);
      const now = await this.counterNow(service);
      const elapsed =
        now !== undefined && this.counterAtFirstInjection !== undefined
          ? Number(now - this.counterAtFirstInjection)
          : undefined;
      return { results, ...(elapsed !== undefined ? { elapsed } : {}) };
    });
  }

  private async remove(ids: number[] | undefined): Promise<void> {
    const service = this.service;
    if (!service) return;
    if (!ids) return this.removeAll();
    await this.target().withHalted(async () => {
      for (const id of ids) {
        await service.remove(id);
        this.sources.delete(id);
        this.requests.delete(id);
      }
    });
  }

  /** A free-running up-counter's value (CSR counters), for the share of the run; undefined otherwise. */
  private async counterNow(service: InjectionService): Promise<bigint | undefined> {
    const c = service.counter;
    if (c.kind !== 'csr') return undefined;
    return this.target()
      .debugger.readRegister(c.name)
      .catch(() => undefined);
  }

  /** Where a function starts in the source, when the ELF has line information. */
  private sourceOf(name: string | undefined): InjectedMeasurementInfo['source'] {
    const image = this.target().config.image;
    const fn = name !== undefined ? image.functionNamed(name) : undefined;
    const loc = fn ? image.lineTable.lookup(fn.address) : undefined;
    return loc ? { path: loc.file, line: loc.line } : undefined;
  }

  private address(loc: CodeLocation): number {
    const image = this.target().config.image;
    if ('address' in loc) return Number(loc.address);
    if ('function' in loc) {
      const fn = image.functionNamed(loc.function);
      if (!fn)
        throw new CycleLensError(ErrorCode.InvalidRequest, `${loc.function} is not a function of ${image.path}.`);
      return fn.address;
    }
    const addresses = image.lineTable.addressesForLine(loc.path, loc.line);
    if (addresses.length === 0) {
      throw new CycleLensError(
        ErrorCode.InvalidRequest,
        `Line ${loc.line} of ${loc.path} has no code in ${image.path} (a comment, a declaration, or ` +
          `optimised away): choose a line with a statement.`,
      );
    }
    return addresses[0]!;
  }

  private async serviceFor(target: DebugTarget): Promise<InjectionService> {
    if (this.service) return this.service;
    const { config } = target;
    const debug = target.debugger;
    const access = new DebuggerTargetAccess(debug);
    const server = config.server;
    const injection = archPlugin(config.family).injection;
    if (isUnsupported(injection)) throw new CycleLensError(ErrorCode.Unsupported, injection.unsupported);
    const memoryMap = server.type === 'qemu' ? config.facts.memoryMap : await this.debuggerMemoryMap(target);
    // OpenOCD and remote stubs tell their memory map only once connected: check the launch's range now.
    if (config.reservedMemory && memoryMap && server.type !== 'qemu')
      validateReservedMemory(config.reservedMemory, config.image, memoryMap);
    const reserved = resolveReservedMemory(config.image, {
      ...(config.reservedMemory ? { launch: config.reservedMemory } : {}),
      ...(memoryMap ? { memoryMap } : {}),
    });
    if ('ok' in reserved) throw new CycleLensError(ErrorCode.InvalidLaunchArgs, reserved.reason);
    // The interrupt sampler owns the top of a large reservation (adapter/sampling/interruptSampler.ts).
    const samplerShare = interruptSamplerShare(reserved);
    if (samplerShare) reserved.size -= samplerShare.size;
    const { support, counterUnitsPerInstruction } = injection.support(this.counters(), config.facts);
    this.service = new InjectionService({
      access,
      elf: config.image,
      support,
      isHalted: () => debug.executionState === 'stopped',
      journalDir: journalDir(config.cwd),
      reserved,
      ...(memoryMap ? { memoryMap } : {}),
      allowFlashWrites: config.allowFlashWrites,
      // A counter that is not an instruction counter (SysTick) advances at the ratio the target facts fix.
      ...(counterUnitsPerInstruction !== undefined ? { counterUnitsPerInstruction } : {}),
      // Calibration runs to its stubs through the one hidden run-to: its stops are never the user's.
      runner: {
        runTo: async (address, timeoutMs) => (await target.runTo(BigInt(address), { hidden: true, timeoutMs })).reached,
      },
      log: (line) => this.log({ category: 'console', text: line }),
    });
    return this.service;
  }

  private async debuggerMemoryMap(target: DebugTarget): Promise<MemoryRegion[] | undefined> {
    try {
      const map = await target.debugger.memoryRegions();
      return map.length > 0 ? map : undefined;
    } catch {
      return undefined;
    }
  }
}

/** A region's function and ends as the extension reads them: never parsed back out of its name. */
function regionFields(
  fn: string | undefined,
  start: number,
  end: number,
): NonNullable<InjectedMeasurementInfo['region']> {
  const hex = (n: number): string => `0x${n.toString(16)}`;
  return { ...(fn !== undefined ? { function: fn } : {}), start: hex(start), end: hex(end) };
}

function toWireInfo(
  info: MeasurementInfo,
  source: InjectedMeasurementInfo['source'],
  region: InjectedMeasurementInfo['region'],
  instructionsPerUnit: number | undefined,
): InjectedMeasurementInfo {
  return {
    id: info.id,
    name: info.name,
    kind: wireKind(info.kind),
    ...(info.members ? { members: info.members } : {}),
    payload: info.payload,
    counter: info.counter,
    ...(instructionsPerUnit !== undefined ? { instructionsPerUnit } : {}),
    warnings: info.warnings,
    ...(region ? { region } : {}),
    ...(source ? { source } : {}),
  };
}

function wireKind(kind: MeasurementKind): InjectedMeasurementInfo['kind'] {
  switch (kind) {
    case 'callSites':
      return 'call-sites';
    case 'function':
    case 'region':
    case 'group':
      return kind;
    default: {
      const never: never = kind;
      return never;
    }
  }
}

function toWireResult(r: MeasurementResults): InjectedResult {
  return {
    id: r.id,
    name: r.name,
    counter: r.counter,
    calls: r.calls,
    passes: r.passes,
    untracked: r.untracked,
    total: r.total,
    compensatedTotal: r.compensatedTotal,
    overheadPerPass: r.ownOverheadPerPass,
    nested: r.nested,
    min: r.min,
    max: r.max,
    mean: r.mean,
    meanCompensated: r.meanCompensated,
    lastPasses: r.last.compensated,
  };
}
