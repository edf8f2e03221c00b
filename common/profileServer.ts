/**
 * The profile language server's settings (lsp/), as an LSP client passes them: in
 * `initializationOptions`, and as the `cyclelens` section of the workspace configuration. Every
 * field is optional; the server fills in the defaults.
 */
export interface ProfileServerSettings {
  /** Inclusive share, in percent, from which a function gets a "hot" Information diagnostic (default 5). */
  hotThreshold?: number;
  /**
   * Compiled path prefix → local path prefix, as in a debugger's source map
   * (`{ "/build/src": "${workspaceFolder}/src" }`): DWARF names files as the compiler saw them.
   */
  sourceMap?: Record<string, string>;
  /** The client draws `$(icon)` codicons in CodeLens titles (VS Code does; most editors print them). */
  codicons?: boolean;
  /** Read this profile or result-set file instead of the newest one in `.cyclelens/`. */
  profile?: string;
}

/** The default of `hotThreshold`, in percent. */
export const DEFAULT_HOT_THRESHOLD = 5;

/**
 * `cyclelens/program`: the client tells the server which program it debugs now (the ELF of the
 * active CycleLens session, or none). While one is named, the server serves the newest profile
 * made from that ELF, or none: figures from another program's profile (an RV32 build of the same
 * sources while the Cortex-M4 one is debugged) would be wrong on every line. A client that never
 * sends it gets the workspace's newest profile.
 */
export const PROGRAM_NOTIFICATION = 'cyclelens/program';

export interface ProgramParams {
  /** The ELF's path on this machine; absent when no program is debugged. */
  executable?: string;
}
