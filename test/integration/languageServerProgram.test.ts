import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, utimesSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { PROGRAM_NOTIFICATION } from '../../common/profileServer';
import { writeFileAtomic } from '../../core/analysis/resultSet';
import { emptyProfile, type Profile } from '../../core/profile/model';
import { cliBundle } from '../support/cliWorkspace';
import { LspTestClient } from '../support/lspClient';
import { fixtureElf, fixturesDir } from '../support/paths';

/**
 * Which profile the language server serves while a program is debugged: the same sources build
 * for RV32 and Cortex-M4, so a newer RV32 profile put its figures on the sources while the
 * Cortex-M4 ELF was debugged. With `cyclelens/program` naming the debugged ELF (what the extension
 * sends at every session start and end), only a profile made from that ELF is served. The two
 * profiles here are written by hand, one function each with a call count of its own that tells
 * them apart in the lens: what is under test is which file is served, not the figures.
 */
const DSP = join(fixturesDir, 'src', 'dsp.c');

function definitionLine(name: string): number {
  const lines = readFileSync(DSP, 'utf8').split('\n');
  const index = lines.findIndex((l) => new RegExp(`^[A-Za-z_].*\\b${name}\\s*\\(`).test(l) && !/;\s*$/.test(l));
  assert.ok(index >= 0, `${name} is defined in dsp.c`);
  return index;
}

function profileOf(executable: string, calls: number): Profile {
  const p = emptyProfile({
    generator: 'test',
    program: { executable },
    unit: { kind: 'instructions' },
    provenance: { kind: 'oracle', source: 'written by the test' },
  });
  p.total = { value: 10_000 };
  p.functions = [
    {
      id: 0,
      name: 'fir_filter',
      status: 'measured',
      inclusive: { value: 2_500 },
      self: { value: 2_000 },
      calls,
      location: { path: DSP, line: definitionLine('fir_filter') + 1 },
    },
  ];
  return p;
}

describe('profile language server: only the debugged program’s profile', () => {
  const root = mkdtempSync(join(tmpdir(), 'cyclelens-lsp-program-'));
  after(() => rmSync(root, { recursive: true, force: true }));
  const rv32 = fixtureElf('rv32', 'singlepass');
  const cortexM4 = fixtureElf('cortex-m4', 'singlepass');

  it('serves the newest profile of the ELF named by cyclelens/program, and none of another ELF', async (t) => {
    const profiles = join(root, '.cyclelens', 'profiles');
    mkdirSync(profiles, { recursive: true });
    const older = join(profiles, 'cortex-m4.cyclelens-profile.json');
    const newer = join(profiles, 'rv32.cyclelens-profile.json');
    await writeFileAtomic(older, JSON.stringify(profileOf(cortexM4, 222)));
    await writeFileAtomic(newer, JSON.stringify(profileOf(rv32, 111)));
    // The RV32 profile is the newer one by a minute, whatever the file system's time resolution.
    const now = Date.now() / 1000;
    utimesSync(older, now - 60, now - 60);
    utimesSync(newer, now, now);

    const client = await LspTestClient.start(process.execPath, [cliBundle, 'lsp', '--stdio'], root, process.env);
    try {
      const uri = await client.open(DSP);
      const line = definitionLine('fir_filter');
      const title = async (): Promise<string> =>
        (await client.codeLenses(uri)).find((l) => l.range.start.line === line)?.command?.title ?? '';
      const served = (want: RegExp | ''): Promise<string> =>
        client.until(title, (s) => (want === '' ? s === '' : want.test(s)), 15_000);

      assert.match(await served(/111 calls/), /111 calls/, 'no program named: the newest profile (RV32)');
      await client.notify(PROGRAM_NOTIFICATION, { executable: cortexM4 });
      const m4 = await served(/222 calls/);
      t.diagnostic(`debugging ${cortexM4}: "${m4}"`);
      assert.match(m4, /222 calls/, 'debugging the Cortex-M4 ELF: its own profile, though older');
      await client.notify(PROGRAM_NOTIFICATION, { executable: fixtureElf('cortex-m4', 'firmware') });
      assert.equal(await served(''), '', 'an ELF no profile was made from: no lens at all');
      await client.notify(PROGRAM_NOTIFICATION, { executable: rv32 });
      assert.match(await served(/111 calls/), /111 calls/, 'debugging the RV32 ELF: its profile');
      await client.notify(PROGRAM_NOTIFICATION, {});
      assert.match(await served(/111 calls/), /111 calls/, 'the session ended: the newest profile again');
      assert.ok(
        client.log.some((l) => l.includes('no profile of') && l.includes('firmware.elf')),
        `the server says why it serves nothing (${client.log.join(' | ')})`,
      );
    } finally {
      assert.equal(await client.stop(), 0);
    }
  });
});
