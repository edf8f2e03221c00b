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
