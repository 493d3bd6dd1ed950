// Screenshot of a chorus JSON trace in chrome://tracing's viewer (catapult), as
// docs/mcmc-async-trace.png was made: arrows on, zoomed in around one spot.
//
//   target/release/mcmc --pes 8 --lb async --trace /tmp/m.json          # writes /tmp/m-async.json
//   python3 <catapult checkout>/tracing/bin/trace2html /tmp/m-async.json --output /tmp/m.html
//   npm install playwright-core        # and Debian's chromium
//   node scripts/trace-screenshot.js /tmp/m.html docs/mcmc-async-trace.png [x] [zoom]
//
// x is the pixel column to zoom around (default 560), zoom the number of 'w' presses
// (default 8).
const { chromium } = require('playwright-core');

(async () => {
  const [html, png, x = '560', zoom = '8'] = process.argv.slice(2);
  if (!html || !png) {
    console.error('usage: node scripts/trace-screenshot.js TRACE.html OUT.png [x] [zoom]');
    process.exit(2);
  }
  const browser = await chromium.launch({
    executablePath: '/usr/bin/chromium',
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync',
      '--allow-file-access-from-files'],
  });
  const page = await browser.newPage({ viewport: { width: 1600, height: 700 } });
  await page.goto('file://' + require('path').resolve(html));
  await page.waitForTimeout(15000);
  // Arrows are off by default: tick every flow category.
  await page.getByText('Flow events', { exact: true }).click();
  for (const box of await page.$$('input[type=checkbox]')) {
    if ((await box.isVisible()) && !(await box.isChecked())) await box.check();
  }
  await page.keyboard.press('Escape');
  await page.mouse.click(800, 450);
  await page.mouse.move(Number(x), 150);
  for (let i = 0; i < Number(zoom); i++) {
    await page.keyboard.press('w');
    await page.waitForTimeout(150);
  }
  await page.waitForTimeout(2000);
  await page.screenshot({ path: png, clip: { x: 0, y: 0, width: 1600, height: 378 } });
  await browser.close();
})();
