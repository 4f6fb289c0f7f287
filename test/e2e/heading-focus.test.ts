/**
 * The focus on a heading does not look like a text field, end to end in headless Chromium against a
 * real daemon: a page reached with the keyboard moves the focus to its heading, which shows a
 * visible ring (keyboard.ts: not `none`, at least 2 px) drawn as a heading's — dashed, held off the
 * words, the words underlined — and not as the solid box a focused text input shows.
 */
import { rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { STATE_HOME, cliFromSources, loopxAsync, tempRoot } from '../support/cli.js';
import { axeViolations } from './support/axe.js';
import { hasChromium, type BrowserSession } from './support/browser.js';
import { focusedElement, tabTo, type Focused } from './support/keyboard.js';
import { signedInDaemon, type SignedInDaemon } from './support/ui.js';

cliFromSources();

const AUTHORITY_DIR = join(STATE_HOME, 'loopx', 'run-authority');

let root: string;
let served: SignedInDaemon;
let session: BrowserSession;

/** How a focus ring is drawn, without whose it is. */
const ring = (f: Focused) => ({
  outlineStyle: f.outlineStyle,
  outlineWidth: f.outlineWidth,
  outlineOffset: f.outlineOffset,
  textDecorationLine: f.textDecorationLine,
  boxShadow: f.boxShadow,
});

if (process.env.CI === 'true' && !hasChromium())
  throw new Error("CI=true but no chromium binary: install Debian's chromium (.ci/run does)");
describe.skipIf(!hasChromium())('the focus ring of a heading', () => {
  beforeAll(async () => {
    root = tempRoot('loopx-e2e-heading-focus-');
    expect((await loopxAsync(['init', '--root', root])).status).toBe(0);
    expect(
      (await loopxAsync(['goal', 'create', 'launch', '--title', 'Ship the launch post', '--root', root])).status,
    ).toBe(0);
    served = await signedInDaemon(root, AUTHORITY_DIR);
    session = served.session;
  }, 120_000);

  afterAll(async () => {
    await served?.close();
    if (root) rmSync(dirname(root), { recursive: true, force: true });
  });

  it('a page reached with the keyboard focuses its heading with a visible ring drawn unlike a text input’s', async () => {
    const { page } = session;
    await tabTo(page, 'Goals');
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { level: 1, name: 'Goals' }).waitFor();
    await expect.poll(async () => (await focusedElement(page, ' (after following Goals)')).tag).toBe('h1');
    // The list arrives after the heading: Tab only once the Goal's link is on the page.
    await page.getByRole('link', { name: 'launch' }).first().waitFor();
    await tabTo(page, 'launch');
    await page.keyboard.press('Enter');
    await page.getByTestId('goal-lifecycle').waitFor();

    // focusedElement checks the ring is visible: not `none`, at least 2 px wide.
    const heading = await focusedElement(page, ' (after following the Goal’s link)');
    expect(heading.tag, 'the Goal page moved the focus to its heading').toBe('h1');
    expect(ring(heading)).toEqual({
      outlineStyle: 'dashed',
      outlineWidth: 2,
      outlineOffset: expect.any(Number),
      textDecorationLine: 'underline',
      boxShadow: 'none',
    });
    expect(heading.outlineOffset, 'the ring is held off the words').toBeGreaterThanOrEqual(4);
    // The ring hugs the words: a heading as wide as the content would read as a full-width field.
    const widths = (await page.evaluate(`(() => {
      const h = document.activeElement;
      const r = document.createRange();
      r.selectNodeContents(h);
      return { heading: h.getBoundingClientRect().width, words: r.getBoundingClientRect().width, parent: h.parentElement.getBoundingClientRect().width };
    })()`)) as { heading: number; words: number; parent: number };
    expect(widths.heading).toBeLessThanOrEqual(widths.words + 1);
    expect(widths.heading).toBeLessThan(widths.parent);
    expect(await axeViolations(page), 'the Goal page with its heading focused').toEqual([]);

    await tabTo(page, 'New Todo');
    const input = await focusedElement(page);
    expect(input.tag).toBe('input');
    expect(input.outlineStyle, 'a text input keeps the solid ring of a control').toBe('solid');
    expect(input.textDecorationLine).toBe('none');
    expect(ring(heading), 'the heading’s ring is not the text input’s').not.toEqual(ring(input));
  });
});
