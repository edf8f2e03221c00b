import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { newNonce, panelCsp, panelHtml } from '../../extension/panels/panelHtml';
import {
  functionAt,
  functionRanges,
  loadProfileFile,
  restorablePanel,
  resultSetOfReport,
} from '../../extension/panels/profileFiles';
import { syntheticProfile } from '../support/syntheticProfile';

describe('profile panel page', () => {
  const resources = {
    cspSource: 'https://res.example',
    nonce: 'N0nce',
    scriptUri: 'https://res.example/w.js',
    workerUri: 'https://res.example/l.js',
    styleUri: 'https://res.example/s.css',
    title: '<script>x</script>',
  };

  it('relaxes nothing but WebAssembly compilation and a blob worker', () => {
    const csp = panelCsp(resources);
    assert.equal(
      csp,
      "default-src 'none'; script-src 'nonce-N0nce' 'wasm-unsafe-eval'; style-src " +
        'https://res.example; img-src https://res.example; font-src https://res.example; ' +
        'connect-src https://res.example; worker-src blob:',
    );
    assert.ok(!/unsafe-inline|'unsafe-eval'/.test(csp));
  });

  it('has one script, by nonce, and escapes what it is given', () => {
    const html = panelHtml(resources);
    assert.equal(html.match(/<script/g)?.length, 1);
    assert.match(html, /<script nonce="N0nce" src="https:\/\/res.example\/w.js"><\/script>/);
    assert.ok(html.includes('<title>&lt;script&gt;x&lt;/script&gt;</title>'));
    assert.ok(!/ style=/.test(html));
    const nonce = newNonce((n) => new Uint8Array(n).fill(255));
    assert.match(nonce, /^[A-Za-z0-9]{32}$/);
  });
});

describe('profile files', () => {
  it('finds the function a line is in, up to the next function when no end line is known', () => {
    const p = syntheticProfile({ count: 4, sourceLines: 5 });
    const ranges = functionRanges(p);
    // fn_0 spans lines 1..5 (endLine), fn_1 starts at 11, fn_2 at 12, fn_3 at 13.
    assert.equal(functionAt(ranges, '/fw/src/synthetic.c', 3), 'fn_0');
    assert.equal(functionAt(ranges, '/fw/src/synthetic.c', 8), undefined);
    assert.equal(functionAt(ranges, '/fw/src/synthetic.c', 11), 'fn_1');
    assert.equal(functionAt(ranges, '/fw/src/synthetic.c', 500), 'fn_3');
    assert.equal(functionAt(ranges, '/other.c', 3), undefined);
  });

  it('reads a profile file and refuses one of another schema or with missing lists', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cyclelens-panel-'));
    const good = join(dir, 'a.cyclelens-profile.json');
    writeFileSync(good, JSON.stringify(syntheticProfile({ count: 3 })));
    assert.equal((await loadProfileFile(good)).profile.functions.length, 3);
    const other = join(dir, 'b.cyclelens-profile.json');
    writeFileSync(other, JSON.stringify({ schema: 'something-else/1' }));
    await assert.rejects(loadProfileFile(other), /is neither a CycleLens profile .* nor a result set/);
    const broken = join(dir, 'c.cyclelens-profile.json');
    writeFileSync(broken, JSON.stringify({ ...syntheticProfile({ count: 1 }), edges: 'x' }));
    await assert.rejects(loadProfileFile(broken), /\$\.edges must be an array \(found "x"\)/);
    const resultSet = join(dir, 'd.json');
    writeFileSync(resultSet, '{"schema": "cyclelens-resultset/1"');
    await assert.rejects(loadProfileFile(resultSet));
  });
});

describe('panel restored after a window reload', () => {
  it('reopens the file and tab the webview saved, and nothing for a live profile or a foreign state', () => {
    assert.deepEqual(
      restorablePanel({ tab: 'flame', file: '/w/.cyclelens/results/descent.json', search: 'fir', depth: 0 }),
      {
        file: '/w/.cyclelens/results/descent.json',
        tab: 'flame',
      },
    );
    assert.deepEqual(restorablePanel({ tab: 'nonsense', file: '/w/p.cyclelens-profile.json' }), {
      file: '/w/p.cyclelens-profile.json',
      tab: 'graph',
    });
    assert.equal(restorablePanel({ tab: 'graph' }), undefined, 'a live profile has no file');
    assert.equal(restorablePanel({ tab: 'graph', file: 42 }), undefined);
    assert.equal(restorablePanel(undefined), undefined);
    assert.equal(restorablePanel('graph'), undefined);
  });

  it('finds the result set a saved report belongs to, for its Open Call Graph lens', () => {
    assert.equal(
      resultSetOfReport('/w/.cyclelens/results/descent-2026.txt'),
      '/w/.cyclelens/results/descent-2026.json',
    );
    assert.equal(resultSetOfReport('C:\\w\\.cyclelens\\results\\d.txt'), 'C:\\w\\.cyclelens\\results\\d.json');
    assert.equal(resultSetOfReport('/w/results/descent.txt'), undefined, 'not under .cyclelens');
    assert.equal(resultSetOfReport('/w/.cyclelens/results/descent.json'), undefined);
    assert.equal(resultSetOfReport('/w/notes.txt'), undefined);
  });
});
