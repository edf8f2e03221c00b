import assert from 'node:assert/strict';
import { scaleLinear } from 'd3-scale';
import { describe, it } from 'node:test';
import { contrastRatio, labelColourOn, over, parseColour } from '../../webview/layout/contrast';

// The flame graph's label colours against its fills, in the colours VS Code's default themes give
// the panel (the colour registry's chart colours, Light/Dark Modern's editor colours). WCAG asks
// 4.5:1 of text this size. The theme's foreground alone reached 2.4:1 on the light theme's red.

const themes = {
  light: {
    low: '#BF8803',
    mid: '#D18616',
    high: '#E51400',
    match: '#1A85FF',
    dim: '#61616180',
    text: '#3B3B3B',
    background: '#FFFFFF',
  },
  dark: {
    low: '#CCA700',
    mid: '#D18616',
    high: '#F14C4C',
    match: '#3794FF',
    dim: '#CCCCCC80',
    text: '#CCCCCC',
    background: '#1F1F1F',
  },
};

describe('flame graph labels by contrast', () => {
  it('reads colours as computed styles and d3 write them', () => {
    assert.deepEqual(parseColour('#e51400'), { r: 229, g: 20, b: 0, a: 1 });
    assert.deepEqual(parseColour('#fff8'), { r: 255, g: 255, b: 255, a: 0x88 / 255 });
    assert.deepEqual(parseColour('rgb(209, 134, 22)'), { r: 209, g: 134, b: 22, a: 1 });
    assert.deepEqual(parseColour('rgba(0, 0, 0, 0.5)'), { r: 0, g: 0, b: 0, a: 0.5 });
    assert.equal(parseColour('var(--x)'), undefined);
    // WCAG's own figures: black on white 21:1, and #767676 on white just over 4.5:1.
    assert.equal(contrastRatio(parseColour('#000')!, parseColour('#fff')!), 21);
    assert.ok(Math.abs(contrastRatio(parseColour('#767676')!, parseColour('#fff')!) - 4.54) < 0.01);
  });

  for (const [name, t] of Object.entries(themes)) {
    it(`${name} theme: every heat fill, the match and the dimmed fill get a label of at least 4.5:1`, () => {
      // The fills the flame graph draws: its heat scale in 32 steps (webview/views/flameView.ts).
      const scale = scaleLinear<string>().domain([0, 0.5, 1]).range([t.low, t.mid, t.high]);
      const fills = [...Array.from({ length: 33 }, (_, i) => scale(i / 32)), t.match, t.dim];
      const page = parseColour(t.background)!;
      for (const fill of fills) {
        const label = labelColourOn(fill, t.background, t.text);
        const seen = over(parseColour(fill)!, page);
        const ratio = contrastRatio(parseColour(label)!, seen);
        assert.ok(ratio >= 4.5, `${label} on ${fill}: ${ratio.toFixed(2)}:1`);
      }
      // Where the theme's text colour is readable it is kept.
      assert.equal(labelColourOn(t.background, t.background, t.text), t.text);
    });
  }

  it("the light theme's foreground on its red was the defect: below 3:1", () => {
    const t = themes.light;
    assert.ok(contrastRatio(parseColour(t.text)!, parseColour(t.high)!) < 3);
    assert.equal(labelColourOn(t.high, t.background, t.text), '#ffffff');
  });
});
