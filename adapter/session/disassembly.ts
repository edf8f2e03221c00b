import type { DebugProtocol } from '@vscode/debugprotocol';
import type { DisassembledInstruction } from '../debugger/types';
import type { FamilyTraits } from '../arch/traits';

/**
 * Serves DAP `disassemble`: `count` instructions starting `instructionOffset` instructions away from
 * `base`. Variable-length instruction sets cannot be walked backwards, so the part before `base` is
 * disassembled from far enough back and the instructions that end exactly at `base` are kept.
 * The reply always has exactly `count` entries; what cannot be read is marked invalid.
 */
export async function disassemble(
  read: DisassemblyReader,
  traits: FamilyTraits,
  base: bigint,
  instructionOffset: number,
  count: number,
): Promise<DebugProtocol.DisassembledInstruction[]> {
  const maxLen = BigInt(traits.maxInstructionLength);
  const before: DisassembledInstruction[] = [];
  const wantBefore = Math.max(0, -instructionOffset);
  if (wantBefore > 0) {
    const from = base > BigInt(wantBefore) * maxLen ? base - BigInt(wantBefore) * maxLen : 0n;
    const got = await readRange(read, from, base);
    before.push(...got.filter((i) => i.address < base).slice(-wantBefore));
  }
  const skip = Math.max(0, instructionOffset);
  const wantAfter = count - Math.min(count, wantBefore) + skip;
  const after =
    wantAfter > 0 ? (await readRange(read, base, base + BigInt(wantAfter) * maxLen)).slice(skip, wantAfter) : [];

  const out: DebugProtocol.DisassembledInstruction[] = [];
  const toDap = dapConverter();
  const firstBefore = before[0]?.address ?? base;
  for (let i = before.length; i < Math.min(wantBefore, count); i++) {
    out.push(invalid(firstBefore - BigInt(wantBefore - i) * BigInt(traits.instructionAlignment)));
  }
  out.push(...before.slice(-Math.min(wantBefore, count)).map(toDap));
  out.push(...after.map(toDap));
  let next = after.length > 0 ? after[after.length - 1]!.address + BigInt(traits.instructionAlignment) : base;
  while (out.length < count) {
    out.push(invalid(next));
    next += BigInt(traits.instructionAlignment);
  }
  return out.slice(0, count);
}

/** Reads the instructions of [start, end) (GDB's `-data-disassemble`, possibly through a cache). */
export type DisassemblyReader = (start: bigint, end: bigint) => Promise<DisassembledInstruction[]>;

async function readRange(read: DisassemblyReader, start: bigint, end: bigint): Promise<DisassembledInstruction[]> {
  try {
    return await read(start, end);
  } catch {
    return [];
  }
}

/** DAP wants an instruction's source location only where it changes from the previous one. */
function dapConverter(): (i: DisassembledInstruction) => DebugProtocol.DisassembledInstruction {
  let lastLocation: string | undefined;
  return (i) => {
    const location = i.file && i.line !== undefined ? `${i.file}:${i.line}` : undefined;
    const showLocation = location !== undefined && location !== lastLocation;
    lastLocation = location;
    return {
      address: `0x${i.address.toString(16)}`,
      instruction: i.instruction,
      instructionBytes: i.opcodes,
      ...(i.functionName ? { symbol: `${i.functionName}+${i.offset ?? 0}` } : {}),
      ...(showLocation ? { location: { path: i.file!, name: i.file!.split('/').pop()! }, line: i.line! } : {}),
    };
  };
}

function invalid(address: bigint): DebugProtocol.DisassembledInstruction {
  return { address: `0x${address.toString(16)}`, instruction: '??', presentationHint: 'invalid' };
}
