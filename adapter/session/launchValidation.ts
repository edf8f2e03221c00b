import { existsSync, statSync } from 'node:fs';
import { isAbsolute, resolve } from 'node:path';
import type { CycleLensLaunchArgs, DebuggerKind, ServerArgs, TargetFamily } from '../../common/launchArgs';
import { archFamilies, archPlugin, isTargetFamily } from '../arch/registry';
import { ElfImage } from '../elf';
import { CycleLensError, ErrorCode } from '../errors';
import type { MemoryRegion } from '../probe/injection/memoryMap';
import { resolveReservedMemory } from '../probe/injection/reservedMemory';
import { computeTargetFacts, type TargetFacts } from '../target/targetFacts';

/** A launch configuration after validation: paths absolute, defaults applied, family known. */
export interface ValidatedLaunch {
  executable: string;
  /** The firmware image, read once at launch (symbols and lines load lazily). */
  image: ElfImage;
  cwd: string;
  family: TargetFamily;
  server: ServerArgs;
  /**
   * What is known of the target before connecting (RAM map, counter quirks, ticks per instruction),
   * computed once here.
   */
  facts: TargetFacts;
  debugger: DebuggerKind;
  gdbPath: string;
  lldbPython: string;
  /** Function to stop at after launch, or undefined to run freely. */
  stopAtEntry: string | undefined;
  /** Where a single-pass program's work ends (see CycleLensLaunchArgs.programEnd). */
  programEnd: string | undefined;
  reservedMemory: { start: number; size: number } | undefined;
  allowFlashWrites: boolean;
  initCommands: string[];
  postConnectCommands: string[];
  trace: boolean;
}

const invalid = (message: string): never => {
  throw new CycleLensError(ErrorCode.InvalidLaunchArgs, `Launch configuration: ${message}`);
};

function isStringArray(v: unknown): v is string[] {
  return Array.isArray(v) && v.every((s) => typeof s === 'string');
}

function optionalStrings(v: unknown, field: string): string[] {
  if (v === undefined) return [];
  if (!isStringArray(v)) invalid(`\`${field}\` must be a list of strings.`);
  return v as string[];
}

export function validateServer(raw: unknown, cwd: string): ServerArgs {
  if (typeof raw !== 'object' || raw === null) invalid('`server` is missing. Add e.g. `"server": { "type": "qemu" }`.');
  const s = raw as Record<string, unknown>;
  switch (s['type']) {
    case 'qemu': {
      if (
        s['icount'] !== undefined &&
        s['icount'] !== null &&
        !(Number.isInteger(s['icount']) && (s['icount'] as number) >= 0 && (s['icount'] as number) <= 10)
      ) {
        invalid('`server.icount` must be an integer shift from 0 to 10, or null to turn instruction counting off.');
      }
      for (const key of ['machine', 'cpu', 'path'] as const) {
        if (s[key] !== undefined && typeof s[key] !== 'string') invalid(`\`server.${key}\` must be a string.`);
      }
      for (const key of ['instructionCounts', 'singlestep'] as const) {
        if (s[key] !== undefined && typeof s[key] !== 'boolean') invalid(`\`server.${key}\` must be true or false.`);
      }
      return { ...(s as object), type: 'qemu', args: optionalStrings(s['args'], 'server.args') };
    }
    case 'openocd': {
      const configFiles = optionalStrings(s['configFiles'], 'server.configFiles');
      if (configFiles.length === 0)
        invalid(
          '`server.configFiles` is empty: list your interface and target files, e.g. ' +
            '["interface/stlink.cfg", "target/stm32f4x.cfg"].',
        );
      for (const key of ['gdbPort', 'tclPort', 'telnetPort'] as const) {
        const v = s[key];
        if (v !== undefined && !(Number.isInteger(v) && (v as number) > 0 && (v as number) < 65536))
          invalid(`\`server.${key}\` must be a TCP port number (1–65535), or left out to pick a free one.`);
      }
      return {
        ...(s as object),
        type: 'openocd',
        configFiles,
        searchDirs: optionalStrings(s['searchDirs'], 'server.searchDirs').map((d) =>
          isAbsolute(d) ? d : resolve(cwd, d),
        ),
        commands: optionalStrings(s['commands'], 'server.commands'),
      };
    }
    case 'remote': {
      if (typeof s['address'] !== 'string' || !/^[^:]*:\d+$/.test(s['address']))
        invalid('`server.address` must be "host:port", e.g. "localhost:3333".');
      return { ...(s as object), type: 'remote', address: s['address'] as string };
    }
    default:
      return invalid(`\`server.type\` must be "qemu", "openocd" or "remote" (got ${JSON.stringify(s['type'])}).`);
  }
}

/** Checks a launch/attach request's arguments and fills in defaults. Throws a user-facing error. */
export function validateLaunchArgs(
  raw: Partial<CycleLensLaunchArgs> & Record<string, unknown>,
  workspaceDir = process.cwd(),
): ValidatedLaunch {
  const cwd = typeof raw.cwd === 'string' ? raw.cwd : workspaceDir;
  if (typeof raw.executable !== 'string' || raw.executable.trim() === '') {
    invalid('`executable` is missing. Set it to your firmware ELF, e.g. "${workspaceFolder}/build/firmware.elf".');
  }
  const executable = isAbsolute(raw.executable!) ? raw.executable! : resolve(cwd, raw.executable!);
  if (!existsSync(executable)) {
    throw new CycleLensError(
      ErrorCode.ExecutableNotFound,
      `The executable ${executable} does not exist. Build the firmware first, or correct ` +
        `\`executable\` in launch.json.`,
    );
  }
  if (!statSync(executable).isFile()) {
    throw new CycleLensError(
      ErrorCode.NotAnElf,
      `${executable} is not a file. Point \`executable\` at the linked .elf.`,
    );
  }
  const image = ElfImage.loadSync(executable);
  const detected = image.family;
  if (raw.family !== undefined && !isTargetFamily(raw.family)) {
    invalid(
      `\`family\` must be ${archFamilies.map((f) => `"${f}"`).join(', ')} (or leave it out to read it from the ELF).`,
    );
  }
  if (raw.family !== undefined && raw.family !== detected) {
    invalid(
      `\`family\` is "${raw.family}" but ${executable} is built for ${detected}. Remove ` +
        `\`family\` or fix \`executable\`.`,
    );
  }
  const stop = raw.stopAtEntry;
  if (stop !== undefined && typeof stop !== 'boolean' && typeof stop !== 'string')
    invalid('`stopAtEntry` must be true, false or a function name.');
  if (raw.gdbPath !== undefined && typeof raw.gdbPath !== 'string') invalid('`gdbPath` must be a string.');
  if (raw.lldbPython !== undefined && typeof raw.lldbPython !== 'string') invalid('`lldbPython` must be a string.');
  if (raw.debugger !== undefined && raw.debugger !== 'gdb' && raw.debugger !== 'lldb')
    invalid('`debugger` must be "gdb" or "lldb" (or leave it out for GDB).');
  if (!image.section('.symtab')) {
    throw new CycleLensError(
      ErrorCode.NotAnElf,
      `${executable} has no symbols: pass the unstripped ELF the linker wrote (built with -g), not a stripped copy.`,
    );
  }
  const server = validateServer(raw.server, cwd);
  const facts = computeTargetFacts(detected, server);
  const reserved = validateReservedMemory(raw.reservedMemory, image, facts.memoryMap);
  // An address (`*0x…`) or a `file.c:LINE` is GDB's to resolve; a plain name must be a function of the ELF.
  if (typeof stop === 'string' && /^[A-Za-z_.$][\w.$]*$/.test(stop) && !image.functionNamed(stop)) {
    invalid(
      `\`stopAtEntry\` (the command line's --start) names no function of ${executable}: ${JSON.stringify(stop)}. ` +
        `Name a function the program defines, such as "main", or set it to false to run freely.`,
    );
  }
  if (raw.programEnd !== undefined && (typeof raw.programEnd !== 'string' || !image.functionNamed(raw.programEnd))) {
    invalid(`\`programEnd\` must name a function of ${executable} (got ${JSON.stringify(raw.programEnd)}).`);
  }
  return {
    executable,
    image,
    cwd,
    family: detected,
    server,
    facts,
    debugger: raw.debugger ?? 'gdb',
    lldbPython: raw.lldbPython ?? 'python3',
    gdbPath: raw.gdbPath ?? archPlugin(detected).defaultGdb,
    stopAtEntry: stop === false ? undefined : stop === true || stop === undefined ? 'main' : stop,
    programEnd: raw.programEnd ?? ['exit', '_exit'].find((name) => image.functionNamed(name)),
    reservedMemory: reserved,
    allowFlashWrites: raw.allowFlashWrites === true,
    initCommands: optionalStrings(raw.initCommands, 'initCommands'),
    postConnectCommands: optionalStrings(raw.postConnectCommands, 'postConnectCommands'),
    trace: raw.trace === true,
  };
}

const hex32 = (n: number): string => `0x${n.toString(16).padStart(8, '0')}`;

/** `"reservedMemory": { … }` with a range the program does not use, for error messages. */
function reservedExample(image: ElfImage, map: readonly MemoryRegion[] | undefined): string {
  const gap = map ? resolveReservedMemory(image, { memoryMap: map }) : undefined;
  const start = gap && !('ok' in gap) ? gap.start : (map?.find((r) => r.kind === 'ram')?.start ?? 0x20000000);
  return `"reservedMemory": { "start": "${hex32(start)}", "size": 4096 }`;
}

function ramList(map: readonly MemoryRegion[]): string {
  return map
    .filter((r) => r.kind === 'ram')
    .map((r) => `${hex32(r.start)}-${hex32(r.start + r.size - 1)}${r.name ? ` (${r.name})` : ''}`)
    .join(', ');
}

/**
 * `reservedMemory` checked against the ELF's sections and, where known, the target's RAM: a range
 * outside RAM would be accepted by nothing but the injector, which would place its payload there and
 * crash the program ("program ended early" is all the user would see).
 */
export function validateReservedMemory(
  raw: unknown,
  image: ElfImage,
  givenMap: readonly MemoryRegion[] | undefined,
): { start: number; size: number } | undefined {
  if (raw === undefined) return undefined;
  // A map without RAM in it (a stub that sends none) says nothing about where RAM is.
  const map = givenMap?.some((x) => x.kind === 'ram') ? givenMap : undefined;
  const example = reservedExample(image, map);
  const allowed = map ? ` RAM on this target: ${ramList(map)}.` : '';
  const shape =
    `\`reservedMemory\` must be an object \`{ "start": address, "size": bytes }\` naming RAM ` +
    `the program never uses (or be left out), e.g. ${example}.${allowed}`;
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) invalid(`${shape} Got ${JSON.stringify(raw)}.`);
  const r = raw as Record<string, unknown>;
  const start = typeof r.start === 'string' && /^(0x[0-9a-f]+|\d+)$/i.test(r.start.trim()) ? Number(r.start) : r.start;
  if (typeof start !== 'number' || !Number.isInteger(start) || start < 0 || start > 0xffff_ffff)
    invalid(
      `\`reservedMemory.start\` must be a 32-bit address such as "0x20070000" (got ${JSON.stringify(r.start)}). ` +
        `${shape}`,
    );
  const size = r.size;
  if (typeof size !== 'number' || !Number.isInteger(size) || size <= 0)
    invalid(`\`reservedMemory.size\` must be a positive number of bytes (got ${JSON.stringify(size)}). ${shape}`);
  const s = start as number;
  const n = size as number;
  if (s + n > 0x1_0000_0000)
    invalid(`\`reservedMemory\` (${hex32(s)}, ${n} bytes) runs past the end of the 32-bit address space. ${shape}`);
  if (map && !map.some((x) => x.kind === 'ram' && s >= x.start && s + n <= x.start + x.size)) {
    invalid(
      `\`reservedMemory\` (${hex32(s)}-${hex32(s + n - 1)}) is not inside the target's RAM.${allowed} ` +
        `Reserve RAM the program never uses, e.g. ${example}.`,
    );
  }
  const checked = resolveReservedMemory(image, { launch: { start: s, size: n } });
  if ('ok' in checked) invalid(`\`reservedMemory\`: ${checked.reason} For example ${example}.`);
  return { start: s, size: n };
}
