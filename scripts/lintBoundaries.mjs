// Enforces the rooms of docs/design.md: adapter/, core/, lsp/, webview/, common/ and cli/ never import
// `vscode`; core/ never imports the adapter or the extension (it is the code both the CLI and the
// editor share); adapter/ and extension/ never import each other's runtime code (only `import type`
// from common/ crosses), per-architecture knowledge stays in adapter/arch/ (no family comparison or
// `switch` on a family elsewhere: the family's plugin answers), and only the debugger
// factory and the debuggers themselves know which debugger runs: every service uses the `Debugger`
// interface (adapter/debugger/debugger.ts).
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import { pathToFileURL } from 'node:url';

const importRe = new RegExp(
  [
    /^\s*(import|export)\s+(type\s+)?[^'"]*?from\s+['"]([^'"]+)['"]/.source,
    /require\(\s*['"]([^'"]+)['"]\s*\)/.source,
    /^\s*import\s+['"]([^'"]+)['"]/.source,
  ].join('|'),
  'gm',
);

function* tsFiles(dir) {
  let entries;
  try {
    entries = readdirSync(dir);
  } catch {
    return;
  }
  for (const name of entries) {
    const full = join(dir, name);
    if (name === 'node_modules' || name === 'build') continue;
    if (statSync(full).isDirectory()) yield* tsFiles(full);
    else if (name.endsWith('.ts')) yield full;
  }
}

const vscodeFree = ['adapter', 'core', 'lsp', 'webview', 'common', 'cli'];

/** A concrete debugger's folder (adapter/debugger/gdb…, adapter/debugger/lldb…) as an import path. */
const concreteDebugger = /(^|\/)debugger\/(gdb|lldb)[^/]*(\/|$)/;

/**
 * Whether a file may import a concrete debugger: the debuggers themselves, the factory that picks
 * one, and the loader, which starts the GDB a remembered plan names before the adapter is loaded.
 */
function mayImportConcreteDebugger(rel) {
  const p = rel.split(sep).join('/');
  return (
    /^adapter\/debugger\/(gdb|lldb)[^/]*\//.test(p) || p === 'adapter/debugger/factory.ts' || p === 'adapter/loader.ts'
  );
}

/** The core families; a comparison with one of these names outside adapter/arch/ is a per-family branch. */
const familyNames = ['cortex-m', 'riscv', 'arc'];
const familyName = `'(?:${familyNames.join('|')})'|"(?:${familyNames.join('|')})"`;
// `family === 'riscv'`, `elf.family !== "arc"`, `'cortex-m' === config.family` (any identifier
// ending in family/Family).
const familyComparison = new RegExp(
  `\\b\\w*[fF]amily\\s*[!=]==?\\s*(?:${familyName})|(?:${familyName})\\s*[!=]==?\\s*[\\w.]*[fF]amily\\b`,
);
const familySwitch = /\bswitch\s*\(\s*[\w.]*[fF]amily\s*\)/;
const familyCase = new RegExp(`^\\s*case\\s+(?:${familyName})\\s*:`);

/** Where a file may branch on the family: the per-family code and its registry. */
function mayBranchOnFamily(rel) {
  return rel.split(sep).join('/').startsWith('adapter/arch/');
}

/**
 * Per-family branches in one file's text (docs/design.md, "Ports inside the adapter"): a comparison
 * with a family name, or a `case '<family>':` inside a `switch` on a family. Returns problems as
 * `<file>:<line>: …` lines.
 */
export function familyBranches(rel, text) {
  if (mayBranchOnFamily(rel)) return [];
  const problems = [];
  const fix =
    "ask the family's plugin instead (archPlugin(family) from adapter/arch/registry.ts) and put " +
    'the per-family fact in adapter/arch/<family>/plugin.ts';
  const lines = text.split('\n');
  let switchDepth = -1;
  let depth = 0;
  lines.forEach((line, i) => {
    const code = line.replace(/\/\/.*$/, '');
    if (familySwitch.test(code)) switchDepth = depth;
    if (familyComparison.test(code)) problems.push(`${rel}:${i + 1}: compares a family name (${code.trim()}): ${fix}.`);
    else if (switchDepth >= 0 && familyCase.test(code))
      problems.push(`${rel}:${i + 1}: switches on the family (${code.trim()}): ${fix}.`);
    for (const ch of code) {
      if (ch === '{') depth++;
      else if (ch === '}') {
        depth--;
        if (depth <= switchDepth) switchDepth = -1;
      }
    }
  });
  return problems;
}

export function checkBoundaries(root) {
  const problems = [];
  for (const room of ['adapter', 'core', 'lsp', 'webview', 'common', 'cli', 'extension']) {
    for (const file of tsFiles(join(root, room))) {
      const rel = relative(root, file);
      const text = readFileSync(file, 'utf8');
      problems.push(...familyBranches(rel, text));
      for (const m of text.matchAll(importRe)) {
        const isType = Boolean(m[2]);
        const spec = m[3] ?? m[4] ?? m[5];
        if (!spec) continue;
        const noVscode = vscodeFree.some((r) => rel.startsWith(r + sep));
        if (noVscode && spec === 'vscode') {
          problems.push(
            `${rel}: imports 'vscode', but ${rel.split(sep)[0]}/ must run without VS Code (docs/design.md, "Rooms").`,
          );
        }
        if (
          (rel.startsWith('core' + sep) || rel.startsWith('lsp' + sep)) &&
          /(^|\/)(adapter|extension)\//.test(spec) &&
          !isType
        ) {
          problems.push(
            `${rel}: imports '${spec}': ${rel.split(sep)[0]}/ is shared by the CLI, the editor and the ` +
              `language server and depends on neither the adapter nor the extension; declare the contract ` +
              `in common/.`,
          );
        }
        if (rel.startsWith('adapter' + sep) && /(^|\/)extension\//.test(spec)) {
          problems.push(
            `${rel}: imports '${spec}': the adapter may not depend on the extension; share a contract ` +
              `in common/ instead.`,
          );
        }
        if (concreteDebugger.test(spec) && !mayImportConcreteDebugger(rel)) {
          problems.push(
            `${rel}: imports the concrete debugger '${spec}': depend on the Debugger interface ` +
              `(adapter/debugger/debugger.ts); only adapter/debugger/factory.ts picks an implementation.`,
          );
        }
        if (
          (rel.startsWith('extension' + sep) || rel.startsWith('webview' + sep)) &&
          /(^|\/)adapter\//.test(spec) &&
          !isType
        ) {
          problems.push(
            `${rel}: imports adapter runtime code '${spec}': talk to the adapter over DAP; import ` +
              `contracts from common/ with 'import type'.`,
          );
        }
      }
    }
  }
  return problems;
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) {
  // An explicit root checks another tree (the unit test feeds it snippets).
  const root = process.argv[2] ?? (await import('./lib/root.mjs')).repoRoot;
  const problems = checkBoundaries(root);
  for (const p of problems) console.error(p);
  console.log(problems.length === 0 ? '[lint] boundaries hold' : `[lint] ${problems.length} boundary violation(s)`);
  process.exit(problems.length === 0 ? 0 : 1);
}
