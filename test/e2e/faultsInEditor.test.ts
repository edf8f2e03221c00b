import assert from 'node:assert/strict';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { loadResultSetDocument } from '../../core/analysis/resultSet';
import { CodeServerHarness } from '../support/codeServerHarness';
import { answerDescentPrompts, notifications, rv32, stopAndExpectNothingLeft } from '../support/codeServerUi';
import { markerLine } from '../support/markers';

// A fault under the editor, as under the command line (test/integration/cliFaults.test.ts): a
// descent runs from the Command Palette on the RV32 demo, and the session's real QEMU is killed
// (SIGKILL) while its runs go on. The progress notification must end in the message the command
// line prints (what died, how, where the finished runs are), and those runs must be on disk.

const descentCommand = 'CycleLens: Where Do My Cycles Go? (Call-Graph Descent)…';
const progressTitle = /CycleLens: call-graph descent/;
const failed = /CycleLens descent failed/;

let harness: CodeServerHarness | undefined;
let mainLine = 0;

before(
  async () => {
    // One measurement slot per run: more runs, so the kill lands between finished ones. One job:
    // the QEMU killed is the session's own, not a parallel worker's.
    harness = await CodeServerHarness.start({
      name: 'faultsInEditor',
      requireFirmware: true,
      settings: { 'cyclelens.profileSlots': 1, 'cyclelens.profiling.jobs': 1 },
    });
    mainLine = markerLine(join(harness.workspace, 'src', 'singlepass.c'), '#MAIN_FIRST');
  },
  { timeout: 15 * 60_000 },
);

after(() => stopAndExpectNothingLeft(harness));

/** The partial result-set files of this workspace (descent-<stamp>.partial.json). */
function partialFiles(workspace: string): string[] {
  const dir = join(workspace, '.cyclelens', 'results');
  return existsSync(dir)
    ? readdirSync(dir)
        .filter((n) => /^descent-.*\.partial\.json$/.test(n))
        .map((n) => join(dir, n))
    : [];
}

test(
  'QEMU killed during a descent from the Command Palette: the notification names what died ' +
    'and where the finished runs are, and they are kept',
  { timeout: 300_000 },
  async (t) => {
    const h = harness!;
    await h.startDebugging(rv32);
    await h.waitForTopFrame('main', mainLine, 60_000);
    await h.runCommand(descentCommand);
    await answerDescentPrompts(h, '1%');

    // Wait for a finished run on disk, then kill the session's emulator for real.
    let killed: { pid: number; command: string } | undefined;
    let runsBefore = 0;
    const seen: string[] = [];
    for (const started = Date.now(); !killed && Date.now() - started < 180_000;) {
      await new Promise((r) => setTimeout(r, 200));
      for (const n of await notifications(h)) if (!seen.includes(n)) seen.push(n);
      if (seen.some((n) => failed.test(n) || /descent finished/.test(n))) break;
      const file = partialFiles(h.workspace)[0];
      if (!file) continue;
      runsBefore = (await loadResultSetDocument(file).catch(() => undefined))?.resultSets.length ?? 0;
      if (runsBefore === 0) continue;
      killed = (await h.serverProcesses(/qemu-system-riscv32/))[0];
      if (killed) process.kill(killed.pid, 'SIGKILL');
    }
    assert.ok(killed, `no QEMU to kill while runs were saved (notifications: ${JSON.stringify(seen)})`);
    t.diagnostic(`killed QEMU ${killed.pid} with ${runsBefore} run(s) saved`);

    let ended: string | undefined;
    for (const started = Date.now(); !ended && Date.now() - started < 60_000;) {
      for (const n of await notifications(h)) if (!seen.includes(n)) seen.push(n);
      ended = seen.find((n) => failed.test(n) || /descent finished/.test(n));
      if (!ended) await new Promise((r) => setTimeout(r, 250));
    }
    await h.page
      .locator('.notifications-toasts .notification-toast', { hasText: progressTitle })
      .waitFor({ state: 'hidden', timeout: 10_000 })
      .catch(() => undefined);
    const progressLeft = await h.page
      .locator('.notifications-toasts .notification-toast', { hasText: progressTitle })
      .count();
    await h.screenshot('faultsInEditor-qemu-killed');
    t.diagnostic(`notifications: ${seen.join(' || ')}`);
    if (!ended) {
      // The workbench may put a notification straight into the notification centre without a toast
      // (several arrived at once as the session ended): the user finds it under the bell, and so does
      // the test. A descent that never ended is in neither place.
      await h.runCommand('Notifications: Show Notifications');
      const centre = await h.page
        .locator('.notifications-center .notification-list-item')
        .evaluateAll((els) => els.map((e) => (e as HTMLElement).innerText.replace(/\s+/g, ' ').trim()));
      t.diagnostic(`notification centre: ${centre.join(' || ')}`);
      await h.screenshot('faultsInEditor-notification-centre');
      ended = centre.find((n) => failed.test(n) || /descent finished/.test(n));
    }

    assert.ok(
      ended,
      `the descent did not end within 60 s of the kill (toasts: ${JSON.stringify(seen)}; nothing ` +
        `in the notification centre either)`,
    );
    assert.match(ended, failed, 'the descent reports a failure, not a result');
    assert.equal(progressLeft, 0, 'the progress notification is gone');
    assert.match(
      ended,
      /the debug session ended in the middle of the analysis: QEMU was killed by SIGKILL while the session was running/,
      'the message names what died and how',
    );
    const saved = new RegExp(
      /(\d+) finished run\(s\) \((\d+) result set\(s\) in all\) are saved in /.source +
        /(\.cyclelens\/results\/descent-\S+\.partial\.json); a descent on the command line continues /.source +
        'from them: cyclelens descent … --resume \\3',
    ).exec(ended);
    assert.ok(saved, `the message says where the finished runs are: "${ended}"`);

    // The file it names holds exactly the runs it counts, at least those seen before the kill.
    const doc = await loadResultSetDocument(join(h.workspace, saved[3]!));
    assert.equal(doc.resultSets.length, Number(saved[1]), 'every finished run is in the file');
    assert.ok(
      doc.resultSets.length >= runsBefore,
      `${doc.resultSets.length} result sets kept, ${runsBefore} were saved before the kill`,
    );
    for (const rs of doc.resultSets)
      assert.ok(
        rs.measurements.length > 0 || Object.keys(rs.run.totals).length > 0,
        `result set ${rs.id} has readings`,
      );
  },
);
