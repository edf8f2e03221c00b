import { join } from 'node:path';
import { CycleLensError, ErrorCode } from '../../errors';
import { findUp } from '../../util/findUp';

/**
 * Where the LLDB bridge (bridge.py, a Python 3 program beside this file) is: dist/lldb/bridge.py in
 * the package (scripts/build.mjs copies it there), adapter/debugger/lldb/bridge.py in a checkout.
 * The nearest wins: the bundles run the copy that `npm run build` put beside them, the compiled
 * tests (out/) the source.
 */
export function lldbBridgePath(from: string = __dirname): string {
  const found = findUp(from, [join('adapter', 'debugger', 'lldb', 'bridge.py'), join('lldb', 'bridge.py')]);
  if (found) return found;
  throw new CycleLensError(
    ErrorCode.DebuggerFailed,
    `The LLDB bridge (lldb/bridge.py) is missing beside ${from}: the installation is ` +
      `incomplete. Reinstall the extension, or run \`npm run build\` in a checkout.`,
  );
}
