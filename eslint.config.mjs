// ESLint: the rooms of docs/design.md as import rules, and a small set of rules that catch real bugs
// (a promise nobody awaits, a `return` of a promise that skips its try/catch, a switch that misses a
// case of a union). Style is the formatter's business (.prettierrc.json), not ESLint's.
// scripts/lintBoundaries.mjs checks the same rooms by reading the text (it also sees `require()` and
// `import('…')` types); `npm run lint` runs both.
import { defineConfig } from 'eslint/config';
import tseslint from 'typescript-eslint';

const messages = {
  vscode: (room) =>
    `${room}/ must run without VS Code (docs/design.md, "Rooms"): move the code that needs the editor to extension/.`,
  adapterFromShared: (room) =>
    `${room}/ is shared by the CLI, the editor and the language server and depends on neither ` +
    `the adapter nor the extension; declare the contract in common/ (an 'import type' is ` +
    `allowed).`,
  extensionFromAdapter: 'The adapter may not depend on the extension; share a contract in common/ instead.',
  adapterRuntime: (room) =>
    `${room}/ talks to the adapter over DAP: import its contracts with 'import type', never its runtime code.`,
  concreteDebugger:
    'Only adapter/debugger/factory.ts picks a concrete debugger: depend on the Debugger ' +
    'interface (adapter/debugger/debugger.ts) and start one with startDebugger().',
  backendInTests:
    'Tests and benches start a debugger through adapter/debugger/factory.ts (startDebugger({ ' +
    "kind: 'gdb', … })), so they drive what the product drives; unit tests of a debugger's own " +
    'parsers may import those.',
};

/** A path into a concrete debugger's folder (adapter/debugger/gdb…, adapter/debugger/lldb…). */
const concreteDebuggerPath = '(^|/)debugger/(gdb|lldb)[^/]*(/|$)';
/** Adapter code other than a concrete debugger (that one is never allowed, not even as a type). */
const adapterPath = '(^|/)adapter/(?!debugger/(gdb|lldb))';
const extensionPath = '(^|/)extension(/|$)';

const noVscode = (room) => ({ name: 'vscode', message: messages.vscode(room) });
const noConcreteDebugger = { regex: concreteDebuggerPath, message: messages.concreteDebugger };

/**
 * One `no-restricted-imports` setting; a later block replaces an earlier one for the same file, so
 * each names everything that applies.
 */
const restrict = ({ paths = [], patterns = [] }) => ({
  '@typescript-eslint/no-restricted-imports': ['error', { paths, patterns }],
});

// The loader starts the GDB of a remembered launch before the adapter program loads (adapter/startPlan.ts).
const debuggerFolders = [
  'adapter/debugger/gdb*/**',
  'adapter/debugger/lldb*/**',
  'adapter/debugger/factory.ts',
  'adapter/loader.ts',
];

/** ESLint's own rules for mistakes that compile: these also run on the build and test scripts (.mjs). */
const coreRules = {
  'no-self-assign': 'error',
  'no-self-compare': 'error',
  'no-unsafe-finally': 'error',
  'no-unreachable': 'error',
  'no-dupe-keys': 'error',
  'no-duplicate-case': 'error',
  'no-dupe-else-if': 'error',
  'no-cond-assign': ['error', 'except-parens'],
  'no-constant-binary-expression': 'error',
  'no-unsafe-optional-chaining': 'error',
  'no-async-promise-executor': 'error',
  'no-unmodified-loop-condition': 'error',
  'no-unreachable-loop': 'error',
  'no-sparse-arrays': 'error',
  'no-loss-of-precision': 'error',
  'use-isnan': 'error',
  'valid-typeof': 'error',
  'no-compare-neg-zero': 'error',
  'no-useless-backreference': 'error',
  'no-empty-character-class': 'error',
  'no-invalid-regexp': 'error',
  'no-unused-private-class-members': 'error',
};

// Prettier wraps code at 120 columns, but not comments or strings: this rule holds those to it too.
const lineLength = { 'max-len': ['error', { code: 120, ignoreUrls: true }] };

export default defineConfig(
  {
    ignores: ['node_modules/', 'out/', 'dist/', 'test-output/', 'test/fixtures/', '.cache/', '**/*.js', '**/*.cjs'],
  },
  {
    files: ['**/*.ts'],
    languageOptions: {
      parser: tseslint.parser,
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    plugins: { '@typescript-eslint': tseslint.plugin },
    linterOptions: { reportUnusedDisableDirectives: 'error' },
    rules: {
      // A promise that is neither awaited nor handled loses its rejection (an unhandled rejection
      // ends the adapter process); `void` marks the ones left to run on purpose.
      '@typescript-eslint/no-floating-promises': [
        'error',
        // node:test's describe() and it() return promises the runner itself awaits.
        {
          allowForKnownSafeCalls: [
            {
              from: 'package',
              package: 'node:test',
              name: ['describe', 'it', 'test', 'suite', 'before', 'after', 'beforeEach', 'afterEach'],
            },
          ],
        },
      ],
      // An async function where a void callback is expected: its rejection goes nowhere.
      '@typescript-eslint/no-misused-promises': [
        'error',
        { checksVoidReturn: { arguments: false, attributes: false } },
      ],
      '@typescript-eslint/await-thenable': 'error',
      // `return promise` inside try skips the catch, and the finally runs before the promise settles.
      '@typescript-eslint/return-await': ['error', 'error-handling-correctness-only'],
      '@typescript-eslint/only-throw-error': 'error',
      '@typescript-eslint/switch-exhaustiveness-check': ['error', { considerDefaultExhaustiveForUnions: true }],
      ...coreRules,
      ...lineLength,
    },
  },
  {
    files: ['**/*.mjs'],
    linterOptions: { reportUnusedDisableDirectives: 'error' },
    rules: { ...coreRules, ...lineLength },
  },
  // ---- the rooms (docs/design.md, "Rooms") ------------------------------------------------------
  {
    files: ['adapter/**/*.ts'],
    ignores: debuggerFolders,
    rules: restrict({
      paths: [noVscode('adapter')],
      patterns: [{ regex: extensionPath, message: messages.extensionFromAdapter }, noConcreteDebugger],
    }),
  },
  {
    files: debuggerFolders,
    rules: restrict({
      paths: [noVscode('adapter')],
      patterns: [{ regex: extensionPath, message: messages.extensionFromAdapter }],
    }),
  },
  ...['core', 'lsp'].map((room) => ({
    files: [`${room}/**/*.ts`],
    rules: restrict({
      paths: [noVscode(room)],
      patterns: [
        { regex: adapterPath, allowTypeImports: true, message: messages.adapterFromShared(room) },
        { regex: extensionPath, allowTypeImports: true, message: messages.adapterFromShared(room) },
        noConcreteDebugger,
      ],
    }),
  })),
  {
    files: ['webview/**/*.ts'],
    rules: restrict({
      paths: [noVscode('webview')],
      patterns: [
        { regex: adapterPath, allowTypeImports: true, message: messages.adapterRuntime('webview') },
        noConcreteDebugger,
      ],
    }),
  },
  {
    files: ['extension/**/*.ts'],
    rules: restrict({
      patterns: [
        { regex: adapterPath, allowTypeImports: true, message: messages.adapterRuntime('extension') },
        noConcreteDebugger,
      ],
    }),
  },
  ...['common', 'cli'].map((room) => ({
    files: [`${room}/**/*.ts`],
    rules: restrict({ paths: [noVscode(room)], patterns: [noConcreteDebugger] }),
  })),
  {
    files: ['test/**/*.ts', 'bench/**/*.ts', 'scripts/**/*.ts'],
    rules: restrict({
      patterns: [
        { regex: '(^|/)debugger/(gdb[^/]*/gdbDebugger|lldb[^/]*/lldbDebugger)$', message: messages.backendInTests },
      ],
    }),
  },
);
