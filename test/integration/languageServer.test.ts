import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadResultSetDocument, writeFileAtomic, type ResultSetDocument } from '../../core/analysis/resultSet';
import { profileFromResultSets } from '../../core/profile/fromResultSet';
import { functionsByName, type Profile } from '../../core/profile/model';
import { formatNumber } from '../../core/profile/units';
import { lensTitle } from '../../lsp/presentation';
import { cliBundle, cliWorkspace, type CliWorkspace } from '../support/cliWorkspace';
import { LspTestClient } from '../support/lspClient';
import { fixtureElf, fixturesDir, repoRoot, type FixtureTarget } from '../support/paths';

/**
 * The profile language server, driven over stdio by real LSP clients (the protocol layer of VS
 * Code's language client, and Neovim's built-in client in headless mode), serving the result sets
 * of a real call-graph descent on QEMU RV32 saved by the `cyclelens` command line. What the clients
 * receive is checked against the saved measurements themselves: each function's share is its
 * inclusive count over its run's total, its calls are the payload's count, and its lens sits on
 * the source line that defines it.
 */
const DSP = join(fixturesDir, 'src', 'dsp.c');
const HOT_PERCENT = 5;

/** The 0-based line that defines `name` in `file` (not a prototype, not a call). */
function definitionLineOf(file: string, name: string): number {
  const lines = readFileSync(file, 'utf8').split('\n');
  const index = lines.findIndex((l) => new RegExp(`^[A-Za-z_].*\\b${name}\\s*\\(`).test(l) && !/;\s*$/.test(l));
  assert.ok(index >= 0, `${name} is defined in ${file}`);
  return index;
}

/** The share as the lens prints it: one decimal, two below 1 %. */
function percentText(share: number): string {
  const percent = share * 100;
  return `${percent.toFixed(percent < 1 ? 2 : 1)} %`;
}

interface Expected {
  name: string;
  line: number;
  share: number;
  calls: number;
  inclusive: number;
}

/** The measured functions defined in dsp.c, from the saved result sets (not from the server's model). */
function expectedInDsp(doc: ResultSetDocument): Expected[] {
  const graph = doc.analysis!.callGraph!;
  const out: Expected[] = [];
  for (const o of doc.analysis!.outcomes) {
    const fn = graph.functions.find((f) => f.name === o.name);
    if (o.status !== 'measured' || o.resultSet === undefined || fn?.path !== DSP) continue;
    const rs = doc.resultSets[o.resultSet]!;
    const m = rs.measurements.find((x) => x.name === o.name)!;
    const inclusive = m.inclusive[rs.run.event]!;
    out.push({
      name: o.name,
      line: definitionLineOf(DSP, o.name),
      share: inclusive / rs.run.totals[rs.run.event]!,
      calls: m.calls,
      inclusive,
    });
  }
  return out;
}

/** A workspace whose launch.json runs the singlepass fixture on `target`'s QEMU `machine` as configuration `name`. */
function lspWorkspace(prefix: string, name: string, target: FixtureTarget, machine: string): CliWorkspace {
  return cliWorkspace(
    prefix,
    [
      {
        name,
        executable: fixtureElf(target, 'singlepass'),
        server: { type: 'qemu', machine },
        stopAtEntry: 'main',
        programEnd: 'program_end',
      },
    ],
    { leftBehind: 'no language server, QEMU or GDB is left behind' },
  );
}

describe('profile language server (stdio and Node IPC), on a saved RV32 descent', () => {
  const { dir, env, cli, close } = lspWorkspace('cyclelens-lsp-', 'QEMU RISC-V 32', 'rv32', 'virt');
  const results = join(dir, '.cyclelens', 'results');
  let doc: ResultSetDocument;
  let model: Profile;
  let expected: Expected[];

  before(async () => {
    const out = join(results, 'descent-1.json');
    const r = cli(
      'descent',
      '--config',
      '.vscode/launch.json',
      '--name',
      'QEMU RISC-V 32',
      '--threshold',
      '2%',
      '--out',
      out,
    );
    assert.equal(r.status, 0, r.stderr);
    doc = await loadResultSetDocument(out);
    model = profileFromResultSets(doc);
    expected = expectedInDsp(doc);
    assert.ok(
      expected.length >= 3,
      `the descent measured functions of dsp.c (${expected.map((e) => e.name).join(', ')})`,
    );
    assert.ok(
      expected.some((e) => e.share * 100 >= HOT_PERCENT) && expected.some((e) => e.share * 100 < HOT_PERCENT),
      'dsp.c has functions on both sides of the hot threshold',
    );
  });

  after(close);

  it(
    'answers CodeLens, hover and hot diagnostics with the measured figures ' +
      '(vscode-languageserver-protocol client)',
    async () => {
      const client = await LspTestClient.start(process.execPath, [cliBundle, 'lsp', '--stdio'], dir, env, {
        hotThreshold: HOT_PERCENT,
      });
      try {
        const uri = await client.open(DSP);
        const lenses = await client.until(
          () => client.codeLenses(uri),
          (ls) => ls.length > 0,
        );
        for (const e of expected) {
          const onLine = lenses.filter((l) => l.range.start.line === e.line).map((l) => l.command?.title ?? '');
          assert.equal(
            onLine.length,
            1,
            `one CodeLens on ${e.name}'s definition line ${e.line + 1} (lenses: ${JSON.stringify(lenses)})`,
          );
          const title = onLine[0]!;
          assert.ok(
            title.startsWith(`${percentText(e.share)} incl`),
            `${e.name}: "${title}" starts with its share ${percentText(e.share)}`,
          );
          assert.match(
            title,
            new RegExp(`· ${e.calls.toLocaleString('en-US')} calls?\\b`),
            `${e.name}: "${title}" shows its ${e.calls} calls`,
          );
          assert.equal(
            title,
            lensTitle(model, functionsByName(model).get(e.name)!),
            `${e.name}: the lens is the model's`,
          );
          assert.doesNotMatch(title, /\$\(/, 'no codicons for a client that did not ask for them');

          const hover = await client.hover(uri, e.line);
          const text = typeof hover?.contents === 'object' && 'value' in hover.contents ? hover.contents.value : '';
          assert.match(
            text,
            new RegExp(e.name.replace(/_/g, '\\\\_')),
            `the hover of line ${e.line + 1} names ${e.name}`,
          );
          assert.ok(
            text.includes(
              `inclusive: ${e.inclusive.toLocaleString('en-US')} instructions (${percentText(e.share)} of the window)`,
            ),
            `${e.name}'s hover gives its inclusive count in instructions: ${text}`,
          );
          assert.ok(text.includes(`calls: ${e.calls.toLocaleString('en-US')}`), `${e.name}'s hover gives its calls`);
          assert.match(text, /Unit: instructions\. Provenance: injected software accumulation \(minstret\)/);
          assert.match(text, /Error bound: /);
        }
        // Pruned functions carry their callers' bound, from the descent's own outcome.
        for (const o of doc.analysis!.outcomes.filter((x) => x.status === 'pruned' && x.bound !== undefined)) {
          const fn = doc.analysis!.callGraph!.functions.find((f) => f.name === o.name);
          if (fn?.path !== DSP) continue;
          const line = definitionLineOf(DSP, o.name);
          assert.ok(
            lenses.some(
              (l) =>
                l.range.start.line === line &&
                l.command?.title === `pruned: ≤ ${percentText(o.bound!)} (callers' bound)`,
            ),
            `${o.name} shows "pruned: ≤ ${percentText(o.bound!)}" ` +
              `(lenses: ${JSON.stringify(lenses.filter((l) => l.range.start.line === line))})`,
          );
        }
        const hot = expected.filter((e) => e.share * 100 >= HOT_PERCENT);
        const diagnostics = await client.until(
          () => client.diagnosticsOf(uri),
          (d) => d !== undefined,
        );
        assert.deepEqual(
          diagnostics!.map((d) => d.range.start.line).sort((a, b) => a - b),
          hot.map((e) => e.line).sort((a, b) => a - b),
          'an Information diagnostic on each function at or above 5 %, and on no other',
        );
        for (const d of diagnostics!) {
          assert.equal(d.severity, 3, 'Information');
          assert.match(d.message, /takes \d+\.\d+ % of the window inclusive/);
        }
        // A higher threshold from the editor's settings: only the hottest function stays marked.
        const sorted = [...expected].sort((a, b) => b.share - a.share);
        const between = ((sorted[0]!.share + sorted[1]!.share) / 2) * 100;
        await client.configure({ cyclelens: { hotThreshold: between } });
        const fewer = await client.until(
          () => client.diagnosticsOf(uri),
          (d) => d !== undefined && d.length === 1,
        );
        assert.deepEqual(
          fewer!.map((d) => d.range.start.line),
          [sorted[0]!.line],
          `hotThreshold ${between.toFixed(2)} % leaves ${sorted[0]!.name} alone marked`,
        );
      } finally {
        assert.equal(await client.stop(), 0, 'the server exits with 0 after shutdown and exit');
      }
    },
  );

  it(
    "serves the same lenses from dist/lsp.js over Node IPC, the transport the extension's " + 'language client uses',
    async () => {
      const client = await LspTestClient.startIpc(join(repoRoot, 'dist', 'lsp.js'), dir, env, {
        hotThreshold: HOT_PERCENT,
        codicons: true,
      });
      try {
        const uri = await client.open(DSP);
        const lenses = await client.until(
          () => client.codeLenses(uri),
          (ls) => ls.length > 0,
        );
        for (const e of expected) {
          const title = lenses.find((l) => l.range.start.line === e.line)?.command?.title;
          assert.equal(
            title,
            `$(flame) ${lensTitle(model, functionsByName(model).get(e.name)!)}`,
            `${e.name}: VS Code's lens carries the flame codicon`,
          );
        }
      } finally {
        assert.equal(await client.stop(), 0);
      }
    },
  );

  it("answers Neovim's built-in LSP client (headless) with the same CodeLens and hover", { timeout: 60_000 }, () => {
    const output = join(dir, 'nvim-answers.json');
    const script = join(dir, 'nvim-lsp.lua');
    const fir = expected.reduce((a, b) => (b.share > a.share ? b : a));
    writeFileSync(
      script,
      `
local client_id = vim.lsp.start_client({
  name = 'cyclelens',
  cmd = { ${JSON.stringify(process.execPath)}, ${JSON.stringify(cliBundle)}, 'lsp', '--stdio' },
  root_dir = ${JSON.stringify(dir)},
  init_options = { hotThreshold = ${HOT_PERCENT} },
})
vim.cmd('edit ' .. ${JSON.stringify(DSP)})
local buf = vim.api.nvim_get_current_buf()
vim.lsp.buf_attach_client(buf, client_id)
vim.wait(10000, function() local c = vim.lsp.get_client_by_id(client_id); return c ~= nil and c.initialized end, 50)
local doc = { uri = vim.uri_from_bufnr(buf) }
local lenses = {}
vim.wait(10000, function()
  local answers = vim.lsp.buf_request_sync(buf, 'textDocument/codeLens', { textDocument = doc }, 5000) or {}
  lenses = (answers[client_id] or {}).result or {}
  return #lenses > 0
end, 100)
local hover = vim.lsp.buf_request_sync(buf, 'textDocument/hover', ` +
        `{ textDocument = doc, position = { line = ${fir.line}, character = 0 } }, 5000) or {}
vim.fn.writefile({ vim.fn.json_encode({ lenses = lenses, hover = (hover[client_id] or {}).result }) }, ` +
        `${JSON.stringify(output)})
vim.lsp.stop_client(client_id)
vim.wait(5000, function() return vim.lsp.get_client_by_id(client_id) == nil end, 50)
vim.cmd('qa!')
`,
    );
    const r = spawnSync('nvim', ['--headless', '-u', 'NONE', '-i', 'NONE', '-n', '-c', `luafile ${script}`], {
      cwd: dir,
      encoding: 'utf8',
      timeout: 50_000,
      env,
    });
    assert.equal(r.status, 0, `nvim: ${r.stderr}`);
    const answers = JSON.parse(readFileSync(output, 'utf8')) as {
      lenses: Array<{ range: { start: { line: number } }; command: { title: string } }>;
      hover: { contents: { value: string } } | null;
    };
    for (const e of expected) {
      const title = answers.lenses.find((l) => l.range.start.line === e.line)?.command.title;
      assert.equal(
        title,
        lensTitle(model, functionsByName(model).get(e.name)!),
        `Neovim receives ${e.name}'s lens on line ${e.line + 1}`,
      );
      assert.ok(title!.startsWith(`${percentText(e.share)} incl`));
    }
    assert.ok(
      answers.hover?.contents.value.includes(`inclusive: ${fir.inclusive.toLocaleString('en-US')} instructions`),
      `Neovim's hover on ${fir.name}: ${JSON.stringify(answers.hover)}`,
    );
  });

  it(
    'follows the newest profile as it is saved: a later result set, then a native profile with ' + 'line costs',
    async () => {
      const client = await LspTestClient.start(process.execPath, [cliBundle, 'lsp', '--stdio'], dir, env);
      try {
        const uri = await client.open(DSP);
        const target = expected.reduce((a, b) => (b.share > a.share ? b : a));
        const titleOf = async (): Promise<string | undefined> =>
          (await client.codeLenses(uri)).find((l) => l.range.start.line === target.line)?.command?.title;
        assert.match(
          (await client.until(titleOf, (t) => t !== undefined)) ?? '',
          new RegExp(`${target.calls.toLocaleString('en-US')} calls`),
        );

        // A later descent: same measurements, the target's call count changed so its lens must change.
        const later = structuredClone(doc);
        for (const rs of later.resultSets) for (const m of rs.measurements) if (m.name === target.name) m.calls = 4321;
        await writeFileAtomic(join(results, 'descent-2.json'), JSON.stringify(later));
        assert.match(
          (await client.until(titleOf, (t) => t?.includes('4,321 calls') === true)) ?? '',
          /· 4,321 calls/,
          'the lens follows the newer result set',
        );

        // A native profile (cyclelens-profile/1) with a per-line table is newer still.
        const profile = profileFromResultSets(doc);
        const fn = functionsByName(profile).get(target.name)!;
        fn.calls = 999;
        const costLine = target.line + 3;
        profile.lines = [{ path: DSP, line: costLine + 1, function: fn.id, self: { value: 1234 } }];
        mkdirSync(join(dir, '.cyclelens', 'profiles'), { recursive: true });
        await writeFileAtomic(
          join(dir, '.cyclelens', 'profiles', 'later.cyclelens-profile.json'),
          JSON.stringify(profile),
        );
        assert.match(
          (await client.until(titleOf, (t) => t?.includes('999 calls') === true)) ?? '',
          /· 999 calls/,
          'the lens follows the native profile',
        );
        const hints = (await client.inlayHints(uri, 0, 400)) ?? [];
        const lineText = readFileSync(DSP, 'utf8').split('\n')[costLine]!;
        assert.deepEqual(
          hints.map((h) => ({ line: h.position.line, character: h.position.character, label: h.label })),
          [
            {
              line: costLine,
              character: lineText.length,
              label: `1,234 insn · ${percentText(1234 / profile.total!.value)}`,
            },
          ],
          'one inlay hint, at the end of the line the profile costs',
        );
        assert.ok(
          client.log.some((l) => l.includes('later.cyclelens-profile.json')),
          `the server says which profile it reads (${client.log.join(' | ')})`,
        );
      } finally {
        assert.equal(await client.stop(), 0);
      }
    },
  );
});

describe('profile language server over stdio, on a saved Cortex-M4 descent (SysTick)', () => {
  const { dir, env, cli, close } = lspWorkspace('cyclelens-lsp-m4-', 'QEMU Cortex-M4', 'cortex-m4', 'mps2-an386');
  let doc: ResultSetDocument;
  let model: Profile;

  after(close);

  it(
    'shows SysTick counts as ticks, with the quantisation bound of ±1 tick per call in every lens',
    { timeout: 300_000 },
    async () => {
      const out = join(dir, '.cyclelens', 'results', 'descent.json');
      const r = cli(
        'descent',
        '--config',
        '.vscode/launch.json',
        '--name',
        'QEMU Cortex-M4',
        '--threshold',
        '5%',
        '--out',
        out,
      );
      assert.equal(r.status, 0, r.stderr);
      doc = await loadResultSetDocument(out);
      model = profileFromResultSets(doc);
      const expected = expectedInDsp(doc);
      assert.ok(
        expected.length >= 2,
        `the descent measured functions of dsp.c (${expected.map((e) => e.name).join(', ')})`,
      );
      const total = doc.resultSets[0]!.run.totals[doc.resultSets[0]!.run.event]!;

      const client = await LspTestClient.start(process.execPath, [cliBundle, 'lsp', '--stdio'], dir, env);
      try {
        const uri = await client.open(DSP);
        const lenses = await client.until(
          () => client.codeLenses(uri),
          (ls) => ls.length > 0,
        );
        for (const e of expected) {
          const title = lenses.find((l) => l.range.start.line === e.line)?.command?.title ?? '';
          assert.ok(title.startsWith(`${percentText(e.share)} incl`), `${e.name}: "${title}" starts with its share`);
          assert.equal(title, lensTitle(model, functionsByName(model).get(e.name)!));
          // Each call's delta is off by less than a tick either way: N calls, ±N ticks, as a share of the window.
          const bound = /· ±(\d+(?:\.\d+)?) %$/.exec(title);
          assert.ok(bound, `${e.name}: "${title}" ends with its error bound`);
          const expectedBound = (e.calls / total) * 100;
          assert.ok(
            Math.abs(Number(bound[1]) - expectedBound) <= 0.05 * expectedBound + 0.001,
            `${e.name}: ±${bound[1]} % is ${e.calls} ticks of ${total} (${expectedBound.toFixed(4)} %)`,
          );
          const hover = await client.hover(uri, e.line);
          const text = typeof hover?.contents === 'object' && 'value' in hover.contents ? hover.contents.value : '';
          // A bound clipped at zero ticks shows both sides (−value/+N). A count keeps two decimals
          // below 100 and none above (core/profile/units.ts): ticks less the payload's compensation
          // are fractional.
          const counted = `inclusive: ${formatNumber(e.inclusive)} SysTick ticks`;
          const calls = e.calls.toLocaleString('en-US');
          assert.ok(
            text.includes(`${counted} ±${calls} ticks`) ||
              text.includes(`${counted} −${formatNumber(e.inclusive)}/+${calls} ticks`),
            `${e.name}'s hover gives its count in ticks with its bound: ${text}`,
          );
          assert.match(text, /Error bound: (±|−[\d,]+\/\+)[\d,]+ ticks \(counter quantisation\)/);
          assert.doesNotMatch(text, /cycles/, 'SysTick ticks are never called cycles');
        }
      } finally {
        assert.equal(await client.stop(), 0);
      }
    },
  );
});
