/**
 * The `cyclelens` launch/attach configuration: declared once here, imported with `import type` by the
 * extension (configuration provider), validated by the adapter (adapter/session/launchValidation.ts)
 * and mirrored for users in package.json `contributes.debuggers[0].configurationAttributes`.
 */

/**
 * Core families CycleLens knows (one plugin each under adapter/arch/); detected from the ELF's
 * e_machine when not given. The one family type: the ELF reader, the plugins and injection use it.
 */
export type TargetFamily = 'cortex-m' | 'riscv' | 'arc';

/** QEMU as a gdbserver: no hardware needed. */
export interface QemuServerArgs {
  /** The gdbserver strategy: QEMU's own gdbstub. */
  type: 'qemu';
  /** QEMU machine (`-M`), e.g. `mps2-an386` or `virt`. Default: `mps2-an386` for Cortex-M, `virt` for RISC-V. */
  machine?: string;
  /** QEMU CPU model (`-cpu`), when the machine's default is not wanted. */
  cpu?: string;
  /** QEMU executable. Default: `qemu-system-arm` or `qemu-system-riscv32` by family. */
  path?: string;
  /** `-icount shift=N`: deterministic virtual time (1 instruction = 2^N ns). `null` turns it off. Default 0. */
  icount?: number | null;
  /** Extra QEMU arguments, appended last. */
  args?: string[];
  /** Load CycleLens's instruction-counting TCG plugin: the exact sampler (`qemu-plugin`). */
  instructionCounts?: boolean;
  /**
   * One instruction per translation block (`-singlestep`): the monitor sampler then reads exact PCs,
   * at a measured slowdown.
   */
  singlestep?: boolean;
}

/** OpenOCD in front of a real probe and board. */
export interface OpenOcdServerArgs {
  /** The gdbserver strategy: OpenOCD, started with free GDB, Tcl and telnet ports. */
  type: 'openocd';
  /** OpenOCD executable. Default: `openocd` on PATH. */
  path?: string;
  /** Configuration files (`-f`), e.g. `interface/stlink.cfg`, `target/stm32f4x.cfg`. */
  configFiles: string[];
  /** Script search directories (`-s`). */
  searchDirs?: string[];
  /** Extra commands (`-c`) run after the configuration files. */
  commands?: string[];
  /** Load the executable into the target after connecting (launch only). Default true. */
  load?: boolean;
  /** Fixed GDB port (e.g. to attach a second GDB); default: a free one. */
  gdbPort?: number;
  /** Fixed Tcl RPC port; default: a free one. */
  tclPort?: number;
  /** Fixed telnet port; default: a free one. */
  telnetPort?: number;
}

/** Any gdbserver that is already running (J-Link, pyOCD, nSIM, a board's own stub …). */
export interface RemoteServerArgs {
  /** The gdbserver strategy: one that is already listening. */
  type: 'remote';
  /** `host:port` of the gdbserver. */
  address: string;
  /** Load the executable into the target after connecting (launch only). Default false. */
  load?: boolean;
}

export type DebuggerKind = 'gdb' | 'lldb';

export type ServerArgs = QemuServerArgs | OpenOcdServerArgs | RemoteServerArgs;
export type ServerKind = ServerArgs['type'];

/** Arguments shared by `launch` and `attach`. */
export interface CycleLensLaunchArgs {
  /** The firmware ELF, with debug information for source-level work. */
  executable: string;
  /** How the target is reached. */
  server: ServerArgs;
  /** Core family. Default: from the ELF header. */
  family?: TargetFamily;
  /** The debugger CycleLens drives: `gdb` (every family) or `lldb` (LLDB 14: Cortex-M only). Default `gdb`. */
  debugger?: DebuggerKind;
  /** GDB executable. Default: `gdb-multiarch`. */
  gdbPath?: string;
  /** LLDB's Python 3 interpreter (with the `lldb` module) for `debugger: "lldb"`. Default: `python3`. */
  lldbPython?: string;
  /** Where to stop after launch: a function name, `true` for `main`, `false` to run freely. Default `main`. */
  stopAtEntry?: boolean | string;
  /**
   * The function a single-pass program calls when its work is done (e.g. `exit`): profiling runs
   * stop there, before the program ends, so the next run can restart. Default: `exit` or `_exit`.
   */
  programEnd?: string;
  /**
   * RAM that injected measurements may own (code cave, records), e.g. `{ "start": "0x20070000", "size": 4096 }`.
   * Default: the linker symbols `__cyclelens_scratch_start`/`__cyclelens_scratch_end`, else — with a
   * warning — RAM no section of the ELF occupies.
   */
  reservedMemory?: { start: string | number; size: number };
  /** Let injected measurements patch code in flash by reprogramming it (off by default). */
  allowFlashWrites?: boolean;
  /** GDB commands run before connecting (e.g. `set remotetimeout 5`). */
  initCommands?: string[];
  /** GDB commands run after connecting and before the first stop is reported. */
  postConnectCommands?: string[];
  /** Working directory for relative paths. Default: the workspace folder. */
  cwd?: string;
  /**
   * Source paths as compiled → where they are here, e.g. `{ "/build/fw": "${workspaceFolder}" }`
   * (live hotspots, views).
   */
  sourceMap?: Record<string, string>;
  /** Log every DAP and MI exchange to the Debug Console. */
  trace?: boolean;
}

/** Fields VS Code itself adds to every configuration. */
export interface DebugConfigurationBase {
  type: 'cyclelens';
  request: 'launch' | 'attach';
  name: string;
}
