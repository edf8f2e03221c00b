import { CycleLensError, ErrorCode } from '../../errors';
import type {
  BreakpointInfo,
  BreakpointLocation,
  DisassembledInstruction,
  Frame,
  StopReason,
  VarObject,
} from '../types';
import type { MiTuple } from './mi/types';
import { isTuple, miInt, miList, miOptInt, miOptString, miString } from './mi/values';

/** GDB/MI records read into the debugger-neutral types. */

export function mapStopReason(reason: string, signal: string | undefined): StopReason {
  switch (reason) {
    case 'breakpoint-hit':
      return 'breakpoint';
    case 'end-stepping-range':
    case 'location-reached':
      return 'step';
    case 'function-finished':
      return 'function-finished';
    case 'watchpoint-trigger':
    case 'read-watchpoint-trigger':
    case 'access-watchpoint-trigger':
      return 'watchpoint';
    case 'signal-received':
      // QEMU and OpenOCD report an interrupt as SIGINT (or SIGTRAP on some stubs): a pause.
      return signal === 'SIGINT' || signal === 'SIGTRAP' || signal === '0' ? 'pause' : 'exception';
    case '':
      return 'pause';
    default:
      return 'unknown';
  }
}

/** A location in GDB's linespec: `file:line`, `function`, `*function` (its first instruction), `*0xADDR`. */
export function gdbLocation(loc: BreakpointLocation): string {
  if (loc.kind === 'line') return `${loc.path}:${loc.line}`;
  if (loc.kind === 'address') return `*0x${loc.address.toString(16)}`;
  return loc.atEntry ? `*${loc.name}` : loc.name;
}

export function parseFrame(t: MiTuple): Frame {
  return {
    level: miOptInt(t, 'level') ?? 0,
    address: parseUnsigned(miString(t, 'addr')),
    func: miOptString(t, 'func'),
    file: miOptString(t, 'file'),
    fullname: miOptString(t, 'fullname'),
    line: miOptInt(t, 'line'),
  };
}

export function parseBreakpoint(t: MiTuple): BreakpointInfo {
  const addr = miOptString(t, 'addr');
  const pending = miOptString(t, 'pending');
  // A breakpoint with several locations (an inlined function) lists them; the first one is shown.
  const first = miList(t, 'locations').find(isTuple);
  const file = miOptString(t, 'fullname') ?? (first ? miOptString(first, 'fullname') : undefined);
  const line = miOptInt(t, 'line') ?? (first ? miOptInt(first, 'line') : undefined);
  const firstAddr = first ? miOptString(first, 'addr') : undefined;
  const concreteAddr = addr && /^0x/i.test(addr) ? addr : firstAddr && /^0x/i.test(firstAddr) ? firstAddr : undefined;
  return {
    id: miInt(t, 'number'),
    verified: pending === undefined && concreteAddr !== undefined,
    file,
    line,
    address: concreteAddr ? BigInt(concreteAddr) : undefined,
    pending: pending !== undefined,
  };
}

export function parseVarObject(t: MiTuple, expression: string): VarObject {
  return {
    name: miString(t, 'name'),
    expression,
    value: miOptString(t, 'value') ?? '',
    type: miOptString(t, 'type') ?? '',
    numChildren: miOptInt(t, 'numchild') ?? 0,
    dynamic: miOptString(t, 'dynamic') === '1',
  };
}

export function parseInstruction(
  t: MiTuple,
  file: string | undefined,
  line: number | undefined,
): DisassembledInstruction {
  return {
    address: parseUnsigned(miString(t, 'address')),
    opcodes: miOptString(t, 'opcodes') ?? '',
    instruction: miOptString(t, 'inst') ?? '',
    functionName: miOptString(t, 'func-name'),
    offset: miOptInt(t, 'offset'),
    file,
    line,
  };
}

/** GDB prints registers and addresses as hex (`0x…`), sometimes decimal or negative. */
export function parseUnsigned(text: string): bigint {
  const m = /^\s*(-?)(0x[0-9a-f]+|\d+)/i.exec(text);
  if (!m) throw new CycleLensError(ErrorCode.CommandFailed, `Expected a number from GDB, got '${text}'.`);
  const v = BigInt(m[2]!);
  return m[1] === '-' ? (1n << 64n) - v : v;
}
