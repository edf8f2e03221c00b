import type { DebugProtocol } from '@vscode/debugprotocol';
import type { TargetFamily } from '../../common/launchArgs';
import { familyTraits } from '../arch/traits';
import type { Debugger } from '../debugger/debugger';
import type { FileScopeVariable, VarObject } from '../debugger/types';

type Container =
  | { kind: 'locals'; threadId: number; level: number }
  | { kind: 'registers'; threadId: number; level: number; group: 'core' | 'other' }
  | { kind: 'varobj'; name: string; evaluateName: string; isArray: boolean }
  | { kind: 'local'; expression: string; threadId: number; level: number; isArray: boolean }
  | { kind: 'fileScope'; threadId: number; level: number; statics: boolean; path: string | undefined };

/** More variables than this in one scope are listed up to here, with a note (each is a GDB round trip). */
const MAX_FILE_SCOPE_VARIABLES = 1000;

/**
 * Variables, scopes and watch values for one stop. References handed to the client are valid
 * until the target runs again; the GDB variable objects behind them are deleted then.
 */
export class VariableStore {
  private containers = new Map<number, Container>();
  private nextRef = 1;
  private varobjs: string[] = [];
  /** varobj name of each child by (container ref, child display name), for setVariable. */
  private childNames = new Map<string, string>();
  /** Locals listed by value without a variable object, by (container ref, name): their frame. */
  private simpleLocals = new Map<string, { threadId: number; level: number }>();
  /** The program's file-scope variables: read once, the symbol table does not change while debugging. */
  private fileScope: Promise<FileScopeVariable[]> | undefined;

  constructor(
    private readonly gdb: () => Debugger,
    private readonly family: TargetFamily,
  ) {}

  /**
   * Locals and registers of the frame, then the program's globals and the statics of the frame's
   * source file (`path`). The last two are marked expensive, so the client lists them only when the
   * user expands them.
   */
  scopes(threadId: number, level: number, path?: string): DebugProtocol.Scope[] {
    return [
      {
        name: 'Locals',
        presentationHint: 'locals',
        variablesReference: this.add({ kind: 'locals', threadId, level }),
        expensive: false,
      },
      {
        name: 'Registers',
        presentationHint: 'registers',
        variablesReference: this.add({ kind: 'registers', threadId, level, group: 'core' }),
        expensive: false,
      },
      {
        name: 'Globals',
        variablesReference: this.add({ kind: 'fileScope', threadId, level, statics: false, path }),
        expensive: true,
      },
      ...(path
        ? [
            {
              name: 'Statics',
              variablesReference: this.add({ kind: 'fileScope', threadId, level, statics: true, path }),
              expensive: true,
            },
          ]
        : []),
    ];
  }

  async variables(ref: number): Promise<DebugProtocol.Variable[]> {
    const c = this.containers.get(ref);
    if (!c) return [];
    switch (c.kind) {
      case 'locals':
        return this.locals(ref, c.threadId, c.level);
      case 'registers':
        return this.registers(c.threadId, c.level, c.group);
      case 'varobj':
        return this.children(ref, c);
      case 'local': {
        // Expanded for the first time: now it needs a variable object.
        const v = await this.gdb().createVariable(c.expression, c.threadId, c.level);
        this.varobjs.push(v.name);
        const parent = { kind: 'varobj' as const, name: v.name, evaluateName: c.expression, isArray: c.isArray };
        this.containers.set(ref, parent);
        return this.children(ref, parent);
      }
      case 'fileScope':
        return this.fileScopeVariables(ref, c);
      default: {
        const never: never = c;
        throw new Error(`unknown container ${JSON.stringify(never)}`);
      }
    }
  }

  /** Evaluates an expression as a variable object, so structs and arrays can be expanded. */
  async evaluate(
    expression: string,
    threadId: number | undefined,
    level: number | undefined,
  ): Promise<DebugProtocol.Variable> {
    const v = await this.gdb().createVariable(expression, threadId, level);
    this.varobjs.push(v.name);
    return this.toVariable(v, expression, expression);
  }

  async setVariable(ref: number, name: string, value: string): Promise<string> {
    const c = this.containers.get(ref);
    if (c?.kind === 'registers') {
      await this.gdb().evaluate(`$${name}=${value}`, c.threadId, c.level);
      return this.gdb().evaluate(`$${name}`, c.threadId, c.level);
    }
    const simple = this.simpleLocals.get(`${ref}:${name}`);
    if (simple && !this.childNames.has(`${ref}:${name}`)) {
      const v = await this.gdb().createVariable(name, simple.threadId, simple.level);
      this.varobjs.push(v.name);
      this.childNames.set(`${ref}:${name}`, v.name);
    }
    const varobj = this.childNames.get(`${ref}:${name}`);
    if (!varobj) throw new Error(`'${name}' cannot be changed here.`);
    return this.gdb().assignVariable(varobj, value);
  }

  /** Forgets every reference and deletes GDB's variable objects: called when the target resumes. */
  async invalidate(): Promise<void> {
    const names = this.varobjs;
    this.containers = new Map();
    this.childNames = new Map();
    this.simpleLocals = new Map();
    this.varobjs = [];
    this.nextRef = 1;
    const gdb = this.gdb();
    // Sent together: GDB answers in order, one round trip for all of them.
    await Promise.all(names.map((n) => gdb.deleteVariable(n).catch(() => undefined)));
  }

  private add(c: Container): number {
    const ref = this.nextRef++;
    this.containers.set(ref, c);
    return ref;
  }

  /**
   * One round trip lists the frame's variables with the values of the simple ones. None becomes a
   * GDB variable object yet: an expandable one (aggregate, pointer) gets it when the user expands
   * it, a simple one when the user changes it.
   */
  private async locals(ref: number, threadId: number, level: number): Promise<DebugProtocol.Variable[]> {
    const listed = await this.gdb().frameVariables(threadId, level);
    return listed.map(({ name, type, value }): DebugProtocol.Variable => {
      this.simpleLocals.set(`${ref}:${name}`, { threadId, level });
      const isArray = /\[\d*\]$/.test(type);
      // What GDB shows for an aggregate's value: `[N]` for an array, `{...}` for a struct or union.
      const shown = value ?? (isArray ? `[${/\[(\d*)\]$/.exec(type)![1]}]` : '{...}');
      const expandable = value === undefined || /[*&]/.test(type);
      return {
        name,
        value: shown,
        type,
        evaluateName: name,
        variablesReference: expandable ? this.add({ kind: 'local', expression: name, threadId, level, isArray }) : 0,
        memoryReference: `&(${name})`,
      };
    });
  }

  private async fileScopeVariables(
    ref: number,
    c: Extract<Container, { kind: 'fileScope' }>,
  ): Promise<DebugProtocol.Variable[]> {
    const gdb = this.gdb();
    this.fileScope ??= gdb.fileScopeVariables().catch((err: unknown) => {
      this.fileScope = undefined;
      throw err;
    });
    const all = await this.fileScope;
    const wanted = fileScopeSelection(all, c.statics ? { staticsOf: c.path } : 'globals');
    const out: DebugProtocol.Variable[] = [];
    for (const v of wanted.slice(0, MAX_FILE_SCOPE_VARIABLES)) {
      // A static is named through its file: two files may each have their own `count`.
      const expression = v.isStatic ? `'${baseName(v.file)}'::${v.name}` : v.name;
      try {
        const obj = await gdb.createVariable(expression, c.threadId, c.level);
        this.varobjs.push(obj.name);
        this.childNames.set(`${ref}:${v.name}`, obj.name);
        out.push(this.toVariable(obj, v.name, expression));
      } catch (err) {
        out.push({
          name: v.name,
          value: `<${err instanceof Error ? err.message : String(err)}>`,
          variablesReference: 0,
        });
      }
    }
    if (wanted.length > MAX_FILE_SCOPE_VARIABLES) {
      out.push({
        name: '…',
        value: `${wanted.length - MAX_FILE_SCOPE_VARIABLES} more; add them to Watch by name`,
        variablesReference: 0,
      });
    }
    return out;
  }

  private async children(
    ref: number,
    parent: Extract<Container, { kind: 'varobj' }>,
  ): Promise<DebugProtocol.Variable[]> {
    const kids = await this.gdb().variableChildren(parent.name);
    return kids.map((k) => {
      const display = parent.isArray ? `[${k.expression}]` : k.expression;
      const evaluateName = parent.isArray
        ? `${parent.evaluateName}[${k.expression}]`
        : `(${parent.evaluateName}).${k.expression}`;
      this.childNames.set(`${ref}:${display}`, k.name);
      return this.toVariable(k, display, evaluateName);
    });
  }

  private toVariable(v: VarObject, display: string, evaluateName: string): DebugProtocol.Variable {
    const expandable = v.numChildren > 0 || v.dynamic;
    const isArray = /\[\d*\]$/.test(v.type);
    return {
      name: display,
      value: v.value,
      type: v.type,
      evaluateName,
      variablesReference: expandable ? this.add({ kind: 'varobj', name: v.name, evaluateName, isArray }) : 0,
      ...(expandable ? { [isArray ? 'indexedVariables' : 'namedVariables']: v.numChildren } : {}),
      // The memory view opens on the object's storage.
      memoryReference: `&(${evaluateName})`,
    };
  }

  private async registers(threadId: number, level: number, group: 'core' | 'other'): Promise<DebugProtocol.Variable[]> {
    const gdb = this.gdb();
    const names = await gdb.registerNames();
    const core = familyTraits(this.family).coreRegisters;
    const wanted = names.map((n, i) => ({ n, i })).filter(({ n }) => n !== '' && (group === 'core') === core.has(n));
    if (wanted.length === 0) return [];
    const values = await gdb.registerValues(
      wanted.map((w) => w.i),
      threadId,
      level,
    );
    const byNumber = new Map(values.map((v) => [v.number, v.value]));
    const out: DebugProtocol.Variable[] = wanted.map(({ n, i }) => ({
      name: n,
      value: byNumber.get(i) ?? '<unavailable>',
      evaluateName: `$${n}`,
      variablesReference: 0,
    }));
    if (group === 'core' && names.some((n) => n !== '' && !core.has(n))) {
      out.push({
        name: 'System registers',
        value: '',
        variablesReference: this.add({ kind: 'registers', threadId, level, group: 'other' }),
      });
    }
    return out;
  }
}

/**
 * Which file-scope variables a scope lists: every global of the program (each name once: a global
 * has one definition), or the statics of one source file, matched by absolute path, else by the
 * file name the compiler recorded. Sorted by name.
 */
export function fileScopeSelection(
  all: readonly FileScopeVariable[],
  which: 'globals' | { staticsOf: string | undefined },
): FileScopeVariable[] {
  let picked: FileScopeVariable[];
  if (which === 'globals') {
    const seen = new Set<string>();
    picked = all.filter((v) => !v.isStatic && !seen.has(v.name) && (seen.add(v.name), true));
  } else {
    const path = which.staticsOf;
    if (!path) return [];
    picked = all.filter(
      (v) => v.isStatic && (v.fullname === path || (v.fullname === undefined && path.endsWith(`/${v.file}`))),
    );
  }
  return picked.sort((a, b) => a.name.localeCompare(b.name));
}

function baseName(file: string): string {
  return file.slice(file.lastIndexOf('/') + 1);
}
