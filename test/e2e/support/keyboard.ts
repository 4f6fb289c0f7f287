/**
 * Keyboard-only checks for the browser tests: the focused element (named, on screen, with a
 * visible focus outline — never the page itself — and how that ring is drawn, so a test can tell a
 * heading's from a control's), and Tab or Shift+Tab pressed until a named element has focus,
 * every stop on the way checked the same way.
 */
import type { Page } from 'playwright-core';
import { expect } from 'vitest';

export interface Focused {
  readonly tag: string;
  readonly name: string;
  readonly outlineStyle: string;
  readonly outlineWidth: number;
  /** The rest of how its focus is drawn, to tell one kind of focus ring from another. */
  readonly outlineOffset: number;
  readonly textDecorationLine: string;
  readonly boxShadow: string;
  readonly visible: boolean;
}

// The focused element, read in the page (a string: this file is compiled without the DOM's types).
const FOCUSED = `(() => {
  const el = document.activeElement;
  if (!el || el === document.body || el === document.documentElement) return null;
  const cs = getComputedStyle(el);
  const box = el.getBoundingClientRect();
  const label = el.getAttribute('aria-label') || (el.labels && el.labels.length > 0 ? el.labels[0].textContent : el.textContent) || '';
  return { tag: el.tagName.toLowerCase(), name: label.replace(/\\s+/g, ' ').trim(), outlineStyle: cs.outlineStyle, outlineWidth: parseFloat(cs.outlineWidth),
    outlineOffset: parseFloat(cs.outlineOffset), textDecorationLine: cs.textDecorationLine, boxShadow: cs.boxShadow, visible: box.width > 0 && box.height > 0 };
})()`;

/** The focused element: one with a name, on screen, with a visible focus outline — never the page itself. `after` says how focus got there. */
export async function focusedElement(page: Page, after = ''): Promise<Focused> {
  const f = (await page.evaluate(FOCUSED)) as Focused | null;
  expect(f, `focus is on an element, not lost to the page${after}`).not.toBeNull();
  expect(f!.name, `the focused <${f!.tag}> has a name`).not.toBe('');
  expect(f!.visible, `“${f!.name}” is on screen`).toBe(true);
  expect(f!.outlineStyle, `“${f!.name}” shows its focus`).not.toBe('none');
  expect(f!.outlineWidth, `“${f!.name}” shows its focus`).toBeGreaterThanOrEqual(2);
  return f!;
}

/** Press `key` (Tab or Shift+Tab) until the focused element is named `name`, each stop checked by `focusedElement`. */
export async function tabTo(page: Page, name: string | RegExp, key: 'Tab' | 'Shift+Tab' = 'Tab'): Promise<void> {
  const passed: string[] = [];
  for (let i = 0; i < 40; i++) {
    await page.keyboard.press(key);
    // Past the last stop focus leaves the page: name the stops, for one of them may be the target misnamed.
    const f = await focusedElement(
      page,
      passed.length > 0 ? ` (looking for “${String(name)}”, ${key} went through: ${passed.join(' | ')})` : '',
    );
    if (typeof name === 'string' ? f.name === name : name.test(f.name)) return;
    passed.push(f.name);
  }
  throw new Error(`“${name}” was not reached with ${key}; focus went through: ${passed.join(' | ')}`);
}

/**
 * The focused element once a change has handed focus on: a control an action disables or replaces
 * drops focus to the page for a moment before the page moves it where the change shows. Polled
 * (never a sleep) until focus is on an element again, then checked as `focusedElement` does.
 */
export async function focusAfterChange(page: Page, after = ''): Promise<Focused> {
  await expect
    .poll(() => page.evaluate('document.activeElement !== document.body && document.activeElement !== null'), {
      message: `focus comes back to an element${after}`,
    })
    .toBe(true);
  return focusedElement(page, after);
}
