// Enforces the rooms of docs/design.md: adapter/, core/, lsp/, webview/, common/ and cli/ never import
// `vscode`; core/ never imports the adapter or the extension (it is the code both the CLI and the
// editor share); adapter/ and extension/ never import each other's runtime code (only `import type`
// from common/ crosses), per-architecture knowledge stays in adapter/arch/, and only the debugger
// factory and the debuggers themselves know which debugger runs: every service uses the `Debugger`
// interface (adapter/debugger/debugger.ts).
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import { pathToFileURL } from 'node:url';

const importRe = /^\s*(import|export)\s+(type\s+)?[^'"]*?from\s+['"]([^'"]+)['"]|require\(\s*['"]([^'"]+)['"]\s*\)|^\s*import\s+['"]([^'"]+)['"]/gm;

function* tsFiles(dir) {
  let entries;
  try { entries = readdirSync(dir); } catch { return; }
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

/** Whether a file may import a concrete debugger: the debuggers themselves and the factory that picks one. */
function mayImportConcreteDebugger(rel) {
  const p = rel.split(sep).join('/');
  return /^adapter\/debugger\/(gdb|lldb)[^/]*\//.test(p) || p === 'adapter/debugger/factory.ts';
}

export function checkBoundaries(root) {
  const problems = [];
  for (const room of ['adapter', 'core', 'lsp', 'webview', 'common', 'cli', 'extension']) {
    for (const file of tsFiles(join(root, room))) {
      const rel = relative(root, file);
      const text = readFileSync(file, 'utf8');
      for (const m of text.matchAll(importRe)) {
        const isType = Boolean(m[2]);
        const spec = m[3] ?? m[4] ?? m[5];
        if (!spec) continue;
        const noVscode = vscodeFree.some((r) => rel.startsWith(r + sep));
        if (noVscode && spec === 'vscode') {
          problems.push(`${rel}: imports 'vscode', but ${rel.split(sep)[0]}/ must run without VS Code (docs/design.md, "Rooms").`);
        }
        if ((rel.startsWith('core' + sep) || rel.startsWith('lsp' + sep)) && /(^|\/)(adapter|extension)\//.test(spec) && !isType) {
          problems.push(`${rel}: imports '${spec}': ${rel.split(sep)[0]}/ is shared by the CLI, the editor and the language server and depends on neither the adapter nor the extension; declare the contract in common/.`);
        }
        if (rel.startsWith('adapter' + sep) && /(^|\/)extension\//.test(spec)) {
          problems.push(`${rel}: imports '${spec}': the adapter may not depend on the extension; share a contract in common/ instead.`);
        }
        if (concreteDebugger.test(spec) && !mayImportConcreteDebugger(rel)) {
          problems.push(`${rel}: imports the concrete debugger '${spec}': depend on the Debugger interface (adapter/debugger/debugger.ts); only adapter/debugger/factory.ts picks an implementation.`);
        }
        if ((rel.startsWith('extension' + sep) || rel.startsWith('webview' + sep)) && /(^|\/)adapter\//.test(spec) && !isType) {
          problems.push(`${rel}: imports adapter runtime code '${spec}': talk to the adapter over DAP; import contracts from common/ with 'import type'.`);
        }
      }
    }
  }
  return problems;
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) {
  const { repoRoot } = await import('./lib/root.mjs');
  const problems = checkBoundaries(repoRoot);
  for (const p of problems) console.error(p);
  console.log(problems.length === 0 ? '[lint] boundaries hold' : `[lint] ${problems.length} boundary violation(s)`);
  process.exit(problems.length === 0 ? 0 : 1);
}
