/**
 * An automated accessibility check of the page as it is now: axe-core's WCAG 2.1 A and AA rules,
 * run inside the page (its own script, from node_modules), answering each violation by rule and
 * the elements it found, so a failure says what to fix.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { Page } from 'playwright-core';

const AXE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

export interface AxeViolation {
  readonly id: string;
  readonly impact: string | null;
  readonly help: string;
  readonly targets: string[];
}

export async function axeViolations(page: Page): Promise<AxeViolation[]> {
  // Evaluated through the browser's debugging protocol: the daemon's Content-Security-Policy (no
  // inline script) stays as it is for the page under test.
  if (!(await page.evaluate('typeof window.axe !== "undefined"'))) await page.evaluate(AXE);
  // A string, evaluated in the page: this file is compiled without the DOM's types.
  const r = (await page.evaluate(`(async () => {
    const r = await window.axe.run(document, { runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa'] } });
    return {
      passes: r.passes.length,
      violations: r.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help, targets: v.nodes.map((n) => n.target.join(' ')) })),
    };
  })()`)) as { passes: number; violations: AxeViolation[] };
  // A check that ran no rule proves nothing.
  if (r.passes === 0) throw new Error('axe-core ran no rule on this page');
  return r.violations;
}
