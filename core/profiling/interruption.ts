/**
 * What the command line and the editor both say when an analysis stops on an error: the error, what
 * ended the debug session (the process that died, how, its last output, in the adapter's words), and
 * where the runs finished before it are kept. One text for both front ends, so a user reads the same
 * facts whichever started the analysis.
 */
export interface InterruptedAnalysis {
  command: 'descent' | 'profile';
  error: string;
  /** The session is over (the adapter said so, or the process ended). */
  sessionEnded: boolean;
  /** The adapter's own words for why the session ended, if it said. */
  endReason?: string;
  /** Runs finished in this analysis and saved, and the result sets in the file in all (with resumed ones). */
  savedRuns: number;
  resultSets: number;
  /** Where they are, as the user should read it (relative to the workspace or the current folder). */
  savedIn?: string;
  /** How the user continues from them: the command line's own flag, or the command to type there. */
  resumeHint: 'same-command' | 'command-line';
}

export function interruptedAnalysisLines(i: InterruptedAnalysis): string[] {
  const lines = [i.error];
  if (i.sessionEnded || i.endReason)
    lines.push(`the debug session ended in the middle of the analysis: ${i.endReason ?? 'the adapter gave no reason'}`);
  if (i.savedIn && i.savedRuns > 0) {
    const resume =
      i.command !== 'descent'
        ? 'a descent continues from them with --resume'
        : i.resumeHint === 'same-command'
          ? `continue with the same command and --resume ${i.savedIn}`
          : `a descent on the command line continues from them: cyclelens descent … --resume ${i.savedIn}`;
    lines.push(
      `${i.savedRuns} finished run(s) (${i.resultSets} result set(s) in all) are saved in ${i.savedIn}; ${resume}`,
    );
  }
  return lines;
}
