/**
 * The contrast of text that automated checks leave out: axe-core exempts disabled controls from
 * WCAG's contrast rule, but an operator still has to read "Verifying…" or a disabled action's
 * label. Each matched element's text colour against its effective background (the first opaque
 * background up its ancestors), as WCAG 2.1 computes the ratio.
 */
import type { Page } from 'playwright-core';

// Read in the page (a string: the tests are compiled without the DOM's types).
const RATIOS = (selector: string) => `(() => {
  const rgb = (s) => (s.match(/[\\d.]+/g) || []).map(Number);
  const lum = ([r, g, b]) => {
    const c = [r, g, b].map((v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); });
    return 0.2126 * c[0] + 0.7152 * c[1] + 0.0722 * c[2];
  };
  const background = (el) => {
    for (let e = el; e; e = e.parentElement) {
      const c = rgb(getComputedStyle(e).backgroundColor);
      if (c.length >= 3 && (c.length < 4 || c[3] > 0.99)) return c;
    }
    return [255, 255, 255];
  };
  return [...document.querySelectorAll(${JSON.stringify(selector)})]
    .filter((el) => el.getBoundingClientRect().width > 0 && (el.textContent || '').trim() !== '')
    .map((el) => {
      const a = lum(rgb(getComputedStyle(el).color)), b = lum(background(el));
      return { text: el.textContent.trim(), ratio: (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05) };
    });
})()`;

/** The text contrast of every visible element `selector` matches. */
export const contrastOf = (page: Page, selector: string): Promise<{ text: string; ratio: number }[]> =>
  page.evaluate(RATIOS(selector)) as Promise<{ text: string; ratio: number }[]>;
