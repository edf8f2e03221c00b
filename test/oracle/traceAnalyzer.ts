import { CodeModel } from './codeModel';
import { Flow } from './controlFlow';
import {
  AddressCount,
  AnalysisResult,
  Anomaly,
  CallEdge,
  ContextStack,
  FunctionProfile,
  RegionResult,
  RegionSpec,
} from './profileTypes';

export type {
  AddressCount,
  AnalysisResult,
  Anomaly,
  CallEdge,
  ContextStack,
  FunctionProfile,
  RegionResult,
  RegionSpec,
} from './profileTypes';

const CALL = 0;
const TAIL = 1;
const IRQ = 2;
const TRAP = 3;
const ROOT = 4;
/** A frame pushed by an indirect call whose target is not known yet (an interrupt came first). */
const UNRESOLVED = -1;

interface RegionState extends RegionSpec {
  open: boolean;
  startTotal: number;
  startDepth: number;
  startIrq: number;
  result: RegionResult;
}

/**
 * Turns a stream of executed PCs into exact instruction counts: per address, per function
 * (exclusive, inclusive, calls) and per region, with a shadow call stack.
 *
 * How the stack follows the program: for each instruction whose successor is not simply the next
 * instruction, the kind of the instruction (CodeModel) says what happened.
 * - call: push the callee, remembering the return address;
 * - return: pop to the frame whose return address is the new PC (so longjmp-like unwinding and
 *   tail chains pop several); without one, and with an exception frame on top, it is an
 *   exception return (Cortex-M returns from handlers with `bx lr` / `pop {pc}`);
 * - branch to another function's entry without link: a tail call, pushed as a frame that returns
 *   with the one it replaced, so the tail caller's inclusive count covers the callee as the
 *   source says it should;
 * - any successor the instruction cannot produce (a plain instruction jumping, a branch going
 *   elsewhere than its target): an asynchronous exception, pushed until its exception return.
 * Inclusive counts use per-function "on stack" counters: a function's clock runs from its first
 * frame until its last frame leaves, so recursion never counts an instruction twice.
 */
export class TraceAnalyzer {
  total = 0;
  private counts: Float64Array;
  private marks: Int32Array;
  private prev = -1;
  private expect = -2;

  private sFn = new Int32Array(1024);
  private sRet = new Float64Array(1024);
  private sType = new Uint8Array(1024);
  /** Each frame's node of the calling-context tree (the path of functions from the root to it). */
  private sNode = new Int32Array(1024);
  private top = -1;
  /** The calling-context tree: per node its parent (-1 at a root), function and own count. */
  private ctxParent: number[] = [];
  private ctxFn: number[] = [];
  private ctxSelf: number[] = [];
  private readonly ctxChild = new Map<number, number>();
  private maxDepth = 0;

  private readonly onStack: Int32Array;
  private readonly inclStart: Float64Array;
  private readonly inclDepth: Int32Array;
  private readonly inclIrqStart: Float64Array;
  private readonly inclusive: Float64Array;
  private readonly inclusiveNoIrq: Float64Array;
  private readonly calls: Float64Array;
  private readonly interrupts: Float64Array;
  private readonly traps: Float64Array;
  private readonly edges = new Map<number, number>();

  private asyncDepth = 0;
  private enterTotal = new Float64Array(64);
  private aboveDepth = new Float64Array(64);

  private readonly regions: RegionState[];
  private readonly markLists: RegionState[][] = [];
  private readonly anomalies = new Map<string, Anomaly>();

  constructor(
    private readonly model: CodeModel,
    regions: readonly RegionSpec[] = [],
  ) {
    const f = model.functions.length;
    this.onStack = new Int32Array(f);
    this.inclStart = new Float64Array(f);
    this.inclDepth = new Int32Array(f);
    this.inclIrqStart = new Float64Array(f);
    this.inclusive = new Float64Array(f);
    this.inclusiveNoIrq = new Float64Array(f);
    this.calls = new Float64Array(f);
    this.interrupts = new Float64Array(f);
    this.traps = new Float64Array(f);
    this.counts = new Float64Array(model.address.length);
    this.marks = new Int32Array(model.address.length);
    this.regions = regions.map((r) => ({
      ...r,
      open: false,
      startTotal: 0,
      startDepth: 0,
      startIrq: 0,
      result: {
        name: r.name,
        start: r.start,
        end: r.end,
        passes: [],
        passesExcludingInterrupts: [],
        restarts: 0,
        unmatchedEnds: 0,
        openAtEnd: false,
      },
    }));
    for (const r of this.regions) {
      for (const a of [r.start, r.end]) {
        const idx = model.indexOf(a);
        if (idx < 0) throw new Error(`region ${r.name}: 0x${a.toString(16)} is not the address of an instruction`);
        if (this.marks[idx] === 0) {
          this.markLists.push([]);
          this.marks[idx] = this.markLists.length;
        }
        const list = this.markLists[this.marks[idx]! - 1]!;
        if (!list.includes(r)) list.push(r);
      }
    }
  }

  /** Feeds executed PCs in order (a PcSink). */
  readonly consume = (pcs: Uint32Array, n: number): void => {
    const m = this.model;
    let counts = this.counts;
    let marks = this.marks;
    let address = m.address;
    let fallNext = m.fallNext;
    let cluster = m.clusters[0];
    let cBase = cluster ? cluster.base : 1;
    let cLimit = cluster ? cluster.limit : 0;
    let cTable = cluster ? cluster.table : new Int32Array(1);
    let total = this.total;
    let prev = this.prev;
    let expect = this.expect;
    const ctxSelf = this.ctxSelf;
    let node = this.top >= 0 ? this.sNode[this.top]! : -1;
    for (let j = 0; j < n; j++) {
      const pc = pcs[j]!;
      let idx = -1;
      if (pc >= cBase && pc < cLimit) {
        const v = cTable[(pc - cBase) >>> 1]!;
        if (v !== 0 && address[v - 1] === pc) idx = v - 1;
      }
      if (idx < 0) {
        // Another stretch of code, or a PC the disassembly does not know (QEMU's reset ROM).
        cluster = m.clusters.find((c) => pc >= c.base && pc < c.limit) ?? cluster;
        if (cluster) {
          cBase = cluster.base;
          cLimit = cluster.limit;
          cTable = cluster.table;
        }
        idx = m.indexOrAdd(pc);
        if (idx >= counts.length) this.growPerInstruction();
        counts = this.counts;
        marks = this.marks;
        address = m.address;
        fallNext = m.fallNext;
      }
      if (pc !== expect) {
        this.total = total;
        this.transfer(prev, idx, pc);
        node = this.sNode[this.top]!;
      }
      if (marks[idx] !== 0) {
        this.total = total;
        this.regionEvent(idx, pc);
      }
      counts[idx]!++;
      if (node >= 0) ctxSelf[node]!++;
      total++;
      expect = fallNext[idx]!;
      prev = idx;
    }
    this.total = total;
    this.prev = prev;
    this.expect = expect;
  };

  private growPerInstruction(): void {
    const n = this.model.address.length;
    const counts = new Float64Array(n);
    counts.set(this.counts);
    this.counts = counts;
    const marks = new Int32Array(n);
    marks.set(this.marks);
    this.marks = marks;
  }

  // ---- control transfers -------------------------------------------------------------------

  private transfer(prev: number, idx: number, pc: number): void {
    const m = this.model;
    if (prev < 0) {
      this.push(m.fn[idx]!, -1, ROOT);
      return;
    }
    const fnPc = m.fn[idx]!;
    switch (m.kind[prev]) {
      case Flow.Plain:
        this.asyncEntry(idx, pc, prev);
        return;
      case Flow.Branch:
        if (pc === m.target[prev]) this.jumpTo(prev, idx, pc);
        else this.asyncEntry(idx, pc, prev);
        return;
      case Flow.Call: {
        const ret = m.address[prev]! + m.size[prev]!;
        const target = m.target[prev]!;
        if (pc === target || target < 0) {
          this.call(fnPc, ret);
          return;
        }
        // The call was taken, then an exception came before the callee's first instruction.
        this.call(m.functionIdOf(target), ret);
        this.asyncEntry(idx, pc, prev);
        return;
      }
      case Flow.IndirectCall: {
        const ret = m.address[prev]! + m.size[prev]!;
        if (m.handlerEntry[idx] === 1 && pc !== ret) {
          this.call(UNRESOLVED, ret);
          this.asyncEntry(idx, pc, prev);
        } else {
          this.call(fnPc, ret);
        }
        return;
      }
      case Flow.Return:
        this.returnTo(idx, pc, prev);
        return;
      case Flow.ExceptionReturn:
        this.exceptionReturn(idx, pc, prev);
        return;
      case Flow.Trap:
        this.exceptionEntry(idx, TRAP);
        return;
      default: {
        // Indirect jump (or an unknown instruction): a return in disguise, an exception, a
        // tail call through a register, or a jump inside the function (switch tables).
        const t = this.top;
        if (t >= 0 && (this.sType[t] === CALL || this.sType[t] === TAIL) && this.sRet[t] === pc) {
          this.returnTo(idx, pc, prev);
        } else if (m.handlerEntry[idx] === 1 && fnPc !== m.fn[prev]) {
          this.asyncEntry(idx, pc, prev);
        } else {
          this.jumpTo(prev, idx, pc);
        }
      }
    }
  }

  /** A taken branch without link to `pc`. */
  private jumpTo(prev: number, idx: number, pc: number): void {
    const m = this.model;
    const fnPc = m.fn[idx]!;
    if (fnPc === m.fn[prev]) return;
    if (pc === m.entry(fnPc)) {
      this.tailCall(fnPc, true);
      return;
    }
    // Into the middle of another function: back into one of the current tail chain
    // (f.cold jumping back into f), else a transfer kept as a frame so the stack stays balanced.
    for (let i = this.top; i >= 0; i--) {
      if (this.sFn[i] === fnPc) {
        while (this.top > i) this.pop();
        return;
      }
      if (this.sType[i] !== TAIL) break;
    }
    this.note('jump-into-function-body', pc, m.address[prev]!);
    this.tailCall(fnPc, false);
  }

  private returnTo(idx: number, pc: number, prev: number): void {
    const m = this.model;
    let i = this.top;
    for (; i >= 0; i--) {
      const t = this.sType[i];
      if (t === IRQ || t === TRAP || t === ROOT) break;
      if (this.sRet[i] === pc) {
        this.popThrough(i);
        return;
      }
    }
    if (m.handlerEntry[idx] === 1) {
      // The return was taken, then an exception came before its target ran (or, on Cortex-M,
      // the handler returned and the core tail-chained into the next handler).
      this.popReturningFrame();
      this.asyncEntry(idx, pc, prev);
      return;
    }
    if (i >= 0 && (this.sType[i] === IRQ || this.sType[i] === TRAP)) {
      this.popThrough(i);
      this.resume(idx, pc, prev);
      return;
    }
    this.note('unmatched-return', pc, m.address[prev]!);
    this.popReturningFrame();
  }

  private exceptionReturn(idx: number, pc: number, prev: number): void {
    for (let i = this.top; i >= 0; i--) {
      const t = this.sType[i];
      if (t === IRQ || t === TRAP) {
        this.popThrough(i);
        this.resume(idx, pc, prev);
        return;
      }
    }
    this.note('exception-return-without-entry', pc, this.model.address[prev]!);
  }

  /** After an exception return: reconcile the stack with where the interrupted code resumes. */
  private resume(idx: number, pc: number, prev: number): void {
    const m = this.model;
    const fnPc = m.fn[idx]!;
    const t = this.top;
    if (t >= 0 && this.sFn[t] === UNRESOLVED) {
      this.resolve(t, fnPc);
      return;
    }
    if (t >= 0 && this.sFn[t] === fnPc) return;
    if (m.handlerEntry[idx] === 1) {
      this.asyncEntry(idx, pc, prev); // tail-chaining into the next pending handler
    } else if (pc === m.entry(fnPc)) {
      this.tailCall(fnPc, true); // the interrupted instruction was a tail call
    } else {
      this.note('resumed-in-another-function', pc, m.address[prev]!);
      this.tailCall(fnPc, false);
    }
  }

  private asyncEntry(idx: number, pc: number, prev: number): void {
    if (this.model.handlerEntry[idx] !== 1)
      this.note('exception-at-unknown-handler', pc, prev >= 0 ? this.model.address[prev]! : -1);
    this.exceptionEntry(idx, IRQ);
  }

  private exceptionEntry(idx: number, type: number): void {
    const fn = this.model.fn[idx]!;
    if (type === IRQ) this.interrupts[fn]!++;
    else this.traps[fn]!++;
    this.push(fn, -1, type);
  }

  private call(fn: number, ret: number): void {
    const caller = this.top >= 0 ? this.sFn[this.top]! : -1;
    this.push(fn, ret, CALL);
    if (fn !== UNRESOLVED) this.countCall(caller, fn);
  }

  private tailCall(fn: number, counted: boolean): void {
    const caller = this.top >= 0 ? this.sFn[this.top]! : -1;
    // A tail call back into a function of the current tail chain (mutual tail recursion,
    // state machines) returns to its frame instead of growing the stack forever.
    for (let i = this.top; i >= 0; i--) {
      if (this.sFn[i] === fn) {
        while (this.top > i) this.pop();
        if (counted) this.countCall(caller, fn);
        return;
      }
      if (this.sType[i] !== TAIL) break;
    }
    this.push(fn, this.top >= 0 ? this.sRet[this.top]! : -1, TAIL);
    if (counted) this.countCall(caller, fn);
  }

  private resolve(frame: number, fn: number): void {
    this.sFn[frame] = fn;
    this.sNode[frame] = this.contextOf(frame > 0 ? this.sNode[frame - 1]! : -1, fn);
    this.enterFunction(fn);
    this.countCall(frame > 0 ? this.sFn[frame - 1]! : -1, fn);
  }

  private countCall(caller: number, callee: number): void {
    this.calls[callee]!++;
    if (caller < 0) return;
    const key = caller * this.model.functions.length + callee;
    this.edges.set(key, (this.edges.get(key) ?? 0) + 1);
  }

  // ---- the stack ----------------------------------------------------------------------------

  /** The node of `fn` called in context `parent` (made on first use); an unresolved frame's is its own. */
  private contextOf(parent: number, fn: number): number {
    const key = (parent + 1) * (this.model.functions.length + 1) + (fn + 1);
    let id = this.ctxChild.get(key);
    if (id === undefined) {
      id = this.ctxFn.length;
      this.ctxParent.push(parent);
      this.ctxFn.push(fn);
      this.ctxSelf.push(0);
      this.ctxChild.set(key, id);
    }
    return id;
  }

  private push(fn: number, ret: number, type: number): void {
    const t = ++this.top;
    if (t === this.sFn.length) this.growStack();
    this.sFn[t] = fn;
    this.sRet[t] = ret;
    this.sType[t] = type;
    this.sNode[t] = this.contextOf(t > 0 ? this.sNode[t - 1]! : -1, fn);
    if (t + 1 > this.maxDepth) this.maxDepth = t + 1;
    if (type === IRQ) {
      const d = ++this.asyncDepth;
      if (d + 1 >= this.enterTotal.length) this.growDepth();
      this.enterTotal[d] = this.total;
    }
    if (fn !== UNRESOLVED) this.enterFunction(fn);
  }

  private enterFunction(fn: number): void {
    if (this.onStack[fn]!++ === 0) {
      this.inclStart[fn] = this.total;
      this.inclDepth[fn] = this.asyncDepth;
      this.inclIrqStart[fn] = this.irqAbove(this.asyncDepth);
    }
  }

  private pop(): void {
    const t = this.top;
    if (t <= 0) return; // the root frame stays
    const fn = this.sFn[t]!;
    if (fn !== UNRESOLVED && --this.onStack[fn]! === 0) {
      const d = this.total - this.inclStart[fn]!;
      this.inclusive[fn]! += d;
      this.inclusiveNoIrq[fn]! += d - (this.irqAbove(this.inclDepth[fn]!) - this.inclIrqStart[fn]!);
    }
    if (this.sType[t] === IRQ) {
      const depth = this.asyncDepth--;
      this.aboveDepth[depth - 1]! += this.total - this.enterTotal[depth]!;
    }
    this.top = t - 1;
  }

  /** Pops frame i and everything above it, then the frames a popped tail frame stood in for. */
  private popThrough(i: number): void {
    while (this.top > i) this.pop();
    let wasTail = this.sType[this.top] === TAIL;
    if (this.top > 0) this.pop();
    while (wasTail && this.top > 0) {
      wasTail = this.sType[this.top] === TAIL;
      this.pop();
    }
  }

  /** Pops the returning function's frame and the tail chain under it. */
  private popReturningFrame(): void {
    if (this.top > 0) this.popThrough(this.top);
  }

  /** Instructions so far that ran in interrupt handlers nested deeper than `depth`. */
  private irqAbove(depth: number): number {
    return this.aboveDepth[depth]! + (this.asyncDepth > depth ? this.total - this.enterTotal[depth + 1]! : 0);
  }

  private growStack(): void {
    const n = this.sFn.length * 2;
    const fn = new Int32Array(n);
    fn.set(this.sFn);
    const ret = new Float64Array(n);
    ret.set(this.sRet);
    const type = new Uint8Array(n);
    type.set(this.sType);
    const node = new Int32Array(n);
    node.set(this.sNode);
    this.sNode = node;
    this.sFn = fn;
    this.sRet = ret;
    this.sType = type;
  }

  private growDepth(): void {
    const n = this.enterTotal.length * 2;
    const e = new Float64Array(n);
    e.set(this.enterTotal);
    const a = new Float64Array(n);
    a.set(this.aboveDepth);
    this.enterTotal = e;
    this.aboveDepth = a;
  }

  // ---- regions ------------------------------------------------------------------------------

  private regionEvent(idx: number, pc: number): void {
    const list = this.markLists[this.marks[idx]! - 1]!;
    for (const r of list) {
      if (r.end !== pc) continue;
      if (r.open) {
        r.result.passes.push(this.total - r.startTotal);
        r.result.passesExcludingInterrupts.push(this.total - r.startTotal - (this.irqAbove(r.startDepth) - r.startIrq));
        r.open = false;
      } else if (r.start !== r.end) {
        r.result.unmatchedEnds++;
      }
    }
    for (const r of list) {
      if (r.start !== pc) continue;
      if (r.open) r.result.restarts++;
      r.open = true;
      r.startTotal = this.total;
      r.startDepth = this.asyncDepth;
      r.startIrq = this.irqAbove(this.asyncDepth);
    }
  }

  private note(kind: string, pc: number, previous: number): void {
    let a = this.anomalies.get(kind);
    if (!a) this.anomalies.set(kind, (a = { kind, count: 0, examples: [] }));
    a.count++;
    if (a.examples.length < 8) a.examples.push({ at: this.total, pc, previous });
  }

  // ---- results ------------------------------------------------------------------------------

  /** The calling-context tree's stacks: each node's path of function names (root first) and own count. */
  private contexts(): ContextStack[] {
    const m = this.model;
    const name = (fn: number): string => (fn === UNRESOLVED ? '?' : m.functions[fn]!.name);
    const out: ContextStack[] = [];
    for (let i = 0; i < this.ctxFn.length; i++) {
      const self = this.ctxSelf[i]!;
      if (self === 0) continue;
      const frames: string[] = [];
      for (let k = i; k >= 0; k = this.ctxParent[k]!) frames.unshift(name(this.ctxFn[k]!));
      out.push({ frames, self });
    }
    return out;
  }

  /** The counts so far. Frames still on the stack are closed at the current instruction. */
  result(): AnalysisResult {
    const m = this.model;
    const fnCount = m.functions.length;
    const exclusive = new Float64Array(fnCount);
    const addresses: AddressCount[] = [];
    for (let i = 0; i < m.count; i++) {
      const c = this.counts[i]!;
      if (c === 0) continue;
      exclusive[m.fn[i]!]! += c;
      addresses.push({ address: m.address[i]!, count: c, function: m.functions[m.fn[i]!]!.name });
    }
    addresses.sort((a, b) => a.address - b.address);
    const functions: FunctionProfile[] = [];
    for (let f = 0; f < fnCount; f++) {
      let inclusive = this.inclusive[f]!;
      let noIrq = this.inclusiveNoIrq[f]!;
      if (this.onStack[f]! > 0) {
        const d = this.total - this.inclStart[f]!;
        inclusive += d;
        noIrq += d - (this.irqAbove(this.inclDepth[f]!) - this.inclIrqStart[f]!);
      }
      if (exclusive[f] === 0 && inclusive === 0 && this.calls[f] === 0) continue;
      const def = m.functions[f]!;
      functions.push({
        name: def.name,
        start: def.start,
        end: def.end,
        aliases: def.aliases ?? [],
        exclusive: exclusive[f]!,
        inclusive,
        inclusiveExcludingInterrupts: noIrq,
        calls: this.calls[f]!,
        interrupts: this.interrupts[f]!,
        traps: this.traps[f]!,
      });
    }
    functions.sort((a, b) => b.exclusive - a.exclusive || a.start - b.start);
    const edges: CallEdge[] = [...this.edges].map(([key, calls]) => ({
      caller: m.functions[Math.floor(key / fnCount)]!.name,
      callee: m.functions[key % fnCount]!.name,
      calls,
    }));
    edges.sort((a, b) => b.calls - a.calls || a.caller.localeCompare(b.caller) || a.callee.localeCompare(b.callee));
    const stack: string[] = [];
    for (let i = 0; i <= this.top; i++) stack.push(this.sFn[i] === UNRESOLVED ? '?' : m.functions[this.sFn[i]!]!.name);
    return {
      total: this.total,
      functions,
      edges,
      addresses,
      regions: this.regions.map((r) => ({
        ...r.result,
        passes: [...r.result.passes],
        passesExcludingInterrupts: [...r.result.passesExcludingInterrupts],
        openAtEnd: r.open,
      })),
      contexts: this.contexts(),
      root: stack[0] ?? '',
      maxStackDepth: this.maxDepth,
      finalStack: stack,
      anomalies: [...this.anomalies.values()],
    };
  }
}
