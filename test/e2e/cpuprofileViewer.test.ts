import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { exportFormat } from '../../core/export/formats';
import { CodeServerHarness } from '../support/codeServerHarness';
import { stopAndExpectNothingLeft } from '../support/codeServerUi';
import { sampleProfile } from '../support/sampleProfiles';

// The `.cpuprofile` export opened by VS Code's own profile viewer (the built-in js-profile-table
// extension) in code-server: the file is the consumer's input, and the viewer's table must list the
// profile's functions with their self values.

let harness: CodeServerHarness | undefined;

before(
  async () => {
    harness = await CodeServerHarness.start({ name: 'cpuprofileViewer', requireFirmware: false });
  },
  { timeout: 15 * 60_000 },
);

after(() => stopAndExpectNothingLeft(harness));

test(
  'VS Code opens the .cpuprofile export in its profile table, with every function',
  { timeout: 180_000 },
  async (t) => {
    const h = harness!;
    const profile = sampleProfile();
    writeFileSync(join(h.workspace, 'exported.cpuprofile'), exportFormat('cpuprofile')!.write(profile) as string);
    await h.openFile('exported.cpuprofile', 30_000, { textEditor: false });
    // The viewer is a custom editor: its table lives in the webview's nested frames.
    const table = h.page.frameLocator('iframe.webview.ready').last().frameLocator('iframe#active-frame');
    await table.getByText('fir_filter', { exact: true }).first().waitFor({ timeout: 60_000 });
    const text = (await table.locator('body').innerText()).replace(/\s+/g, ' ');
    t.diagnostic(`profile table: ${text.slice(0, 400)}`);
    for (const name of ['main', 'histogram_fill', 'fir_filter', 'crc16_block'])
      assert.match(text, new RegExp(`\\b${name}\\b`), `${name} is listed`);
    // One sample of the export lasts one microsecond per counted instruction, so the viewer's self time
    // of a function is its self count in microseconds, shown in ms before the function's name.
    for (const f of profile.functions.filter((x) => x.self !== undefined)) {
      const ms = `${(f.self!.value / 1000).toFixed(2)}ms`;
      assert.match(
        text,
        new RegExp(`${ms.replace('.', '\\.')} [\\d.]+ms ${f.name}\\b`),
        `${f.name}'s self time ${ms} is shown`,
      );
    }
    await h.screenshot('cpuprofile-viewer');
  },
);
