// tests/browser/screenshots.mjs — the screenshots of docs/dashboard.md,
// taken in Debian's headless Chromium from a live supervisor:
//   node screenshots.mjs BASE_URL JOB_ID OUT_DIR [MIN_POINTS]
// waits until the job's lag plot has MIN_POINTS samples (default 12: a
// minute), then writes OUT_DIR/dashboard-jobs.png and dashboard-job.png.
import { chromium } from "playwright-core";

const [base, job, outDir, minPoints = "12"] = process.argv.slice(2);
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"],
});
try {
  const page = await browser.newPage({ viewport: { width: 1360, height: 640 } });
  await page.goto(base + "/");
  await page.waitForSelector(`tr[data-job-id="${job}"]`);
  await page.waitForTimeout(2500); // two refreshes: the rates are filled in
  await page.screenshot({ path: outDir + "/dashboard-jobs.png" });
  await page.setViewportSize({ width: 1360, height: 900 });
  await page.goto(base + "/#/jobs/" + job);
  await page.waitForFunction((n) => {
    const el = document.querySelector("#plot-lag");
    return el && Number(el.dataset.points) >= n;
  }, Number(minPoints), { timeout: 600000 });
  await page.screenshot({ path: outDir + "/dashboard-job.png", fullPage: true });
} finally {
  await browser.close();
}
