/**
 * What the console's browser tests share: Debian's Chromium driven by playwright-core (a fresh
 * profile per browser), and reading a table row as a person reads it.
 */
import { chromium, type BrowserContext, type Page } from 'playwright-core';

/** Debian's Chromium (`apt-get install chromium`; `.ci/run` installs it when missing). */
export const CHROMIUM = '/usr/bin/chromium';
const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];

/** A fresh Chromium profile in `profileDir`, its first page, at `width` × `height` px. */
export async function openBrowser(profileDir: string, viewport = { width: 1440, height: 1000 }): Promise<{ browser: BrowserContext; page: Page }> {
  const browser = await chromium.launchPersistentContext(profileDir, { executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS, viewport });
  return { browser, page: browser.pages()[0] ?? (await browser.newPage()) };
}

/** The text of the table row whose header cell is `name`, in the table captioned `caption`, its spaces collapsed. */
export async function rowText(page: Page, caption: string | RegExp, name: string): Promise<string> {
  const table = page.getByRole('table', { name: caption });
  return (await table.getByRole('row').filter({ has: page.getByRole('rowheader', { name, exact: true }) }).innerText()).replace(/\s+/g, ' ').trim();
}

/** The CSS class of the `.state` cell in that row (`state ok`, `state bad`, ...). */
export async function stateClass(page: Page, caption: string | RegExp, name: string): Promise<string | null> {
  const table = page.getByRole('table', { name: caption });
  return table.getByRole('row').filter({ has: page.getByRole('rowheader', { name, exact: true }) }).locator('.state').first().getAttribute('class');
}
