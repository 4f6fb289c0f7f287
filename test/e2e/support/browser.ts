/**
 * A headless Chromium for end-to-end tests of the Capability Center UI: Debian's `chromium`
 * (or `$CHROMIUM_PATH`) driven by playwright-core, which downloads no browser of its own. One
 * browser, one context, one page; the context accepts downloads and records nothing else.
 * `close()` is idempotent and also runs if launching the page failed half-way.
 */
import { existsSync } from 'node:fs';
import { chromium, type Browser, type BrowserContext, type ConsoleMessage, type Page } from 'playwright-core';

export const CHROMIUM_PATH = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/**
 * Whether a Chromium is there to launch (tests may `describe.skipIf(!hasChromium())`, for a
 * developer's machine without one). Under CI=true a missing browser fails instead: .ci/run
 * installs it, and the browser tests must run there, never skip.
 */
export const hasChromium = (): boolean => {
  if (existsSync(CHROMIUM_PATH)) return true;
  if (process.env.CI === 'true')
    throw new Error(`CI=true but no Chromium at ${CHROMIUM_PATH} (.ci/run installs Debian's chromium)`);
  return false;
};

export interface BrowserOptions {
  /** Viewport; default 1280×900. */
  readonly viewport?: { readonly width: number; readonly height: number };
  /** Default timeout of page actions and expectations (ms); default 10 s. */
  readonly actionTimeout?: number;
  /** Default navigation timeout (ms); default 15 s. */
  readonly navigationTimeout?: number;
}

export interface BrowserSession {
  readonly browser: Browser;
  readonly context: BrowserContext;
  readonly page: Page;
  /** Console errors and uncaught page errors seen so far (a test can assert there were none). */
  readonly errors: string[];
  close(): Promise<void>;
}

export async function launchBrowser(options: BrowserOptions = {}): Promise<BrowserSession> {
  const browser = await chromium.launch({
    executablePath: CHROMIUM_PATH,
    headless: true,
    timeout: 30_000,
    args: ['--no-sandbox', '--disable-dev-shm-usage', '--disable-gpu', '--no-first-run', '--no-default-browser-check'],
  });
  let closed = false;
  const close = async () => {
    if (closed) return;
    closed = true;
    await browser.close().catch(() => undefined);
  };
  try {
    const context = await browser.newContext({
      viewport: options.viewport ?? { width: 1280, height: 900 },
      acceptDownloads: true,
      locale: 'en-US',
      timezoneId: 'UTC',
      reducedMotion: 'reduce',
      colorScheme: 'light',
    });
    context.setDefaultTimeout(options.actionTimeout ?? 10_000);
    context.setDefaultNavigationTimeout(options.navigationTimeout ?? 15_000);
    const page = await context.newPage();
    const errors: string[] = [];
    page.on('console', (m: ConsoleMessage) => {
      if (m.type() === 'error') errors.push(m.text());
    });
    page.on('pageerror', (e: Error) => errors.push(e.message));
    return { browser, context, page, errors, close };
  } catch (e) {
    await close();
    throw e;
  }
}
