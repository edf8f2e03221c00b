import assert from 'node:assert/strict';
import { mkdirSync, readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { extname, join, normalize } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { chromium, type Browser } from 'playwright-core';
import { exportFormat } from '../../core/export/formats';
import { chromiumPath, e2eOutputDir } from '../support/codeServerHarness';
import { repoRoot } from '../support/paths';
import { sampleProfile } from '../support/sampleProfiles';

/**
 * The speedscope export loaded into speedscope's own page (the npm package's dist/release) in
 * Debian's Chromium: the page imports it without an error and shows the profile, by name, with its
 * frames. The page fetches the file by `#profileURL=`, so both are served from a local HTTP server.
 */
describe('speedscope export in speedscope’s page', () => {
  const release = join(repoRoot, 'node_modules', 'speedscope', 'dist', 'release');
  const profile = exportFormat('speedscope')!.write(sampleProfile()) as string;
  let server: Server;
  let browser: Browser;
  let base = '';

  before(async () => {
    server = createServer((req, res) => {
      const path = decodeURIComponent((req.url ?? '/').split(/[?#]/)[0]!);
      if (path === '/sample.speedscope.json') {
        res.writeHead(200, { 'content-type': 'application/json' }).end(profile);
        return;
      }
      const file = normalize(join(release, path === '/' ? 'index.html' : path));
      if (!file.startsWith(release)) return void res.writeHead(403).end();
      try {
        const types: Record<string, string> = {
          '.html': 'text/html',
          '.js': 'text/javascript',
          '.css': 'text/css',
          '.json': 'application/json',
          '.wasm': 'application/wasm',
          '.png': 'image/png',
        };
        res
          .writeHead(200, { 'content-type': types[extname(file)] ?? 'application/octet-stream' })
          .end(readFileSync(file));
      } catch {
        res.writeHead(404).end();
      }
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    browser = await chromium.launch({
      executablePath: chromiumPath,
      args: [
        '--no-sandbox',
        '--disable-gpu',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
        '--no-first-run',
        '--disable-quic',
      ],
    });
  });

  after(async () => {
    await browser?.close();
    await new Promise<void>((r) => server.close(() => r()));
  });

  it('imports without an error and shows the profile and its frames', async () => {
    const page = await browser.newPage({ viewport: { width: 1200, height: 700 } });
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    page.on('dialog', (d) => {
      errors.push(`dialog: ${d.message()}`);
      void d.dismiss();
    });
    await page.goto(`${base}/index.html#profileURL=${encodeURIComponent(`${base}/sample.speedscope.json`)}`);
    // speedscope names the tab after the loaded profile.
    await page.waitForFunction(() => document.title.includes('singlepass.elf'), undefined, { timeout: 30_000 });
    const text = await page.evaluate(() => document.body.innerText);
    assert.doesNotMatch(text, /Something went wrong|Failed to|Unrecognized format/i);
    assert.deepEqual(errors, []);
    mkdirSync(e2eOutputDir, { recursive: true });
    await page.screenshot({ path: join(e2eOutputDir, 'speedscope-export.png') });
    // The flame chart is drawn on canvases; the frame names are in speedscope's table view.
    await page.keyboard.press('3');
    await page.waitForFunction(() => document.body.innerText.includes('fir_filter'), undefined, { timeout: 15_000 });
    const table = await page.evaluate(() => document.body.innerText);
    for (const name of ['main', 'histogram_fill', 'fir_filter', 'crc16_block']) assert.match(table, new RegExp(name));
    await page.close();
  });
});
