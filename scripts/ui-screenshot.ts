// Drives headless Chromium to the Temporal Web UI of a running local stack: finds a journey by its search
// attribute, opens it, and shows its input decoded through the codec server. Saves a screenshot.
//
//   npx tsx scripts/ui-screenshot.ts [--ui http://127.0.0.1:8233] [--query "JourneyStage='completed'"]
//                                    [--text '"patient"'] [--out docs/temporal-ui-journey.png]
//   The journey's timeline, its timers and activities named (a journey waiting for its consultation):
//   npx tsx scripts/ui-screenshot.ts --query "JourneyStage='awaiting_consultation'" \
//     --text "reminder to the patient" --out docs/temporal-ui-timeline.png
//
// Needs Debian's chromium (apt-get install chromium) or CHROMIUM_PATH.
import { existsSync } from 'node:fs';
import path from 'node:path';
import { chromium } from 'playwright-core';

function arg(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 && process.argv[i + 1] ? process.argv[i + 1]! : fallback;
}

const ui = arg('ui', process.env.TEMPORAL_UI_URL ?? 'http://127.0.0.1:8233');
const namespace = arg('namespace', 'default');
const query = arg('query', "JourneyStage='completed' AND Scenario='partner_pharmacy'");
const out = path.resolve(arg('out', 'docs/temporal-ui-journey.png'));
/** Text the page must show before the screenshot, scrolled into view. */
const text = arg('text', '"patient"');
const executablePath = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

async function main() {
  if (!existsSync(executablePath)) {
    throw new Error(`no Chromium at ${executablePath}: apt-get install chromium, or set CHROMIUM_PATH`);
  }
  const browser = await chromium.launch({
    executablePath,
    headless: true,
    // The machine's network is closed: keep Chromium from reaching out on its own.
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
  try {
    const page = await browser.newPage({ viewport: { width: 1440, height: 1100 } });
    const listUrl = `${ui}/namespaces/${namespace}/workflows?query=${encodeURIComponent(query)}`;
    console.log(`listing journeys: ${query}`);
    await page.goto(listUrl, { waitUntil: 'networkidle' });
    const link = page.locator('a[href*="/workflows/journey-"]').first();
    await link.waitFor({ timeout: 30_000 });
    const href = await link.getAttribute('href');
    console.log(`opening ${href ?? '(no href)'}`);
    await link.click();
    await page.waitForLoadState('networkidle');
    // The input is shown decoded when the codec server answered (the default text is a key of it); a timer's or an
    // activity's summary shows in the timeline and the event history.
    const shown = page.getByText(text).first();
    await shown.waitFor({ timeout: 30_000 });
    await shown.scrollIntoViewIfNeeded();
    await page.screenshot({ path: out, fullPage: false });
    console.log(`screenshot: ${out}`);
  } finally {
    await browser.close();
  }
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
