import type { DecodedInstruction } from '../../arch/codec';
import type { ProgramModel } from './programModel';
import type { FunctionCode, PatchShape, ProgramFacts } from './types';

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
    case 'thumbLdrPcFar':
      return 'LDR.W pc, [pc, #k] through the literal of the next entry patch';
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
    (x) =>
      x.kind === 'branch' ||
      x.kind === 'return' ||
      x.kind === 'indirectBranch' ||
      x.kind === 'tableBranch' ||
      x.kind === 'exceptionReturn',
  );
  return k < 0 ? [...displaced] : displaced.slice(0, k + 1);
}

/**
 * A function with no way back to its caller: no return, no register jump and no branch out of its
 * own code (`exit` calling `_exit`, a semihosting exit loop). Calls inside it do not count: they come back.
 */
export function neverReturns(fn: FunctionCode): boolean {
  return fn.instructions.every((i) => {
    if (i.kind === 'return' || i.kind === 'exceptionReturn' || i.kind === 'indirectBranch' || i.kind === 'tableBranch')
      return false;
    if ((i.kind === 'branch' || i.kind === 'condBranch') && i.target !== undefined)
      return i.target >= fn.start && i.target < fn.end;
    return true;
  });
}

/**
 * Addresses the program takes, for whether an indirect call can reach a function: every aligned
 * word of loaded memory (a function pointer in data, a table of handlers, a Thumb literal pool with
 * bit 0 set) and every address an instruction forms other than as a call or branch target (the
 * family's `AddressTaking.formed`: ADR; `auipc` + `addi`). A superset: a word that only looks like
 * an address costs a note, a missed one a value silently low. A sentence when the family cannot
 * tell what some code forms: any function may then be reached.
 */
export function takenAddresses(model: ProgramModel): Set<number> | string {
  const taking = model.arch.addressTaking;
  const clear = taking.modeBit ? ~1 : ~0;
  const taken = new Set<number>();
  for (const s of model.elf.sections) {
    if ((s.flags & 0x2) === 0 || s.size < 4 || s.type === 8) continue; // SHF_ALLOC; SHT_NOBITS holds no words
    const bytes = model.imageBytes(s.addr, s.size);
    if (!bytes) continue;
    const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    for (let o = (4 - (s.addr % 4)) % 4; o + 4 <= bytes.length; o += 4)
      taken.add((view.getUint32(o, true) & clear) >>> 0);
  }
  const tables = new Map(model.jumpTables.filter((t) => t.resolved).map((t) => [t.branch, t.targets]));
  const facts: ProgramFacts = {
    symbolAddress: (name) => model.elf.symbols.named(name)[0]?.address,
    tableTargets: (branch) => tables.get(branch),
  };
  for (const f of model.functions) {
    const formed = taking.formed(f, facts);
    if (typeof formed === 'string') return formed;
    for (const a of formed) taken.add((a & clear) >>> 0);
  }
  return taken;
}
