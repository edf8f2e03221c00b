import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { emptyProfile, type Profile, type ProfileFunction } from '../../core/profile/model';
import {
  functionHover,
  hotMessage,
  lensTitle,
  lineHintLabel,
  lineHover,
  shareBoundText,
  shareText,
} from '../../lsp/presentation';

/** A profile of 10,000 in `unit`, with one function of each kind; every figure can be checked by hand. */
function profileIn(unit: Profile['unit'], provenance: Profile['provenance']): Profile {
  const p = emptyProfile({
    generator: 'test',
    program: { executable: '/fw.elf' },
    unit,
    provenance,
    total: { value: 10_000 },
  });
  const fns: ProfileFunction[] = [
    {
      id: 0,
      name: 'work',
      status: 'measured',
      inclusive: { value: 1240, bound: { low: 1220, high: 1260, kind: 'quantisation' } },
      self: { value: 310, bound: { low: 300, high: 320, kind: 'quantisation' } },
      calls: 1204,
      mean: 1.03,
      min: 1,
      max: 2,
      run: 1,
      location: { path: '/src/work.c', line: 12 },
    },
    {
      id: 1,
      name: 'leaf',
      status: 'measured',
      inclusive: { value: 40 },
      calls: 1,
      selfNote: 'not formed: a callee is unmeasured',
      location: { path: '/src/work.c', line: 30 },
    },
    { id: 2, name: 'cold', status: 'pruned', boundShare: 0.008 },
    { id: 3, name: 'isr', status: 'unmeasurable', reason: 'too short to patch' },
    { id: 4, name: 'later', status: 'pending' },
  ];
  p.functions = fns;
  p.runs = [
    { role: 'baseline', method: 'window total', measured: [], from: 'main', to: 'program_end' },
    { role: 'batch', method: 'software injection, SysTick', measured: ['work'] },
  ];
  return p;
}

const ticks = profileIn(
  { kind: 'ticks', perTick: { count: 40, kind: 'instructions' } },
  { kind: 'injected', payload: 'accumulated', counter: 'SysTick' },
);
const insns = profileIn({ kind: 'instructions' }, { kind: 'injected', payload: 'accumulated', counter: 'minstret' });
const fn = (p: Profile, name: string): ProfileFunction => p.functions.find((f) => f.name === name)!;

describe('language server text', () => {
  it('formats shares with one decimal, two below 1 %, and bounds with enough digits to be read', () => {
    assert.equal(shareText(0.124), '12.4 %');
    assert.equal(shareText(0.0042), '0.42 %');
    assert.equal(shareText(0), '0.0 %');
    assert.equal(shareBoundText(0.002), '0.20 %');
    assert.equal(shareBoundText(0.00004), '0.004 %');
    assert.equal(shareBoundText(0.0000001), '<0.001 %');
    assert.equal(shareBoundText(0.015), '1.5 %');
  });

  it('puts share, self share, calls and the bound in the CodeLens title', () => {
    // 1240 / 10000 = 12.4 %; self 310 → 3.1 %; bound ±20 ticks = ±0.2 % of the window.
    assert.equal(lensTitle(ticks, fn(ticks, 'work')), '12.4 % incl · 3.1 % self · 1,204 calls · ±0.20 %');
    // No self value (a callee unmeasured), no bound, one call.
    assert.equal(lensTitle(insns, fn(insns, 'leaf')), '0.40 % incl · 1 call');
    assert.equal(lensTitle(insns, fn(insns, 'cold')), "pruned: ≤ 0.80 % (callers' bound)");
    assert.equal(lensTitle(insns, fn(insns, 'isr')), 'not measured: see hover');
    assert.equal(lensTitle(insns, fn(insns, 'later')), undefined, 'a pending function gets no lens');
    assert.equal(lensTitle(insns, fn(insns, 'leaf'), { codicons: true }), '$(flame) 0.40 % incl · 1 call');
  });

  it('shows counts in the unit when the profile has no window total', () => {
    const p = { ...insns, total: undefined };
    assert.equal(lensTitle(p, fn(p, 'work')), '1,240 insn incl · 310 insn self · 1,204 calls · ±20 insn');
  });

  it('keeps SysTick ticks as ticks in the hover, with what a tick stands for', () => {
    const text = functionHover(ticks, fn(ticks, 'work'));
    assert.match(
      text,
      new RegExp(
        /inclusive: 1,240 SysTick ticks \(×40 instructions\) ±20 ticks/.source +
          / \(12\.4 % of the window\) ≈ 49,600 instructions/.source,
      ),
    );
    assert.match(text, /self: 310 SysTick ticks/);
    assert.match(text, /calls: 1,204/);
    assert.match(text, /Error bound: ±20 ticks \(counter quantisation\)/);
    assert.match(text, /Provenance: injected software accumulation \(SysTick\)/);
    assert.match(text, /Window: 10,000 SysTick ticks .* \(main to program\\_end\)/);
    assert.match(text, /Measured in run 2 of 2: software injection, SysTick/);
    assert.doesNotMatch(text, /cycles/, 'ticks are never called cycles');
    const leaf = functionHover(insns, fn(insns, 'leaf'));
    assert.match(leaf, /self: not formed: a callee is unmeasured/);
    assert.match(leaf, /Error bound: none known/);
    assert.match(functionHover(insns, fn(insns, 'isr')), /note: too short to patch/);
  });

  it('labels line costs and diagnoses hot functions against the threshold', () => {
    const line = { path: '/src/work.c', line: 14, function: 0, self: { value: 210 } };
    assert.equal(lineHintLabel(insns, line), '210 insn · 2.1 %');
    assert.match(lineHover(insns, line), /\*\*line 14\*\* in work: 210 instructions \(2\.1 % of the window\)/);
    assert.equal(
      hotMessage(insns, fn(insns, 'work'), 5),
      'work takes 12.4 % of the window inclusive (3.1 % self): at or above the hot threshold of 5 %.',
    );
    assert.equal(hotMessage(insns, fn(insns, 'work'), 12.5), undefined);
    assert.equal(
      hotMessage(insns, fn(insns, 'leaf'), 0.4),
      'leaf takes 0.40 % of the window inclusive: at or above the hot threshold of 0.4 %.',
    );
    assert.equal(hotMessage(insns, fn(insns, 'cold'), 0), undefined, 'a pruned function is never hot');
  });
});
