// Drives the web console in headless Chromium (playwright-core over CDP).
// Run by tests/it/web_console.rs, which starts the daemon and pushes the job
// step that makes it ask for approval once this script says READY.
//
//   node console.mjs URL TOKEN OUTDIR CHROMIUM PLAYWRIGHT_CORE_DIR
//
// Prints one JSON line of findings; exits non-zero on the first failed
// expectation, with what it saw.
import { createRequire } from "node:module";
import { writeFileSync } from "node:fs";
import { createInterface } from "node:readline";

const [url, token, outdir, chromiumPath, playwrightDir] = process.argv.slice(2);
const require = createRequire(playwrightDir + "/");
const { chromium } = require("playwright-core");

function fail(what) {
  console.error("FAILED: " + what);
  process.exit(1);
}

const lines = createInterface({ input: process.stdin });
const nextLine = () => new Promise((resolve) => lines.once("line", resolve));

const browser = await chromium.launch({
  executablePath: chromiumPath,
  args: ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync"],
});
const found = {};
try {
  const context = await browser.newContext({ ignoreHTTPSErrors: true, viewport: { width: 1280, height: 900 } });
  const requests = [];
  context.on("request", (r) => requests.push(r.url()));

  // A visitor who has not typed the token.
  const visitor = await context.newPage();
  await visitor.goto(url);
  await visitor.waitForSelector("#live.on", { timeout: 10000 }).catch(() => fail("the event stream never opened"));
  found.incidents_before = await visitor.locator("#incidents tr[data-id]").count();

  // The operator, on a page of their own.
  const operator = await context.newPage();
  await operator.goto(url);
  await operator.waitForSelector("#live.on", { timeout: 10000 });

  console.log("READY");
  await nextLine(); // the test pushed the slow step

  // The incident and its request arrive live, without a reload.
  await visitor.waitForSelector("#incidents tr[data-id].firing", { timeout: 15000 })
    .catch(async () => fail("no live incident: " + (await visitor.locator("#sections").innerText())));
  await visitor.waitForSelector("#approvals button.approve", { timeout: 15000 })
    .catch(async () => fail("no approval request: " + (await visitor.locator("#approvals").innerText())));
  found.decision = await visitor.locator("#approvals button.approve").first().getAttribute("data-id");
  found.events_logged = await visitor.locator("#events li").count();
  await visitor.screenshot({ path: outdir + "/console.png", fullPage: true });

  // Without the token, approve is refused and nothing changes.
  await visitor.locator("#approvals button.approve").first().click();
  await visitor.waitForSelector("#notice.bad", { timeout: 10000 }).catch(() => fail("no refusal shown"));
  found.refusal = (await visitor.locator("#notice").innerText()).trim();
  if (await visitor.locator("#approvals button.approve").count() !== 1) fail("the request left the list after a refused approve");

  // The evidence, in one click.
  await visitor.locator(`#decisions a.explain[href="/decisions/${found.decision}"]`).click();
  await visitor.waitForSelector("#explain[open] pre", { timeout: 10000 }).catch(() => fail("no explain dialog"));
  found.explain = await visitor.locator("#explain pre").innerText();
  await visitor.locator("#explain button").click();

  // The incident's timeline, in one click.
  const [timeline] = await Promise.all([
    context.waitForEvent("page"),
    visitor.locator("#incidents a[href$='/timeline']").first().click(),
  ]);
  await timeline.waitForLoadState();
  found.timeline_svgs = await timeline.locator("svg").count();
  found.timeline_title = await timeline.title();
  await timeline.screenshot({ path: outdir + "/timeline.png", fullPage: true });

  // The operator approves with the token.
  await operator.waitForSelector("#approvals button.approve", { timeout: 15000 });
  await operator.fill("#token", token);
  await operator.fill("#by", "oncall");
  await operator.locator("#approvals button.approve").first().click();
  await operator.waitForSelector("#notice.good", { timeout: 10000 })
    .catch(async () => fail("approve failed: " + (await operator.locator("header").innerText())));
  found.approved = (await operator.locator("#notice").innerText()).trim();
  // Both pages see it leave the list and the decision executed, live.
  for (const page of [operator, visitor]) {
    await page.waitForFunction(() => !document.querySelector("#approvals button.approve"), null, { timeout: 10000 })
      .catch(() => fail("the approved request is still listed"));
    await page.waitForSelector(`#decisions tr[data-id="${found.decision}"][data-verdict="executed"]`, { timeout: 10000 })
      .catch(async () => fail("no executed decision: " + (await page.locator("#decisions").innerText())));
  }
  await operator.screenshot({ path: outdir + "/approved.png", fullPage: true });

  // And undoes it by hand, after confirming.
  operator.on("dialog", (d) => d.accept());
  await operator.waitForSelector(`#effects button.undo[data-id="${found.decision}"]`, { timeout: 10000 })
    .catch(async () => fail("no undo button on the action in effect: " + (await operator.locator("#effects").innerText())));
  await operator.locator(`#effects button.undo[data-id="${found.decision}"]`).click();
  await operator.waitForFunction(() => !document.querySelector("#effects button.undo"), null, { timeout: 10000 })
    .catch(async () => fail("the action is still in effect: " + (await operator.locator("header").innerText())));
  found.undone = (await operator.locator("#notice").innerText()).trim();
  found.external_requests = requests.filter((u) => !u.startsWith(url)).length;
} finally {
  await browser.close();
}
console.log(JSON.stringify(found));
process.exit(0);
