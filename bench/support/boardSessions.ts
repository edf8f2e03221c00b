import type { DebugProtocol } from '@vscode/debugprotocol';
import type { CycleLensLaunchArgs } from '../../common/launchArgs';
import { BoardOnQemu, type BoardOnQemuOptions } from '../../test/support/boardOnQemu';
import { AdapterHarness } from '../../test/support/dap';
import type { FixtureTarget } from '../../test/support/paths';
import { RawMiClient } from './rawMi';

/**
 * What bench/board.ts needs around the board double: operations measured by the double's packet
 * counts and by wall time, the same operations by CycleLens over DAP and by a raw GDB/MI client,
 * and the adapter's memory traffic taken from its MI trace, to be replayed by the raw client.
 */

export interface Measured {
  packets: number;
  byKind: Record<string, number>;
  ms: number;
  /** What the double refused meanwhile (a board would have refused it too). */
  refused: Record<string, number>;
}

/** Runs `fn` with the board's counts started afresh; its packets, by kind, and its wall time. */
export async function measured(board: BoardOnQemu, fn: () => Promise<unknown>): Promise<Measured> {
  board.board.resetStats();
  const t0 = performance.now();
  await fn();
  const ms = performance.now() - t0;
  const s = board.board.stats();
  return { packets: s.packets, byKind: s.byKind, ms, refused: s.refused };
}

/** A fresh board (QEMU and the double), used by `fn`, then stopped; anything left running is an error. */
export async function onBoard<T>(
  target: FixtureTarget,
  options: BoardOnQemuOptions,
  fn: (board: BoardOnQemu) => Promise<T>,
): Promise<T> {
  const board = await BoardOnQemu.start(target, options);
  let result: T;
  let left: Awaited<ReturnType<BoardOnQemu['stop']>> = [];
  try {
    result = await fn(board);
  } finally {
    // A failure inside is reported as it is; a QEMU left running only after a clean run.
    left = await board.stop();
  }
  if (left.length > 0) throw new Error(`the board's QEMU did not end: ${JSON.stringify(left)}`);
  return result;
}

/** The built adapter over DAP, against `board` with a `remote` launch configuration. */
export async function withCycleLens<T>(fn: (h: AdapterHarness) => Promise<T>): Promise<T> {
  const h = new AdapterHarness();
  await h.start();
  let result: T;
  let left: Awaited<ReturnType<AdapterHarness['stop']>> = [];
  try {
    result = await fn(h);
    await h.dc.disconnectRequest({ terminateDebuggee: true }).catch(() => undefined);
  } finally {
    left = await h.stop();
  }
  if (left.length > 0) throw new Error(`the adapter left ${left.length} process(es) behind`);
  return result;
}

export function remoteArgs(
  elf: string,
  board: BoardOnQemu,
  extra: Partial<CycleLensLaunchArgs> & { load?: boolean } = {},
): CycleLensLaunchArgs {
  const { load, ...rest } = extra;
  return {
    executable: elf,
    server: { type: 'remote', address: board.address, ...(load !== undefined ? { load } : {}) },
    stopAtEntry: 'main',
    ...rest,
  };
}

/**
 * A raw GDB/MI client for the program, started when `fn` calls `start` (so that a launch row can
 * include GDB's own start), connected by the caller (`-target-select`), ended afterwards.
 */
export async function withRawGdb<T>(elf: string, fn: (start: () => Promise<RawMiClient>) => Promise<T>): Promise<T> {
  let mi: RawMiClient | undefined;
  try {
    const result = await fn(async () => (mi = await RawMiClient.forServer(elf)));
    await mi?.disconnect();
    return result;
  } finally {
    mi?.kill();
  }
}

/** The GDB/MI commands the adapter sent while `fn` ran (from its trace, `trace: true`). */
export async function miCommandsDuring(h: AdapterHarness, fn: () => Promise<unknown>): Promise<string[]> {
  const mark = h.output.length;
  await fn();
  // Output events carry whole lines; the trace's are `-> TOKENcommand`.
  return h.output
    .slice(mark)
    .join('')
    .split('\n')
    .filter((l) => l.startsWith('-> '))
    .map((l) => l.slice(3).replace(/^\d+/, ''));
}

/**
 * The memory reads and writes among MI commands, and the assignment of the one register an injector
 * keeps for itself (RV32's `tp`, which its trampolines address the runtime through): what a raw
 * client must send to leave the target as the adapter left it. The adapter's stub runs (registers
 * saved, a stub stepped, registers put back) leave no trace and are not counted.
 */
export function memoryTraffic(commands: readonly string[]): string[] {
  return commands.filter(
    (c) =>
      c.startsWith('-data-write-memory-bytes ') ||
      c.startsWith('-data-read-memory-bytes ') ||
      c.startsWith('-data-evaluate-expression "$tp='),
  );
}

/** Sends `commands` one after another. */
export async function replay(mi: RawMiClient, commands: readonly string[]): Promise<void> {
  for (const c of commands) await mi.send(c);
}

/** A step as an IDE does it: the request, the stop, then the top of the stack. */
export async function nextWithStack(h: AdapterHarness): Promise<void> {
  await next(h);
  await h.dc.stackTraceRequest({ threadId: 1, startFrame: 0, levels: 20 });
}

/** A step and its stop, nothing read after it. */
export async function next(h: AdapterHarness): Promise<void> {
  await Promise.all([h.dc.nextRequest({ threadId: 1 }), h.dc.waitForEvent('stopped')]);
}

/** What the Variables view costs after a stop: the stack, the frame's scopes, its locals. */
export async function inspect(h: AdapterHarness): Promise<void> {
  const top = (await h.dc.stackTraceRequest({ threadId: 1, startFrame: 0, levels: 20 })).body.stackFrames[0]!;
  const scopes = (await h.dc.scopesRequest({ frameId: top.id })).body.scopes;
  const locals = await h.variablesOf(scopes[0]!.variablesReference);
  if (locals.length === 0) throw new Error('no locals at the step');
}

export async function rawNext(mi: RawMiClient): Promise<void> {
  await mi.run('-exec-next');
  await mi.send('-stack-list-frames --thread 1 0 19');
}

export async function rawInspect(mi: RawMiClient): Promise<void> {
  await mi.send('-stack-list-frames --thread 1 0 19');
  const locals = await mi.send('-stack-list-variables --thread 1 --frame 0 --simple-values');
  if (!locals.includes('name=')) throw new Error('no locals at the step');
}

/** Sets source breakpoints, continues to the first hit, and clears them again. */
export async function continueTo(h: AdapterHarness, path: string, line: number): Promise<void> {
  await h.dc.setBreakpointsRequest({ source: { path }, breakpoints: [{ line }] });
  await Promise.all([h.dc.continueRequest({ threadId: 1 }), h.dc.waitForEvent('stopped')]);
  await h.dc.setBreakpointsRequest({ source: { path }, breakpoints: [] });
}

/** The first line of `e`'s message, or of a DAP error response. */
export function firstLine(e: unknown): string {
  const text = e instanceof Error ? e.message : String(e);
  return text.split('\n')[0]!.trim();
}

/** Output events that say what GDB or the adapter refused, as the Debug Console shows them. */
export function refusalsShown(h: AdapterHarness, from: number): string[] {
  return h.output
    .slice(from)
    .join('')
    .split('\n')
    .filter((l) => /Cannot insert|Could not insert|too many|refused|forbidden|cannot/i.test(l) && !l.startsWith('-> '))
    .map((l) => l.trim());
}

export type StoppedEvent = DebugProtocol.StoppedEvent;
