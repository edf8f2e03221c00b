// `npm run setup`: install everything the build and the tests need on a fresh Debian machine.
import { ensureDebianPackages, debianPackages, fixLldbPythonModule } from './lib/system.mjs';
import { ensureNpmDependencies } from './lib/npmDeps.mjs';
import { repoRoot } from './lib/root.mjs';

if (!ensureDebianPackages(debianPackages, 'setup')) process.exit(1);
fixLldbPythonModule();
ensureNpmDependencies(repoRoot);
