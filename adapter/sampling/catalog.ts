import type { SamplerDescription, SamplerId, StartSamplingArguments } from '../../common/dapCustom';
import { archPlugin } from '../arch/registry';
import { CycleLensError, ErrorCode } from '../errors';
import type { TargetFamily } from '../../common/launchArgs';
import type { OpenOcdServer } from '../servers/openocd';
import type { QemuServer } from '../servers/qemu';
import type { GdbServer } from '../servers/strategy';
import type { DebugTarget } from '../target/debugTarget';
import { HaltingSampler } from './haltingSampler';
import type { ElfImage } from '../elf';
import { resolveReservedMemory } from '../probe/injection/reservedMemory';
import type { MemoryRegion } from '../debugger/types';
import { DebuggerTargetAccess } from '../probe/targetAccess';
import { journalDir } from '../probe/injection';
import { INTERRUPT_IDENTITY, InterruptSampler, interruptSamplerShare, textRange } from './interruptSampler';
import type { InterruptSamplerPlan } from './interruptTypes';
import { MonitorSampler } from './monitorSampler';
import { PCSR_IDENTITY, PcsrSampler } from './pcsrSampler';
import { PluginSampler } from './pluginSampler';
import type { PcSampler, SamplerIdentity } from './sampler';
import type { RunState } from '../session/runState';

/** The halting sampler's default and ceiling: every sample is a GDB/MI interrupt and continue. */
const HALTING_DEFAULT_HZ = 50;
const HALTING_MAX_HZ = 400;
/** The interrupt sampler's default: samples per second of the target's virtual time. */
const INTERRUPT_DEFAULT_HZ = 100_000;

const identities: Record<SamplerId, SamplerIdentity> = {
  'qemu-plugin': {
    id: 'qemu-plugin',
    label: 'QEMU instruction counts (exact)',
    attribution: 'exact-count',
    halting: false,
    unit: 'instructions',
  },
  'qemu-monitor': {
    id: 'qemu-monitor',
    label: 'QEMU monitor (translation-block start)',
    attribution: 'translation-block-start',
    halting: false,
    unit: 'samples',
  },
  'openocd-pcsr': PCSR_IDENTITY,
  'target-interrupt': INTERRUPT_IDENTITY,
  'gdb-halting': {
    id: 'gdb-halting',
    label: 'GDB halting (interrupt, read PC, continue)',
    attribution: 'halting',
    halting: true,
    unit: 'samples',
  },
};

/**
 * What the oracle comparison measured (TIP error against exact instruction counts, 20,000 samples,
 * hotloop on both targets, loaded host; docs/benchmarks.md). The monitor reads in host time, and
 * TCG spends different host time on different guest instructions: no QEMU option tried (single-
 * instruction blocks, no block chaining, both) removes that bias, so the figures say so.
 */
const accuracy = {
  'qemu-plugin': 'exact: every executed instruction counted, equal to the oracle instruction for instruction',
  'qemu-monitor':
    'biased by host time per instruction: function-level error 9-28 %, line-level 17-53 % ' +
    'against exact counts; use qemu-plugin ("instructionCounts": true) for exact shares',
  'qemu-monitor-singlestep':
    'exact PC, but in host time: function-level error 8-13 %, line-level 10-18 % against exact ' +
    'counts, at a 16-52x slowdown',
  'openocd-pcsr':
    "not measured on a real core (no board runs here): against a double of OpenOCD's Tcl RPC " +
    'serving PCSR values from an exact instruction trace, function-level error 0.8-1.3 % and ' +
    'line-level 2.8-3.1 % after 20,000 samples, 0.4 % and 1.0 % after 200,000 (sampling noise); ' +
    'on silicon a value is a recently executed instruction, whose lag behind the one holding ' +
    'the core is not measured',
  'gdb-halting':
    'function-level error 17-18 %, line-level 32-35 % against exact counts, halting the target for every sample',
  'target-interrupt':
    'samples in virtual time at a random offset inside each interval, so shares follow ' +
    'instruction counts within the sampling noise (checked against the oracle on both QEMU ' +
    'targets); PCs are counted per bucket of 2^shift bytes',
};

/** Best first: exact counts, then non-halting reads, then the halting fallback. */
const preference: SamplerId[] = ['qemu-plugin', 'qemu-monitor', 'openocd-pcsr', 'target-interrupt', 'gdb-halting'];

/** What choosing a sampler looks at: the server strategy and the target family. */
export interface SamplerTargetFacts {
  server: GdbServer;
  config: {
    family: TargetFamily;
    /** The interrupt sampler needs these: the code its buckets cover and the RAM it may own. */
    image?: ElfImage;
    reservedMemory?: { start: number; size: number } | undefined;
    facts?: { qemu?: { machine: string }; memoryMap?: readonly MemoryRegion[] };
  };
}

/** The interrupt sampler's plan for this target, or what it needs. */
export function interruptPlan(
  target: SamplerTargetFacts,
  rateHz = INTERRUPT_DEFAULT_HZ,
): { plan: InterruptSamplerPlan; area: { start: number; size: number } } | { needs: string } {
  const arch = archPlugin(target.config.family).sampling.interruptSampler;
  const generic =
    'a core family with an interrupt sampler (RV32 on QEMU `virt`, Cortex-M on QEMU ' +
    '`mps2-an386`) and at least 32 KiB of reserved RAM';
  if (!arch) return { needs: generic };
  const { image, facts } = target.config;
  if (!image) return { needs: arch.needs };
  const reserved = resolveReservedMemory(image, {
    ...(target.config.reservedMemory ? { launch: target.config.reservedMemory } : {}),
    ...(facts?.memoryMap ? { memoryMap: facts.memoryMap } : {}),
  });
  if ('ok' in reserved) return { needs: `${arch.needs}: ${reserved.reason}` };
  const area = interruptSamplerShare(reserved);
  if (!area)
    return {
      needs:
        `${arch.needs}: the reserved RAM is ${reserved.size} bytes; give at least 32 KiB ` +
        `(\`__cyclelens_scratch_start\`/\`__cyclelens_scratch_end\` or \`reservedMemory\` in the ` +
        `launch configuration)`,
    };
  const machine = qemuOf(target) ? facts?.qemu?.machine : undefined;
  const plan = arch.plan({ machine, area, text: textRange(image), meanInterval: 1e9 / rateHz });
  if ('unsupported' in plan) return { needs: `${arch.needs} (${plan.unsupported})` };
  return { plan, area };
}

function qemuOf(target: SamplerTargetFacts): QemuServer | undefined {
  return target.server.kind === 'qemu' ? (target.server as QemuServer) : undefined;
}

function openOcdOf(target: SamplerTargetFacts): OpenOcdServer | undefined {
  return target.server.kind === 'openocd' ? (target.server as OpenOcdServer) : undefined;
}

/** Every sampler, with whether this session's target can use it and, if not, what it needs. */
export function describeSamplers(target: SamplerTargetFacts): SamplerDescription[] {
  const qemu = qemuOf(target);
  const openocd = openOcdOf(target);
  return preference.map((id): SamplerDescription => {
    const base = { ...identities[id], accuracy: accuracy[id] };
    switch (id) {
      case 'qemu-plugin':
        if (!qemu)
          return {
            ...base,
            available: false,
            needs: 'a QEMU server (`"server": { "type": "qemu", "instructionCounts": true }`)',
          };
        if (!qemu.instructionCountsFile)
          return {
            ...base,
            available: false,
            needs:
              '`"instructionCounts": true` in the launch configuration\'s `server` (QEMU then loads the ' +
              'counting plugin)',
          };
        return { ...base, available: true };
      case 'qemu-monitor':
        if (!qemu?.monitorSocket)
          return {
            ...base,
            available: false,
            needs: 'a QEMU server (`"server": { "type": "qemu" }`): it reads the PC through QEMU\'s monitor',
          };
        return qemu.singlestep
          ? {
              ...base,
              label: 'QEMU monitor (exact PC, -singlestep)',
              attribution: 'time-proportional',
              accuracy: accuracy['qemu-monitor-singlestep'],
              available: true,
            }
          : { ...base, available: true };
      case 'openocd-pcsr':
        if (!openocd || archPlugin(target.config.family).sampling.pcSampleRegister === undefined) {
          return {
            ...base,
            available: false,
            needs:
              'a Cortex-M target (`"family": "cortex-m"`) served by OpenOCD (`"server": { "type": ' +
              '"openocd", … }`) whose DWT has DWT_PCSR (ARMv7-M and ARMv8-M Mainline cores; optional on ' +
              "ARMv6-M): it reads DWT_PCSR through OpenOCD's Tcl RPC port",
          };
        }
        return { ...base, available: true };
      case 'target-interrupt': {
        const planned = interruptPlan(target);
        if ('needs' in planned) return { ...base, available: false, needs: planned.needs };
        return { ...base, semantics: planned.plan.semantics, available: true };
      }
      case 'gdb-halting':
        return { ...base, available: true };
    }
  });
}

/** The error when the sampler asked for (or any) cannot run here: every sampler, and what each needs. */
export function unavailableSampler(all: readonly SamplerDescription[], asked: SamplerId | undefined): CycleLensError {
  const list = all.map((s) => `${s.id} (${s.label}): ${s.available ? 'available' : `needs ${s.needs}`}`).join('; ');
  const what = asked
    ? `The sampler \`${asked}\` is not available on this target.`
    : 'No sampler is available on this target.';
  return new CycleLensError(ErrorCode.Unsupported, `${what} Samplers: ${list}.`);
}

/** Builds the sampler asked for (or the best available), or explains why none fits. */
export function createSampler(
  target: DebugTarget,
  args: StartSamplingArguments,
  log: (text: string) => void,
  runState: Pick<RunState, 'userProgramRuns' | 'freeRunning'> = {
    get userProgramRuns() {
      return !target.isEnded && target.debugger.isRunning;
    },
    get freeRunning() {
      return !target.isEnded && target.debugger.isRunning;
    },
  },
): PcSampler {
  const all = describeSamplers(target);
  const wanted = args.sampler ?? all.find((s) => s.available)?.id;
  const description = all.find((s) => s.id === wanted);
  if (!description || !description.available) throw unavailableSampler(all, args.sampler);
  if (args.rateHz !== undefined && !(args.rateHz > 0))
    throw new CycleLensError(ErrorCode.InvalidRequest, '`rateHz` must be a positive number of samples per second.');
  // Samples count only while the core runs the user's program: not halted, not resetting, not in
  // the adapter's own runs (the session's run state says whose run it is).
  const isRunning = () => !target.isEnded && target.debugger.isRunning && runState.userProgramRuns;
  const qemu = qemuOf(target);
  switch (description.id) {
    case 'qemu-plugin': {
      const sampler = new PluginSampler(qemu!.instructionCountsFile!, log);
      // QEMU's exit (the program's end, or the session's) writes the final counts; keep them
      // before the strategy removes its run directory.
      qemu!.onBeforeCleanup(() => sampler.captureFinal());
      return sampler;
    }
    case 'qemu-monitor':
      return new MonitorSampler({
        socketPath: qemu!.monitorSocket!,
        family: target.config.family,
        singlestep: qemu!.singlestep,
        isRunning,
        log,
        ...(args.rateHz ? { rateHz: args.rateHz } : {}),
      });
    case 'openocd-pcsr':
      return new PcsrSampler({
        tclPort: openOcdOf(target)!.ports.tcl,
        isRunning,
        log,
        ...(args.rateHz ? { rateHz: args.rateHz } : {}),
      });
    case 'target-interrupt': {
      const planned = interruptPlan(target, args.rateHz);
      if ('needs' in planned) throw unavailableSampler(all, args.sampler);
      return new InterruptSampler({
        ...planned,
        access: new DebuggerTargetAccess(target.debugger),
        withHalted: (fn) => target.withHalted(fn),
        isRunning,
        isEnded: () => target.isEnded,
        stepInstruction: () => target.stepInstructionInternally(),
        ...(qemu?.monitorSocket ? { monitorSocket: qemu.monitorSocket } : {}),
        journal: { dir: journalDir(target.config.cwd), elf: target.config.image },
        log,
      });
    }
    case 'gdb-halting':
      return new HaltingSampler({
        isRunning: () => isRunning() && runState.freeRunning,
        withHalted: (fn) => target.withHalted(fn),
        readPc: async () => Number(await target.debugger.readRegister('pc')),
        rateHz: Math.min(args.rateHz ?? HALTING_DEFAULT_HZ, HALTING_MAX_HZ),
        log,
      });
  }
}
