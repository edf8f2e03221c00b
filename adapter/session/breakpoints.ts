import type { DebugProtocol } from '@vscode/debugprotocol';
import type { BreakpointInfo, BreakpointRequest } from '../debugger/types';
import type { Debugger } from '../debugger/debugger';
import { parseLocationSpec } from '../debugger/locations';
import { CycleLensError, ErrorCode, errorMessage } from '../errors';

/**
 * DAP hit conditions mapped onto GDB's ignore count: "N", "==N" and ">=N" stop from the N-th hit on
 * (GDB then keeps stopping, which is what VS Code users expect of ">=N"); ">N" from the next one.
 */
export function hitConditionToIgnoreCount(hit: string | undefined): number | undefined {
  if (hit === undefined || hit.trim() === '') return undefined;
  const m = /^\s*(==|>=|>)?\s*(\d+)\s*$/.exec(hit);
  if (!m) {
    throw new CycleLensError(
      ErrorCode.InvalidRequest,
      `Hit condition '${hit}' is not supported: use a number N (stop from the N-th hit), ">=N" or ">N".`,
    );
  }
  const n = Number(m[2]);
  return m[1] === '>' ? n : Math.max(0, n - 1);
}

type Kind = 'source' | 'function' | 'instruction';

/**
 * The user's breakpoints, by the DAP request that set them. Each DAP request replaces the whole set
 * of its kind (per file for source breakpoints), so the old GDB breakpoints are deleted first.
 */
export class BreakpointManager {
  private readonly owned = new Map<string, number[]>();

  constructor(private readonly gdb: () => Debugger) {}

  async setSourceBreakpoints(path: string, bps: DebugProtocol.SourceBreakpoint[]): Promise<DebugProtocol.Breakpoint[]> {
    return this.replace(
      'source',
      path,
      bps.map((b) => ({ ...this.common(b), location: { kind: 'line', path, line: b.line } })),
    );
  }

  async setFunctionBreakpoints(bps: DebugProtocol.FunctionBreakpoint[]): Promise<DebugProtocol.Breakpoint[]> {
    return this.replace(
      'function',
      '',
      bps.map((b) => ({ ...this.common(b), location: parseLocationSpec(b.name) })),
    );
  }

  async setInstructionBreakpoints(bps: DebugProtocol.InstructionBreakpoint[]): Promise<DebugProtocol.Breakpoint[]> {
    return this.replace(
      'instruction',
      '',
      bps.map((b) => {
        const address = BigInt(b.instructionReference) + BigInt(b.offset ?? 0);
        return { ...this.common(b), location: { kind: 'address', address } };
      }),
    );
  }

  private common(b: { condition?: string; hitCondition?: string }): Omit<BreakpointRequest, 'location'> {
    const ignoreCount = hitConditionToIgnoreCount(b.hitCondition);
    return { ...(b.condition ? { condition: b.condition } : {}), ...(ignoreCount ? { ignoreCount } : {}) };
  }

  private async replace(kind: Kind, key: string, requests: BreakpointRequest[]): Promise<DebugProtocol.Breakpoint[]> {
    const mapKey = `${kind}:${key}`;
    const gdb = this.gdb();
    await gdb.deleteBreakpoints(this.owned.get(mapKey) ?? []);
    const ids: number[] = [];
    const out: DebugProtocol.Breakpoint[] = [];
    for (const req of requests) {
      try {
        const info = await gdb.insertBreakpoint(req);
        ids.push(info.id);
        out.push(toDap(info));
      } catch (err) {
        out.push({ verified: false, message: errorMessage(err) });
      }
    }
    this.owned.set(mapKey, ids);
    return out;
  }

  /** Every user breakpoint's debugger number. */
  ids(): number[] {
    return [...this.owned.values()].flat();
  }

  /** Which kind of user breakpoint a GDB breakpoint number is, for the stop reason. */
  kindOf(id: number): Kind | undefined {
    for (const [key, ids] of this.owned) if (ids.includes(id)) return key.split(':')[0] as Kind;
    return undefined;
  }
}

function toDap(info: BreakpointInfo): DebugProtocol.Breakpoint {
  return {
    id: info.id,
    verified: info.verified,
    ...(info.line !== undefined ? { line: info.line } : {}),
    ...(info.file ? { source: { path: info.file } } : {}),
    ...(info.address !== undefined ? { instructionReference: `0x${info.address.toString(16)}` } : {}),
    ...(info.pending ? { message: 'Pending: the location is not in the loaded program yet.' } : {}),
  };
}
