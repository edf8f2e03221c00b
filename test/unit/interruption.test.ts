import assert from 'node:assert/strict';
import { test } from 'node:test';
import { interruptedAnalysisLines } from '../../core/profiling/interruption';

test('an interrupted analysis names the error, what ended the session and where the finished runs are', () => {
  const died = 'QEMU was killed by SIGKILL while the session was running.';
  const base = {
    command: 'descent' as const,
    error: 'the debug session has ended',
    sessionEnded: true,
    endReason: died,
    savedRuns: 3,
    resultSets: 5,
    savedIn: 'out.json',
  };
  assert.deepEqual(interruptedAnalysisLines({ ...base, resumeHint: 'same-command' }), [
    'the debug session has ended',
    `the debug session ended in the middle of the analysis: ${died}`,
    '3 finished run(s) (5 result set(s) in all) are saved in out.json; continue with the same ' +
      'command and --resume out.json',
  ]);
  assert.match(
    interruptedAnalysisLines({ ...base, resumeHint: 'command-line' })[2]!,
    /saved in out\.json; a descent on the command line continues from them: cyclelens descent … --resume out\.json$/,
  );
  assert.match(
    interruptedAnalysisLines({ ...base, command: 'profile', resumeHint: 'same-command' })[2]!,
    /; a descent continues from them with --resume$/,
  );
  // Nothing saved, nothing ended: only the error.
  const { endReason: _reason, ...noReason } = base;
  assert.deepEqual(
    interruptedAnalysisLines({ ...noReason, sessionEnded: false, savedRuns: 0, resumeHint: 'same-command' }),
    ['the debug session has ended'],
  );
  assert.equal(
    interruptedAnalysisLines({ ...noReason, savedRuns: 0, resumeHint: 'same-command' })[1],
    'the debug session ended in the middle of the analysis: the adapter gave no reason',
  );
});
