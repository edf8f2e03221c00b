import { existsSync } from 'node:fs';
import { unlink } from 'node:fs/promises';
import { join, relative } from 'node:path';
import type { CallGraphResponse, DynamicCallGraphArguments } from '../common/dapCustom';
import { CustomRequests } from '../common/dapCustom';
import { customRequest } from '../common/dapCustomClient';
import {
  CALL_GRAPH_SCHEMA,
  loadCallGraphDocument,
  loadResultSetDocument,
  resultSetDocument,
  saveResultSetDocument,
  writeFileAtomic,
  type CallGraphDocument,
  type ResultSet,
} from '../core/analysis/resultSet';
import { WorkerNotNeeded } from '../core/analysis/measurerPool';
import { DapProfiler } from '../core/profiling/dapProfiler';
import { interruptedAnalysisLines } from '../core/profiling/interruption';
import { decideJobs, type JobsTarget } from '../core/profiling/parallelJobs';
import { runScenario, type ScenarioWorkers } from '../core/profiling/scenarios';
import { AdapterSession } from '../core/dap/adapterSession';
import { USAGE, parseArgs } from './args';
import { checkExportTargets, profileOfRun, runExportCommand, writeExports, writeExportsOfFailedRun } from './exports';
import { runLanguageServer } from './languageServer';
import { loadLaunchConfiguration } from './launchConfig';
import { checkOutputWritable, writeOutputs } from './outputPaths';

/**
 * `cyclelens descent|profile`: runs an analysis from a terminal or CI against the same debug adapter
 * VS Code uses (dist/adapter.js next to this bundle), prints the report, writes result sets and the
 * annotated call graph. Exit status: 0 done, 1 failed (configuration, adapter, target), 2 bad
 * arguments, 130 interrupted.
 */

export interface CliIo {
  out(text: string): void;
  err(text: string): void;
  /** Registers a Ctrl-C handler; returns its removal. */
  onInterrupt(handler: () => void): () => void;
}

const processIo: CliIo = {
  out: (t) => process.stdout.write(t),
  err: (t) => process.stderr.write(t),
  onInterrupt: (handler) => {
    process.on('SIGINT', handler);
    process.on('SIGTERM', handler);
    return () => {
      process.off('SIGINT', handler);
      process.off('SIGTERM', handler);
    };
  },
};

export function defaultAdapterPath(): string {
  // Bundled: dist/cli.js next to dist/adapter.js. From out/cli/main.js (tests): the repository's dist/.
  const beside = join(__dirname, 'adapter.js');
  return existsSync(beside) ? beside : join(__dirname, '..', '..', 'dist', 'adapter.js');
}

export async function main(argv: readonly string[], io: CliIo = processIo): Promise<number> {
  const parsed = parseArgs(argv);
  if (parsed.kind === 'help') {
    io.out(USAGE);
    return 0;
  }
  if (parsed.kind === 'error') {
    io.err(`cyclelens: ${parsed.message}\n\n${USAGE}`);
    return 2;
  }
  if (parsed.kind === 'lsp') return runLanguageServer();
  if (parsed.kind === 'export') return runExportCommand(parsed.command, io);
  const cmd = parsed.command;
  const controller = new AbortController();
  let interrupts = 0;
  const removeInterrupt = io.onInterrupt(() => {
    interrupts++;
    if (interrupts === 1) io.err('\ncyclelens: stopping after the current run (Ctrl-C again to abandon it)\n');
    controller.abort();
    if (interrupts > 1) void closeAll().finally(() => process.exit(130));
  });
  let session: AdapterSession | undefined;
  /** Extra sessions for runs at once (--jobs), started on demand; every one is closed at the end. */
  const extraSessions: Promise<AdapterSession | undefined>[] = [];
  /** The extra sessions that started, in order: a failure names the one that ended. */
  const extras: AdapterSession[] = [];
  let closed = false;
  const closeAll = async (): Promise<void> => {
    closed = true;
    await Promise.all([session?.close(), ...extraSessions.map(async (p) => (await p)?.close())]);
  };
  /** Runs finished so far (with the resumed ones), saved as each is read out. */
  const finished: ResultSet[] = [];
  let newRuns = 0;
  let partialPath: string | undefined;
  /** Whether the last save of the finished runs reached the disk. */
  let partialSaved = false;
  // Sessions running at once finish runs in any order: their saves go one at a time, each writing
  // every run finished so far, in the order they finished.
  let saves = Promise.resolve();
  /** Whether the --export destinations passed their check (a failed check is the error itself). */
  let exportsChecked = false;
  try {
    // A run of many minutes must not end in "cannot write": every export destination is checked first.
    if (cmd.exports) await checkExportTargets(cmd.exports);
    exportsChecked = true;
    const launch = await loadLaunchConfiguration(cmd.config, cmd.name);
    if (cmd.out) await checkOutputWritable(cmd.out, '--out');
    if (cmd.dot) await checkOutputWritable(cmd.dot, '--dot');
    const previous = cmd.resume ? await earlierResults(cmd.resume, String(launch.args.executable)) : [];
    finished.push(...previous);
    // Where finished runs go while the analysis runs: --out itself (the final document replaces it), or a
    // file of its own, so a GDB or QEMU that dies at run 9 of 10 costs one run, not nine.
    partialPath =
      cmd.out ??
      join(
        process.cwd(),
        '.cyclelens',
        'results',
        `${cmd.name.replace(/[^A-Za-z0-9._-]+/g, '-')}-${new Date().toISOString().replace(/[:.]/g, '-')}.partial.json`,
      );
    // The profiler drives the program from a stop in the start function, whatever the configuration says.
    launch.args.stopAtEntry = cmd.start;
    const adapterPath = cmd.adapter ?? defaultAdapterPath();
    if (!existsSync(adapterPath))
      throw new Error(
        `the debug adapter ${adapterPath} does not exist: build CycleLens (npm run build) or pass --adapter`,
      );
    io.err(`cyclelens: starting ${cmd.name} (${String(launch.args.executable)})\n`);
    session = await AdapterSession.start({
      adapterPath,
      launch,
      timeoutMs: cmd.timeoutMs,
      log: (l) => io.err(`${l}\n`),
    });
    if (cmd.command === 'call-graph')
      return await saveCallGraph(session, cmd.out!, String(launch.args.executable), cmd.dynamic, cmd.timeoutMs, io);
    const savedGraph = cmd.callGraph
      ? { document: await loadCallGraphDocument(cmd.callGraph), file: cmd.callGraph }
      : undefined;
    if (
      savedGraph?.document.ended !== undefined &&
      savedGraph.document.ended !== 'programEnd' &&
      savedGraph.document.ended !== 'exited'
    ) {
      io.err(
        `cyclelens: note: ${cmd.callGraph} saw part of the run only (${savedGraph.document.ended}); ` +
          `its counts still order the measurements, the bounds never depend on them\n`,
      );
    }
    const savePartial = async (rs: ResultSet): Promise<void> => {
      finished.push(rs);
      newRuns++;
      try {
        await saveResultSetDocument(partialPath!, resultSetDocument(finished, undefined, 'cyclelens-cli (partial)'));
        partialSaved = true;
      } catch (err) {
        // A place that filled up must not end the analysis: the findings still reach the report.
        if (partialSaved || newRuns === 1)
          io.err(
            `cyclelens: the finished runs could not be saved to ${partialPath} ` +
              `(${err instanceof Error ? err.message : String(err)}); the analysis goes on\n`,
          );
        partialSaved = false;
      }
    };
    const profilerFor = (s: AdapterSession, log: (l: string) => void, totalFrom?: DapProfiler): DapProfiler =>
      // A run may take the whole --timeout in the adapter: the client waits for its answer past that,
      // so a run that never gets to its end (firmware that never ends) is told as such, not as silence.
      new DapProfiler(
        { customRequest: (c, a) => s.client.request(c, a, cmd.timeoutMs + 30_000) },
        {
          ...(totalFrom ? { totalFrom } : {}),
          slots: cmd.slots,
          mode: cmd.cyclic
            ? { kind: 'cyclic', safeStop: cmd.cyclic, dwell: cmd.dwell }
            : { kind: 'single-pass', start: cmd.start },
          executable: String(launch.args.executable),
          timeoutMs: cmd.timeoutMs,
          log,
          onResultSet: (rs) => (saves = saves.then(() => savePartial(rs))),
        },
      );
    const profiler = profilerFor(session, (l) => io.err(`${l}\n`));
    const decision = decideJobs(cmd.jobs, {
      request: launch.request,
      server: launch.args.server as JobsTarget['server'],
      cyclic: cmd.cyclic !== undefined,
    });
    if (decision.note) io.err(`cyclelens: ${decision.note}\n`);
    const workers: ScenarioWorkers | undefined =
      decision.jobs > 1
        ? {
            jobs: decision.jobs,
            start: async (index) => {
              const log = (l: string): void => io.err(`[worker ${index + 1}] ${l}\n`);
              const starting = AdapterSession.start({ adapterPath, launch, timeoutMs: cmd.timeoutMs, log });
              extraSessions.push(starting.catch(() => undefined));
              const s = await starting;
              extras.push(s);
              // The analysis ended while this session was starting: it has nothing left to do.
              if (closed) throw new WorkerNotNeeded();
              return profilerFor(s, log, profiler);
            },
          }
        : undefined;
    const outcome = await runScenario(
      { ...cmd, command: cmd.command, ...(savedGraph ? { savedGraph } : {}) },
      profiler,
      {
        signal: controller.signal,
        onProgress: (line) => io.err(`${line}\n`),
        previous,
        title: `${cmd.name}: ${cmd.command === 'descent' ? 'descent' : 'profile'}`,
        generator: 'cyclelens-cli',
        ...(workers ? { workers } : {}),
      },
    );
    const result = outcome.result;
    io.out(outcome.report);
    // Each output is written even when another fails: a full disk for the JSON still leaves the DOT.
    const failures = await writeOutputs([
      ...(cmd.out
        ? [
            {
              what: 'The result sets',
              path: cmd.out,
              write: async () => {
                await saveResultSetDocument(cmd.out!, outcome.document);
                io.err(`cyclelens: ${result.resultSets.length} result set(s) written to ${cmd.out}\n`);
              },
            },
          ]
        : []),
      ...(cmd.dot
        ? [
            {
              what: 'The call graph',
              path: cmd.dot,
              write: async () => {
                await writeFileAtomic(cmd.dot!, outcome.dot);
                io.err(`cyclelens: call graph written to ${cmd.dot}\n`);
              },
            },
          ]
        : []),
      ...(cmd.exports ?? []).map((e) => ({
        what: `The ${e.format.label} export`,
        path: e.path,
        write: () => writeExports(profileOfRun(outcome.document), [e], io),
      })),
    ]);
    for (const f of failures) io.err(`cyclelens: ${f}; the report above holds the findings\n`);
    if (!cmd.out && partialPath && newRuns > 0) await unlinkQuietly(partialPath);
    if (failures.length > 0) return 1;
    return result.cancelled ? 130 : 0;
  } catch (err) {
    await saves;
    // Whichever session ended (the first, or one of the extra ones) says what died.
    const all = [...(session ? [session] : []), ...extras];
    if (all.length > 0) await Promise.race(all.map((s) => s.settle(2000)));
    const ended = all.find((s) => s.sessionEnded) ?? session;
    const lines = interruptedAnalysisLines({
      command: cmd.command === 'descent' ? 'descent' : 'profile',
      error: err instanceof Error ? err.message : String(err),
      sessionEnded: ended?.sessionEnded ?? false,
      ...(ended?.endReason ? { endReason: ended.endReason } : {}),
      savedRuns: partialSaved ? newRuns : 0,
      resultSets: finished.length,
      ...(partialPath ? { savedIn: relative(process.cwd(), partialPath) || partialPath } : {}),
      resumeHint: 'same-command',
    });
    for (const line of lines) io.err(`cyclelens: ${line}\n`);
    if (cmd.exports && exportsChecked) await writeExportsOfFailedRun(cmd.exports, finished, io);
    return controller.signal.aborted ? 130 : 1;
  } finally {
    removeInterrupt();
    await closeAll();
  }
}

/**
 * `cyclelens call-graph`: the static graph, or (--dynamic) one run from the start function with an
 * entry breakpoint on every function, saved as a cyclelens-callgraph/1 document.
 */
async function saveCallGraph(
  session: AdapterSession,
  out: string,
  executable: string,
  dynamic: { maxCalls: number } | undefined,
  timeoutMs: number,
  io: CliIo,
): Promise<number> {
  let doc: CallGraphDocument;
  if (dynamic) {
    io.err('cyclelens: recording the calls of one run (one halt per call: this takes a while)\n');
    const args: DynamicCallGraphArguments = { maxHits: dynamic.maxCalls, timeoutMs };
    // The recording may take the whole --timeout: the request waits that long, and then some.
    const patient = {
      customRequest: (command: string, a?: unknown) => session.client.request(command, a, timeoutMs + 30_000),
    };
    const r = await customRequest(patient, CustomRequests.dynamicCallGraph, args);
    const { hits, ended, interrupts, elapsedMs, ...graph } = r;
    io.err(`cyclelens: ${hits} calls in ${(elapsedMs / 1000).toFixed(1)} s, recording ended: ${ended}\n`);
    if (ended !== 'programEnd' && ended !== 'exited')
      io.err(
        `cyclelens: note: the recording did not see the whole run (${ended}); raise --max-calls or ` +
          `--timeout for complete counts\n`,
      );
    doc = {
      schema: CALL_GRAPH_SCHEMA,
      program: executable,
      kind: 'dynamic',
      graph: plainGraph(graph),
      interrupts,
      ended,
    };
  } else {
    doc = {
      schema: CALL_GRAPH_SCHEMA,
      program: executable,
      kind: 'static',
      graph: plainGraph(await customRequest(session.client, CustomRequests.callGraph)),
    };
  }
  await writeFileAtomic(out, `${JSON.stringify(doc, null, 1)}\n`);
  io.err(`cyclelens: ${doc.kind} call graph of ${doc.graph.functions.length} functions written to ${out}\n`);
  return 0;
}

/** Only the fields the document holds (the static graph's diagnostics stay out). */
function plainGraph(g: CallGraphResponse): CallGraphResponse {
  return { functions: g.functions, edges: g.edges, indirectCallers: g.indirectCallers };
}

async function unlinkQuietly(path: string): Promise<void> {
  await unlink(path).catch(() => undefined);
}

/** Result sets of an earlier run of the same program, to continue its descent. */
async function earlierResults(path: string, executable: string): Promise<ResultSet[]> {
  const doc = await loadResultSetDocument(path);
  const other = doc.resultSets.find((rs) => rs.program.executable !== executable);
  if (other)
    throw new Error(
      `${path} holds results of ${other.program.executable}, not of ${executable}: ratios of ` +
        `different programs do not mix`,
    );
  return doc.resultSets;
}

if (require.main === module) {
  main(process.argv.slice(2)).then(
    (code) => {
      process.exitCode = code;
    },
    (err: unknown) => {
      process.stderr.write(`cyclelens: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
      process.exitCode = 1;
    },
  );
}
