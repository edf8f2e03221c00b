import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { importScriptsLib } from '../support/codeServerScripts';
import { repoRoot } from '../support/paths';

// What a person reads in `npm start`'s workspace: its README and the welcome texts of the views.
// A demo user has the workspace, not the CycleLens repository, and VS Code renders links in a
// view's welcome text but no other Markdown.

describe('the demo workspace README', () => {
  const parent = mkdtempSync(join(tmpdir(), 'cyclelens-demo-'));
  after(() => rmSync(parent, { recursive: true, force: true }));

  it('names only what the workspace has, and its build commands work in it', async () => {
    const { demoWorkspace } = await importScriptsLib();
    const { dir } = demoWorkspace.createDemoWorkspace({ dir: join(parent, 'workspace'), allowMissingFirmware: true });
    const readme = readFileSync(join(dir, 'README.md'), 'utf8');
    assert.doesNotMatch(readme, /test\/fixtures/, 'the README names a folder of the CycleLens repository');
    assert.doesNotMatch(readme, /#[A-Z_]+\b/, 'the README names the test markers');
    for (const c of demoWorkspace.demoConfigurations) assert.ok(readme.includes(c.name), `it names "${c.name}"`);
    const block = /```sh\n([\s\S]*?)```/.exec(readme)?.[1] ?? '';
    const commands = block
      .split('\n')
      .map((l) => l.replace(/#.*$/, '').trim())
      .filter((l) => l.startsWith('make'));
    assert.ok(commands.length >= 2, `the README gives its build commands (${JSON.stringify(commands)})`);
    for (const command of commands) {
      // A dry run from the workspace folder: make reads the Makefile and resolves every target named.
      const args = command.split(/\s+/).slice(1);
      const run = spawnSync('make', ['-n', ...args], { cwd: dir, encoding: 'utf8' });
      assert.equal(run.status, 0, `\`${command}\` in the workspace: ${run.stderr}`);
    }
  });
});

describe('view welcome texts', () => {
  const pkg = JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')) as {
    contributes: { viewsWelcome: { view: string; contents: string }[]; commands: { command: string }[] };
  };
  const commands = new Set(pkg.contributes.commands.map((c) => c.command));

  for (const { view, contents } of pkg.contributes.viewsWelcome) {
    it(`${view}: links to contributed commands, and no Markdown VS Code would print as it is`, () => {
      const text = contents.replace(/\[([^\]]+)\]\(command:([\w.]+)\)/g, (_, label: string, command: string) => {
        assert.ok(commands.has(command), `the link "${label}" runs ${command}, which package.json does not contribute`);
        return label;
      });
      assert.doesNotMatch(text, /\*|__|`|\[|\]\(/, `the text keeps Markdown a welcome view shows literally: ${text}`);
    });
  }
});
