/**
 * Parses `objdump -d -w` output into instructions. Only what the oracle needs: address, size,
 * mnemonic, operands and the branch target objdump resolved. Data that objdump shows inside code
 * (`.word` literal pools, `.short` padding) is kept and marked, so a PC that lands on it is
 * reported instead of silently miscounted.
 */
export interface DisassembledInstruction {
  address: number;
  /** Bytes, from the raw encoding column (2 or 4 on Thumb-2 and RV32C). */
  size: number;
  /** The raw encoding as objdump prints it (halfwords/words, lowest address first). */
  encoding: string;
  mnemonic: string;
  operands: string;
  /** Target address objdump printed as `ADDR <symbol>` in the operands (direct branches). */
  target?: number;
  /** objdump's `<symbol>` header this instruction appears under. */
  label: string;
  /** `.word`, `.short`, `.byte`: literal data inside a code section. */
  isData: boolean;
}

const LINE = /^\s*([0-9a-f]+):\t([0-9a-f]{2,8}(?: [0-9a-f]{2,8})*)\s*\t([^\t\s]+)\s*(.*)$/;
const LABEL = /^([0-9a-f]+) <(.+)>:$/;
const TARGET = /(?:^|[\s,])([0-9a-f]+) <[^>]+>/;

export function parseObjdump(text: string): DisassembledInstruction[] {
  const out: DisassembledInstruction[] = [];
  let label = '';
  for (const raw of text.split('\n')) {
    const line = raw.trimEnd();
    const l = LABEL.exec(line);
    if (l) {
      label = l[2]!;
      continue;
    }
    const m = LINE.exec(line);
    if (!m) continue;
    const encoding = m[2]!;
    const mnemonic = m[3]!;
    let operands = m[4] ?? '';
    // Strip the trailing comment (`@ …` on Arm, `# …` on RISC-V) from the operands, but take a
    // resolved target from the operands themselves only (a comment names loaded data, not a jump).
    const comment = operands.search(/\s[@#]\s|^[@#]\s/);
    if (comment >= 0) operands = operands.slice(0, comment).trim();
    const t = TARGET.exec(operands);
    out.push({
      address: parseInt(m[1]!, 16),
      size: encoding.replace(/ /g, '').length / 2,
      encoding,
      mnemonic,
      operands,
      target: t ? parseInt(t[1]!, 16) : undefined,
      label,
      isData: mnemonic.startsWith('.'),
    });
  }
  return out;
}
