import type { DecodedInstruction } from '../../arch/codec';
import type { FunctionCode, PatchShape } from './types';

/** Small pure helpers of the planner (planner.ts). */

/** How a patch shape jumps, for messages. */
export function describeShape(shape: PatchShape): string {
  switch (shape.kind) {
    case 'rvTp':
      return 'jalr x0, off(tp)';
    case 'rvJal':
      return 'jal x0';
    case 'rvAuipc':
      return 'auipc + jalr';
    case 'thumbBW':
      return 'B.W';
    case 'thumbLdrPc':
      return 'LDR.W pc, [pc] + literal';
  }
}

/** `x5, x7` for a register mask. */
export function regList(m: number): string {
  return Array.from({ length: 32 }, (_, r) => r)
    .filter((r) => (m & (1 << r)) !== 0)
    .map((r) => `x${r}`)
    .join(', ');
}

/** The displaced instructions that can execute: up to the first that never falls through. */
export function reachableDisplaced(displaced: readonly DecodedInstruction[]): DecodedInstruction[] {
  const k = displaced.findIndex(
    (x) => x.kind === 'branch' || x.kind === 'return' || x.kind === 'indirectBranch' || x.kind === 'tableBranch' || x.kind === 'exceptionReturn',
  );
  return k < 0 ? [...displaced] : displaced.slice(0, k + 1);
}

/**
 * A function with no way back to its caller: no return, no register jump and no branch out of its
 * own code (`exit` calling `_exit`, a semihosting exit loop). Calls inside it do not count: they come back.
 */
export function neverReturns(fn: FunctionCode): boolean {
  return fn.instructions.every((i) => {
    if (i.kind === 'return' || i.kind === 'exceptionReturn' || i.kind === 'indirectBranch' || i.kind === 'tableBranch') return false;
    if ((i.kind === 'branch' || i.kind === 'condBranch') && i.target !== undefined) return i.target >= fn.start && i.target < fn.end;
    return true;
  });
}
