// tests/browser/dashboard.mjs — drives Debian's headless Chromium through
// playwright-core (tests/browser/package-lock.json) against a live
// supervisor: the jobs page shows both jobs with their states, a job page
// has a lag plot with data points, and pressing drain moves the job to
// `checkpointed` as the API reports it. Run by tests/e2e/dashboard.sh.
//
//   node dashboard.mjs BASE_URL JOB_A JOB_B [SCREENSHOT_DIR]
//
// Prints "ok: ..." per check and exits 1 on the first failure.
import { chromium } from "playwright-core";

const [base, jobA, jobB, shots] = process.argv.slice(2);
const deadline = (ms) => Date.now() + ms;
const fail = (m) => { console.error("FAIL: " + m); process.exit(1); };
const ok = (m) => console.log("ok: " + m);

async function until(what, ms, fn) {
  const end = deadline(ms);
  let last;
  while (Date.now() < end) {
    try { last = await fn(); if (last) return last; } catch (e) { last = e.message; }
    await new Promise((r) => setTimeout(r, 200));
  }
  fail(what + " within " + ms + " ms (last: " + JSON.stringify(last) + ")");
}

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-dev-shm-usage"],
});
try {
  const page = await browser.newPage({ viewport: { width: 1360, height: 900 } });
  const errors = [];
  page.on("pageerror", (e) => errors.push(e.message));
  page.on("console", (m) => { if (m.type() === "error") errors.push(m.text()); });

  await page.goto(base + "/");
  for (const id of [jobA, jobB]) {
    const st = await until("job " + id + " in the jobs table", 15000, async () => {
      const t = await page.locator(`tr[data-job-id="${id}"] .state`).textContent({ timeout: 500 });
      return t === "running" ? t : null;
    });
    ok(`jobs page shows job ${id} as ${st}`);
  }
  const rates = await until("a records/s figure", 15000, async () => {
    const t = await page.locator(`tr[data-job-id="${jobA}"] td:nth-child(8)`).textContent({ timeout: 500 });
    return t && t !== "–" && Number(t.replace(/,/g, "")) > 0 ? t : null;
  });
  ok(`jobs page shows ${rates} records/s in`);
  if (shots) await page.screenshot({ path: shots + "/dashboard-jobs.png" });

  await page.goto(base + "/#/jobs/" + jobA);
  const pts = await until("a lag plot with 2+ data points", 20000, async () => {
    const n = Number(await page.locator("#plot-lag").getAttribute("data-points", { timeout: 500 }));
    const canvas = await page.locator("#plot-lag canvas").count();
    return n >= 2 && canvas > 0 ? n : null;
  });
  ok(`job page lag plot drawn with ${pts} data points`);
  const tput = Number(await page.locator("#plot-throughput").getAttribute("data-points"));
  if (tput < 2) fail("throughput plot has " + tput + " points");
  ok(`throughput plot has ${tput} points`);
  await until("a checkpoint in the table", 15000, async () =>
    (await page.locator("#checkpoints tbody tr").count()) > 0);
  ok("checkpoint table has rows");
  if (shots) await page.screenshot({ path: shots + "/dashboard-job.png", fullPage: true });

  await page.locator("#btn-drain").click();
  const st = await until("drain to reach checkpointed (API)", 30000, async () => {
    const r = await fetch(base + "/v1/jobs/" + jobA);
    const j = await r.json();
    return j.state === "checkpointed" ? j.state : null;
  });
  ok(`after pressing drain the API reports ${st}`);
  await until("the page to show checkpointed", 10000, async () =>
    (await page.locator(".facts .state").first().textContent({ timeout: 500 })) === "checkpointed");
  ok("the job page shows checkpointed");
  const other = await (await fetch(base + "/v1/jobs/" + jobB)).json();
  if (other.state !== "running") fail("job B is " + other.state + ", expected running");
  ok("the other job is still running");
  if (errors.length) fail("page errors: " + errors.join("; "));
  ok("no script errors");

  // With authentication on (auth.tokens_file) the API answers 401 without
  // a bearer token: played here by answering 401 to every /v1/ request
  // that lacks "Authorization: Bearer t0k"; the page must ask for a token
  // and then send it on every request.
  const authed = await browser.newPage();
  let unauth = 0, withToken = 0;
  await authed.route("**/v1/**", (route) => {
    if (route.request().headers()["authorization"] === "Bearer t0k") {
      withToken++;
      return route.continue();
    }
    unauth++;
    return route.fulfill({ status: 401, contentType: "application/json",
      body: JSON.stringify({ error: { category: "unauthenticated", message: "send 'Authorization: Bearer <token>'" } }) });
  });
  await authed.goto(base + "/");
  await authed.locator("#token").waitFor({ timeout: 10000 });
  await authed.locator("#token").fill("t0k");
  await authed.keyboard.press("Enter");
  await until("the jobs table after the token", 10000, async () =>
    (await authed.locator(`tr[data-job-id="${jobB}"]`).count()) > 0);
  if (!unauth || withToken < 3) fail(`requests: ${unauth} without, ${withToken} with the token`);
  ok(`behind authentication: asked for a token, then sent it (${withToken} requests)`);
} finally {
  await browser.close();
}
