import * as vscode from 'vscode';
import { unlink } from 'node:fs/promises';
import { basename, join, relative } from 'node:path';
import {
  loadResultSetDocument,
  resultSetDocument,
  saveResultSetDocument,
  writeFileAtomic,
  type ResultSet,
} from '../../core/analysis/resultSet';
import { AdapterSession } from '../../core/dap/adapterSession';
import { WorkerNotNeeded } from '../../core/analysis/measurerPool';
import { DapProfiler, type DapProfilerOptions } from '../../core/profiling/dapProfiler';
import { interruptedAnalysisLines } from '../../core/profiling/interruption';
import { decideJobs, type JobsTarget } from '../../core/profiling/parallelJobs';
import { workspaceCallGraph } from '../../core/analysis/savedGraph';
import { runScenario, type ScenarioRequest, type ScenarioWorkers } from '../../core/profiling/scenarios';
import type { SessionTracker } from '../debug/sessionTracker';
import { resultsColumn } from '../panels/editorColumns';
import type { CodeLocation } from '../../common/dapCustom';

/**
 * "Where do my cycles go?": call-graph descent and the exact full profile, run from the editor on
 * the active session with progress and cancellation; the report opens as a document, the result
 * sets are saved in the workspace, where the profile language server finds them and puts the
 * per-function results above each function. With `cyclelens.profiling.jobs` above 1 (0: the number
 * of cores) on a QEMU target, independent runs also go to headless sessions of the same resolved
 * configuration (the adapter as a child process, as the CLI runs it), closed when the analysis ends.
 */
export function registerProfilingCommands(
  tracker: SessionTracker,
  output: vscode.LogOutputChannel,
  extensionUri: vscode.Uri,
): vscode.Disposable[] {
  const run = async (command: ScenarioRequest['command']): Promise<void> => {
    const session = tracker.active;
    if (!session) {
      void vscode.window.showErrorMessage(
        'Start a CycleLens debug session first: profiling runs the program on its target.',
      );
      return;
    }
    const config = session.configuration;
    let threshold: ScenarioRequest['threshold'] = { kind: 'share', value: 0.01 };
    if (command === 'descent') {
      const text = await vscode.window.showInputBox({
        title: 'Call-graph descent: threshold',
        prompt: 'Functions whose callers bound them below this share of the run are pruned.',
        value: '1%',
        validateInput: (v) => (/^\d+(\.\d+)?\s*%$/.test(v.trim()) ? undefined : 'A share such as 1% or 0.5%'),
      });
      if (!text) return;
      threshold = { kind: 'share', value: Number(text.trim().slice(0, -1)) / 100 };
    }
    // Firmware that never ends (a super-loop) has no end to run to: a window of passes over a
    // function or line of its main loop is measured instead ("100 iterations of the main loop").
    let window: { safeStop: CodeLocation; dwell: number } | undefined;
    if (command === 'descent') {
      const picked = await vscode.window.showQuickPick(
        [
          {
            label: 'To the end of the program',
            description: 'exit, programEnd, or the end found in the code',
            window: false,
          },
          {
            label: 'A window of passes',
            description: 'firmware that never ends: N passes over a function or line of its main loop',
            window: true,
          },
        ],
        { title: 'Call-graph descent: where does a run end?' },
      );
      if (!picked) return;
      if (picked.window) {
        const where = await vscode.window.showInputBox({
          title: 'Window of passes: the function or line each pass goes through',
          prompt: 'A function (read_sensor), an address (0x80000412) or a line (main.c:42) of the main loop.',
          placeHolder: 'e.g. read_sensor',
          validateInput: (v) => (v.trim() ? undefined : 'Name a function, 0xADDRESS or file.c:LINE'),
        });
        if (!where) return;
        const passes = await vscode.window.showInputBox({
          title: 'Window of passes: how many passes per run',
          value: '100',
          validateInput: (v) => (/^[1-9]\d*$/.test(v.trim()) ? undefined : 'A whole number of passes, 1 or more'),
        });
        if (!passes) return;
        window = { safeStop: passLocation(where.trim()), dwell: Number(passes.trim()) };
      }
    }
    const slots = vscode.workspace.getConfiguration('cyclelens').get<number>('profileSlots') ?? 4;
    const start = typeof config['stopAtEntry'] === 'string' ? config['stopAtEntry'] : 'main';
    const request: ScenarioRequest = {
      command,
      threshold,
      slots,
      start,
      roots: [],
      rounds: 1,
      lookahead: true,
      ...(window ? { cyclic: window.safeStop } : {}),
    };
    const workspace = session.workspaceFolder?.uri.fsPath ?? vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
    // A dynamic call graph saved in the workspace lets descent measure cold functions in groups.
    const saved = command === 'descent' && workspace ? await workspaceCallGraph(workspace) : undefined;
    if (saved && 'problem' in saved) output.warn(`the saved call graph is not used: ${saved.problem}`);
    else if (saved) {
      request.savedGraph = { ...saved, optional: true };
      output.info(`descent uses the call counts of ${saved.file}`);
    }
    const folder = session.workspaceFolder?.uri.fsPath ?? vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
    const stamp = new Date().toISOString().replace(/[:.]/g, '-');
    // Finished runs are saved as each is read out, so a GDB or QEMU dying at run 9 of 10 costs one run.
    const partialFile = folder ? join(folder, '.cyclelens', 'results', `${command}-${stamp}.partial.json`) : undefined;
    const finished: ResultSet[] = [];
    let partialSaved = false;
    // Runs of several sessions end in any order: their saves go one at a time.
    let saves = Promise.resolve();
    const extraSessions: Promise<AdapterSession | undefined>[] = [];
    let ended = false;
    const savePartial = async (rs: ResultSet): Promise<void> => {
      finished.push(rs);
      if (!partialFile) return;
      try {
        await saveResultSetDocument(partialFile, resultSetDocument(finished, undefined, 'cyclelens-vscode (partial)'));
        partialSaved = true;
      } catch (err) {
        // A full disk must not end the analysis: the findings still reach the report.
        if (partialSaved || finished.length === 1)
          output.warn(
            `the finished runs could not be saved to ${partialFile} ` +
              `(${err instanceof Error ? err.message : String(err)}); the analysis goes on`,
          );
        partialSaved = false;
      }
    };
    try {
      const outcome = await vscode.window.withProgress(
        {
          location: vscode.ProgressLocation.Notification,
          title: command === 'descent' ? 'CycleLens: call-graph descent' : 'CycleLens: full profile',
          cancellable: true,
        },
        async (progress, token) => {
          const controller = new AbortController();
          token.onCancellationRequested(() => controller.abort());
          // A session whose QEMU or GDB died may leave a request of the run unanswered: the analysis
          // ends with the session, not with that request's timeout.
          const sessionEnd = tracker.rejectWhenEnded(session, () => {
            controller.abort();
            return new Error('The debug session has ended.');
          });
          const profilerOptions: DapProfilerOptions = {
            slots,
            mode: window
              ? { kind: 'cyclic', safeStop: window.safeStop, dwell: window.dwell }
              : { kind: 'single-pass', start },
            executable: String(config['executable']),
            log: (line) => output.info(line),
            onResultSet: (rs) => (saves = saves.then(() => savePartial(rs))),
          };
          const profiler = new DapProfiler(session, profilerOptions);
          const decision = decideJobs(
            vscode.workspace.getConfiguration('cyclelens').get<number>('profiling.jobs') ?? 0,
            {
              request: config.request === 'attach' ? 'attach' : 'launch',
              server: config['server'] as JobsTarget['server'],
            },
          );
          if (decision.note) output.info(decision.note);
          const adapterPath = vscode.Uri.joinPath(extensionUri, 'dist', 'adapter.js').fsPath;
          const workers: ScenarioWorkers | undefined =
            decision.jobs > 1
              ? {
                  jobs: decision.jobs,
                  start: async (index) => {
                    const log = (line: string): void => output.info(`[worker ${index + 1}] ${line}`);
                    const starting = AdapterSession.start({
                      adapterPath,
                      // Relative paths of the configuration resolve where the user's session resolves them.
                      launch: {
                        request: 'launch',
                        args: {
                          ...config,
                          stopAtEntry: start,
                          ...(config['cwd'] === undefined && folder ? { cwd: folder } : {}),
                        },
                      },
                      timeoutMs: 120_000,
                      log,
                      client: { id: 'cyclelens-vscode', name: 'CycleLens parallel runs' },
                    });
                    extraSessions.push(starting.catch(() => undefined));
                    const extra = await starting;
                    if (ended) throw new WorkerNotNeeded();
                    return new DapProfiler(extra.client, { ...profilerOptions, log, totalFrom: profiler });
                  },
                }
              : undefined;
          const scenario = runScenario(request, profiler, {
            signal: controller.signal,
            onProgress: (line) => {
              progress.report({ message: line });
              output.info(line);
            },
            title: `${session.name}: ${command}`,
            generator: 'cyclelens-vscode',
            ...(workers ? { workers } : {}),
          });
          try {
            return await Promise.race([scenario, sessionEnd.ended]);
          } finally {
            sessionEnd.dispose();
            // The scenario may still settle after the session's end won the race.
            scenario.catch(() => undefined);
            // Every headless session ends with the analysis, however it ended.
            ended = true;
            controller.abort();
            await Promise.all(extraSessions.map(async (p) => (await p)?.close()));
            await saves;
          }
        },
      );
      let reportFile: string | undefined;
      let resultFile: string | undefined;
      if (folder) {
        const file = join(folder, '.cyclelens', 'results', `${command}-${stamp}.json`);
        await saveResultSetDocument(file, outcome.document);
        resultFile = file;
        await writeFileAtomic(file.replace(/\.json$/, '.dot'), outcome.dot);
        // The report is saved beside its result set and opened from there: an unsaved document
        // would ask "Do you want to save…?" whenever it is closed.
        reportFile = file.replace(/\.json$/, '.txt');
        await writeFileAtomic(reportFile, outcome.report);
        output.info(`result sets saved to ${file}, the report to ${reportFile}`);
        // The whole document now holds every run: the partial one has done its job.
        if (partialFile) await unlink(partialFile).catch(() => undefined);
      }
      const doc = reportFile
        ? await vscode.workspace.openTextDocument(vscode.Uri.file(reportFile))
        : await vscode.workspace.openTextDocument({ content: outcome.report, language: 'plaintext' });
      // In the results group, where "Open Call Graph" puts the panel too: one group, however many descents.
      await vscode.window.showTextDocument(doc, { preview: false, viewColumn: resultsColumn() });
      const summary =
        `${outcome.document.analysis?.runs ?? outcome.result.runs} runs; ` +
        `${outcome.rows.filter((r) => r.status === 'measured').length} functions measured, ` +
        `${outcome.rows.filter((r) => r.status === 'pruned').length} pruned`;
      const openGraph = 'Open Call Graph';
      void vscode.window
        .showInformationMessage(
          `CycleLens ${command === 'descent' ? 'descent' : 'profile'} finished: ${summary}.`,
          ...(resultFile ? [openGraph] : []),
        )
        .then((choice) => {
          if (choice === openGraph && resultFile)
            void vscode.commands.executeCommand('cyclelens.showCallGraph', vscode.Uri.file(resultFile));
        });
    } catch (err) {
      // The same facts as the command line prints: what died, and where the finished runs are.
      const ending = await tracker.endingOf(session, 2000);
      const lines = interruptedAnalysisLines({
        command,
        error: err instanceof Error ? err.message : String(err),
        sessionEnded: ending.ended,
        ...(ending.reason ? { endReason: ending.reason } : {}),
        savedRuns: partialSaved ? finished.length : 0,
        resultSets: finished.length,
        ...(partialFile && folder ? { savedIn: relative(folder, partialFile) } : {}),
        resumeHint: 'command-line',
      });
      for (const line of lines) output.error(line);
      void vscode.window
        .showErrorMessage(`CycleLens ${command} failed: ${lines.join('\n')}`, 'Show Log')
        .then((c) => c && output.show());
    }
  };

  return [
    vscode.commands.registerCommand('cyclelens.descent', () => run('descent')),
    vscode.commands.registerCommand('cyclelens.fullProfile', () => run('profile')),
    vscode.commands.registerCommand('cyclelens.openResultSet', async () => {
      const picked = await vscode.window.showOpenDialog({
        canSelectMany: false,
        filters: { 'CycleLens result sets': ['json'] },
        title: 'Open a CycleLens result set',
      });
      if (!picked?.[0]) return;
      try {
        // Data, never code: the loader validates every field against the schema.
        const doc = await loadResultSetDocument(picked[0].fsPath);
        const outcomes = doc.analysis?.outcomes ?? [];
        void vscode.window.showInformationMessage(
          `${basename(picked[0].fsPath)}: ${doc.resultSets.length} result set(s), ` +
            `${outcomes.filter((o) => o.status === 'measured').length} functions measured.`,
        );
      } catch (err) {
        void vscode.window.showErrorMessage(err instanceof Error ? err.message : String(err));
      }
    }),
  ];
}

/** `read_sensor`, `0x80000412` or `main.c:42` as a location. */
function passLocation(text: string): CodeLocation {
  if (/^0x[0-9a-f]+$/i.test(text)) return { address: text };
  const line = /^(.+):(\d+)$/.exec(text);
  if (line) return { path: line[1]!, line: Number(line[2]) };
  return { function: text };
}
