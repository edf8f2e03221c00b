import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { FileScopeVariable } from '../../adapter/debugger/types';
import { fileScopeSelection } from '../../adapter/session/variables';

const vars: FileScopeVariable[] = [
  { name: 'count', file: 'a.c', fullname: '/fw/a.c', isStatic: true },
  { name: 'count', file: 'b.c', fullname: '/fw/b.c', isStatic: true },
  { name: 'g_ticks', file: 'ticker.c', fullname: '/fw/ticker.c', isStatic: false },
  { name: 'g_mode', file: 'main.c', fullname: '/fw/main.c', isStatic: false },
  { name: 'g_mode', file: 'main.c', fullname: '/fw/main.c', isStatic: false },
  { name: 'table', file: 'src/c.c', isStatic: true },
];

describe('file-scope variable scopes', () => {
  it('Globals lists every global once, by name, and no statics', () => {
    assert.deepEqual(
      fileScopeSelection(vars, 'globals').map((v) => v.name),
      ['g_mode', 'g_ticks'],
    );
  });

  it('Statics lists the statics of the frame file only', () => {
    assert.deepEqual(
      fileScopeSelection(vars, { staticsOf: '/fw/b.c' }).map((v) => `${v.file}:${v.name}`),
      ['b.c:count'],
    );
    // Without an absolute path from GDB, the recorded name matches the end of the frame's path.
    assert.deepEqual(
      fileScopeSelection(vars, { staticsOf: '/work/fw/src/c.c' }).map((v) => v.name),
      ['table'],
    );
    assert.deepEqual(fileScopeSelection(vars, { staticsOf: undefined }), []);
  });
});
