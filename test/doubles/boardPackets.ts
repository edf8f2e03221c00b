/**
 * TEST DOUBLE support — how the board double names and parses the packets GDB sends it (GDB manual,
 * "Remote Protocol": "Packets", "General Query Packets", "Host I/O"-free subset).
 */

/**
 * The kind a packet is counted under: `m`, `X`, `Z1`, `vCont`, `vFlashWrite`, `qXfer:features:read`,
 * `qSupported` … (a `v`/`q`/`Q` packet by its name, `qXfer` with its object and operation, `Z`/`z`
 * with its type, any other by its letter).
 */
export function packetKind(text: string): string {
  const c = text[0] ?? '';
  if (c === 'v') {
    if (text === 'vCont?') return 'vCont?';
    return /^v[A-Za-z]+/.exec(text)?.[0] ?? 'v';
  }
  if (c === 'q' || c === 'Q') {
    if (text.startsWith('qXfer:')) return text.split(':').slice(0, 3).join(':');
    return /^[qQ][A-Za-z]+/.exec(text)?.[0] ?? c;
  }
  if (c === 'Z' || c === 'z') return text.slice(0, 2);
  return c;
}

/** Whether a packet resumes the target (its reply is a stop reply, however long that takes). */
export function isResume(text: string): boolean {
  if (text.startsWith('vCont;')) return true;
  return /^[cCsS]/.test(text);
}

export interface BreakpointPacket {
  insert: boolean;
  /** 0 software, 1 hardware breakpoint, 2 write, 3 read, 4 access watchpoint. */
  type: number;
  address: number;
  /** Breakpoints: the instruction size (Thumb 2 or 4, RISC-V 2 or 4); watchpoints: bytes watched. */
  kind: number;
}

/** `Z<type>,<addr>,<kind>[;cond…]` and `z…`; undefined when the packet does not parse. */
export function parseBreakpoint(text: string): BreakpointPacket | undefined {
  const m = /^([Zz])([0-4]),([0-9a-fA-F]+),([0-9a-fA-F]+)/.exec(text);
  if (!m) return undefined;
  return { insert: m[1] === 'Z', type: Number(m[2]), address: parseInt(m[3]!, 16), kind: parseInt(m[4]!, 16) };
}

/** `m<addr>,<len>` or the head of `M<addr>,<len>:…` / `X<addr>,<len>:…`. */
export function parseAddressLength(text: string): { address: number; length: number } | undefined {
  const m = /^[mMX]([0-9a-fA-F]+),([0-9a-fA-F]+)/.exec(text);
  if (!m) return undefined;
  return { address: parseInt(m[1]!, 16), length: parseInt(m[2]!, 16) };
}

/** The bytes after the first `:` of a binary packet (`X`, `vFlashWrite`), already unescaped. */
export function binaryData(payload: Buffer, colonAfter = 0): Buffer {
  const colon = payload.indexOf(0x3a, colonAfter);
  return colon < 0 ? Buffer.alloc(0) : payload.subarray(colon + 1);
}
