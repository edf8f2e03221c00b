import type { DebugProtocol } from '@vscode/debugprotocol';
import type { TargetFamily } from '../../common/launchArgs';
import { familyTraits } from '../arch/traits';
import type { GdbBackend } from '../backend/gdb/gdbBackend';
import type { VarObject } from '../backend/types';

type Container =
  | { kind: 'locals'; threadId: number; level: number }
  | { kind: 'registers'; threadId: number; level: number; group: 'core' | 'other' }
  | { kind: 'varobj'; name: string; evaluateName: string; isArray: boolean };

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

  constructor(private readonly gdb: () => GdbBackend, private readonly family: TargetFamily) {}

  scopes(threadId: number, level: number): DebugProtocol.Scope[] {
    return [
      { name: 'Locals', presentationHint: 'locals', variablesReference: this.add({ kind: 'locals', threadId, level }), expensive: false },
      { name: 'Registers', presentationHint: 'registers', variablesReference: this.add({ kind: 'registers', threadId, level, group: 'core' }), expensive: false },
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
      default: {
        const never: never = c;
        throw new Error(`unknown container ${JSON.stringify(never)}`);
      }
    }
  }

  /** Evaluates an expression as a variable object, so structs and arrays can be expanded. */
  async evaluate(expression: string, threadId: number | undefined, level: number | undefined): Promise<DebugProtocol.Variable> {
    const v = await this.gdb().varCreate(expression, threadId, level);
    this.varobjs.push(v.name);
    return this.toVariable(v, expression, expression);
  }

  async setVariable(ref: number, name: string, value: string): Promise<string> {
    const c = this.containers.get(ref);
    if (c?.kind === 'registers') {
      await this.gdb().dataEvaluateExpression(`$${name}=${value}`, c.threadId, c.level);
      return this.gdb().dataEvaluateExpression(`$${name}`, c.threadId, c.level);
    }
    const varobj = this.childNames.get(`${ref}:${name}`);
    if (!varobj) throw new Error(`'${name}' cannot be changed here.`);
    return this.gdb().varAssign(varobj, value);
  }

  /** Forgets every reference and deletes GDB's variable objects: called when the target resumes. */
  async invalidate(): Promise<void> {
    const names = this.varobjs;
    this.containers = new Map();
    this.childNames = new Map();
    this.varobjs = [];
    this.nextRef = 1;
    const gdb = this.gdb();
    for (const n of names) await gdb.varDelete(n).catch(() => undefined);
  }

  private add(c: Container): number {
    const ref = this.nextRef++;
    this.containers.set(ref, c);
    return ref;
  }

  private async locals(ref: number, threadId: number, level: number): Promise<DebugProtocol.Variable[]> {
    const gdb = this.gdb();
    const names = await gdb.stackListVariables(threadId, level);
    const out: DebugProtocol.Variable[] = [];
    for (const { name } of names) {
      try {
        const v = await gdb.varCreate(name, threadId, level);
        this.varobjs.push(v.name);
        this.childNames.set(`${ref}:${name}`, v.name);
        out.push(this.toVariable(v, name, name));
      } catch (err) {
        out.push({ name, value: `<${err instanceof Error ? err.message : String(err)}>`, variablesReference: 0 });
      }
    }
    return out;
  }

  private async children(ref: number, parent: Extract<Container, { kind: 'varobj' }>): Promise<DebugProtocol.Variable[]> {
    const kids = await this.gdb().varListChildren(parent.name);
    return kids.map((k) => {
      const display = parent.isArray ? `[${k.expression}]` : k.expression;
      const evaluateName = parent.isArray ? `${parent.evaluateName}[${k.expression}]` : `(${parent.evaluateName}).${k.expression}`;
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
    const names = await gdb.dataListRegisterNames();
    const core = familyTraits(this.family).coreRegisters;
    const wanted = names.map((n, i) => ({ n, i })).filter(({ n }) => n !== '' && (group === 'core') === core.has(n));
    if (wanted.length === 0) return [];
    const values = await gdb.dataListRegisterValues(wanted.map((w) => w.i), threadId, level);
    const byNumber = new Map(values.map((v) => [v.number, v.value]));
    const out: DebugProtocol.Variable[] = wanted.map(({ n, i }) => ({
      name: n,
      value: byNumber.get(i) ?? '<unavailable>',
      evaluateName: `$${n}`,
      variablesReference: 0,
    }));
    if (group === 'core' && names.some((n) => n !== '' && !core.has(n))) {
      out.push({ name: 'System registers', value: '', variablesReference: this.add({ kind: 'registers', threadId, level, group: 'other' }) });
    }
    return out;
  }
}
