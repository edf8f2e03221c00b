import type { Profile, Unit } from '../profile/model';
import { ProfileError } from '../profile/profileError';
import { GMON_MAGIC, GMON_TAG_CG_ARC, GMON_TAG_TIME_HIST, evenAddress } from '../export/gmon';
import { MAX_IMPORT_BYTES, ProfileBuilder, malformed } from './common';

/**
 * gprof's gmon.out (version 1, the format core/export/gmon.ts writes; binutils gprof/gmon_out.h) as
 * a profile. Histogram bins are credited whole to the symbol holding the bin's first address, arcs
 * give calls and edges. gmon.out holds no names: pass the ELF's function symbols to name them
 * (otherwise a function is named by its address). Inclusive values are formed as gprof forms them:
 * a callee's inclusive value goes to its callers in proportion to the calls along each arc (cycles
 * cut at the first repeat); the profile's notes say so.
 *
 * A profile written by a profiling runtime counts PC samples at `rate` per second in the dimension
 * "seconds": its unit is samples. Our exports write rate 1 in the profile's own unit.
 */
export interface GmonSymbol {
  name: string;
  address: number;
  size?: number;
}

export interface GmonImportOptions {
  file?: string;
  symbols?: readonly GmonSymbol[];
  executable?: string;
  addressBytes?: 4 | 8;
  littleEndian?: boolean;
}

export function importGmon(bytes: Uint8Array, options: GmonImportOptions = {}): Profile {
  const file = options.file ?? 'the gmon.out file';
  const fix =
    'Give a gmon.out written by a gprof-instrumented program or by CycleLens, for a target of this address width.';
  if (bytes.length > MAX_IMPORT_BYTES)
    throw new ProfileError('unsupported', `${file} is larger than ${MAX_IMPORT_BYTES} bytes.`);
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const ab = options.addressBytes ?? 4;
  const le = options.littleEndian ?? true;
  if (buf.length < 20 || buf.toString('latin1', 0, 4) !== GMON_MAGIC)
    malformed(file, '', 'does not start with the "gmon" magic', fix);
  const version = le ? buf.readUInt32LE(4) : buf.readUInt32BE(4);
  if (version !== 1)
    throw new ProfileError('version', `${file} is gmon.out version ${version}; this CycleLens reads version 1.`);
  const u32 = (at: number): number => (le ? buf.readUInt32LE(at) : buf.readUInt32BE(at));
  const addr = (at: number): number =>
    ab === 4 ? u32(at) : Number(le ? buf.readBigUInt64LE(at) : buf.readBigUInt64BE(at));
  const need = (at: number, n: number, what: string): void => {
    if (at + n > buf.length) malformed(file, `at byte ${at}`, `the file ends inside ${what}`, fix);
  };

  const bins: { low: number; count: number }[] = [];
  const arcs: { from: number; self: number; count: number }[] = [];
  let dimension = '';
  let rate = 0;
  let at = 20;
  while (at < buf.length) {
    const tag = buf[at]!;
    at++;
    if (tag === GMON_TAG_TIME_HIST) {
      need(at, 2 * ab + 24, 'a histogram header');
      const low = addr(at);
      const high = addr(at + ab);
      const n = u32(at + 2 * ab);
      rate = u32(at + 2 * ab + 4);
      dimension = buf.toString('latin1', at + 2 * ab + 8, at + 2 * ab + 23).replace(/\0.*$/s, '');
      at += 2 * ab + 24;
      if (high < low) malformed(file, `at byte ${at}`, 'a histogram ends below its start', fix);
      need(at, 2 * n, `a histogram of ${n} bins`);
      const width = n > 0 ? (high - low) / n : 0;
      for (let i = 0; i < n; i++) {
        const c = le ? buf.readUInt16LE(at + 2 * i) : buf.readUInt16BE(at + 2 * i);
        if (c > 0) bins.push({ low: low + Math.floor(i * width), count: c });
      }
      at += 2 * n;
    } else if (tag === GMON_TAG_CG_ARC) {
      need(at, 2 * ab + 4, 'a call arc');
      arcs.push({ from: addr(at), self: addr(at + ab), count: u32(at + 2 * ab) });
      at += 2 * ab + 4;
    } else {
      malformed(file, `at byte ${at - 1}`, `record tag ${tag} is not a histogram (0) or an arc (1)`, fix);
    }
  }

  const unit = unitOfDimension(dimension);
  const b = new ProfileBuilder(
    'gmon.out import',
    options.executable ?? file,
    unit,
    unit.kind === 'samples'
      ? {
          kind: 'sampled',
          sampler: `gprof histogram${rate ? ` at ${rate} Hz` : ''}`,
          halting: false,
          attribution: 'time-proportional',
        }
      : { kind: 'exact', counter: dimension || 'gmon.out' },
    file,
  );
  const p = b.profile;
  const symbols = [...(options.symbols ?? [])]
    .filter((s) => Number.isFinite(s.address))
    .sort((x, y) => x.address - y.address);
  const nameAt = (pc: number): { name: string; address: number } => {
    const even = pc;
    let lo = 0;
    let hi = symbols.length - 1;
    let found: GmonSymbol | undefined;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      const s = symbols[mid]!;
      // Thumb symbols carry bit 0; their code starts at the even address.
      if (evenAddress(s.address) <= even) {
        found = s;
        lo = mid + 1;
      } else hi = mid - 1;
    }
    if (found && (found.size === undefined || even < evenAddress(found.address) + Math.max(found.size, 1)))
      return { name: found.name, address: found.address };
    return { name: `0x${pc.toString(16)}`, address: pc };
  };
  for (const bin of bins) {
    const s = nameAt(bin.low);
    const f = b.fn(s.name);
    f.address ??= s.address;
    f.self = { value: (f.self?.value ?? 0) + bin.count };
  }
  for (const arc of arcs) {
    const caller = b.fn(nameAt(arc.from).name);
    const callee = b.fn(nameAt(arc.self).name);
    caller.address ??= nameAt(arc.from).address;
    callee.address ??= nameAt(arc.self).address;
    callee.calls = (callee.calls ?? 0) + arc.count;
    b.edge(caller.id, callee.id, arc.count);
  }
  for (const f of p.functions) f.self ??= { value: 0 };
  propagateInclusive(p);
  const total = p.functions.reduce((s, f) => s + (f.self?.value ?? 0), 0);
  p.total = { value: total };
  p.runs = [
    {
      role: unit.kind === 'samples' ? 'sampling' : 'batch',
      method: `gmon.out from ${file}`,
      total,
      measured: p.functions.map((f) => f.name),
    },
  ];
  p.notes = [
    'Inclusive values are formed as gprof forms them: each callee passes its inclusive value to ' +
      'its callers in proportion to the calls along each arc.',
  ];
  return p;
}

function unitOfDimension(d: string): Unit {
  const t = d.toLowerCase();
  if (t === 'instructions') return { kind: 'instructions' };
  if (t === 'cycles') return { kind: 'cycles' };
  if (t === 'systick-ticks' || t === 'ticks') return { kind: 'ticks' };
  if (t === '' || t === 'seconds' || t === 'samples') return { kind: 'samples' };
  return { kind: 'events', event: d };
}

/** inclusive(f) = self(f) + Σ over callees c of inclusive(c) × calls(f→c) / calls(c), recursion cut. */
function propagateInclusive(p: Profile): void {
  const calleesOf = new Map<number, { callee: number; calls: number }[]>();
  const callsInto = new Map<number, number>();
  for (const e of p.edges) {
    if (e.caller === e.callee) continue;
    const list = calleesOf.get(e.caller) ?? [];
    list.push({ callee: e.callee, calls: e.calls ?? 0 });
    calleesOf.set(e.caller, list);
    callsInto.set(e.callee, (callsInto.get(e.callee) ?? 0) + (e.calls ?? 0));
  }
  const done = new Map<number, number>();
  const onPath = new Set<number>();
  const inclusive = (id: number): number => {
    const known = done.get(id);
    if (known !== undefined) return known;
    onPath.add(id);
    let v = p.functions[id]!.self?.value ?? 0;
    for (const k of calleesOf.get(id) ?? []) {
      // A chain deeper than this is cut too: the walk recurses, and the stack is finite.
      if (onPath.has(k.callee) || onPath.size > 2000) continue;
      const into = callsInto.get(k.callee) ?? 0;
      if (into > 0) v += (inclusive(k.callee) * k.calls) / into;
    }
    onPath.delete(id);
    done.set(id, v);
    return v;
  };
  for (const f of p.functions) f.inclusive = { value: inclusive(f.id) };
}
