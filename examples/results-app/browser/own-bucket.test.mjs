// The results page in headless Chromium, each view over a bucket of its own (the branches a
// bucket's runs are on, durations as people read them), apart from page.test.mjs's seeded one.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { launch, post, run, runOf, scratch, sleep, startApp } from "./support.mjs";

const TOKEN = "page-test-token";
let browser;

before(async () => {
  browser = await launch();
});

after(async () => {
  await browser.close();
});

test("branches: a pull request's newer run does not replace main's; the picker shows it, and its run compares with main's", async () => {
  // An app of its own: main in this bucket makes main the default branch of every view.
  const own = scratch();
  const branchApp = await startApp(own.dir, ["--token", TOKEN]);
  try {
    const on = (branch, commit, status) => Object.assign(
      run("linux-x86_64", "node-20", "1.0.0", [["crud", "put", status, status === "failed" ? "put lost the record" : undefined]]),
      { ci: { branch, commit } });
    const main = runOf(await post(branchApp.url, on("main", "aaaaaaaaaaaa1111", "passed"), TOKEN));
    await sleep(5);
    const pull = runOf(await post(branchApp.url, on("feature/slug-fix", "bbbbbbbbbbbb2222", "failed"), TOKEN));
    const page = await browser.newPage();
    const errors = [];
    page.on("pageerror", (e) => errors.push(e));
    await page.goto(branchApp.url);
    await page.waitForSelector("#matrix");
    const row = '#matrix tr[data-pair="linux-x86_64 / node-20"]';
    assert.match(await page.textContent("#view h2"), /on main$/);
    assert.equal(await page.getAttribute(`${row} td:first-of-type a`, "href"), `/?view=run&key=${encodeURIComponent(main)}`);
    assert.equal(await page.textContent(`${row} .source`), "aaaaaaaaaa on main");
    assert.equal(await page.textContent(`${row} td.cell[data-suite="crud"]`), "1 passed, 0 failed");
    await page.selectOption('select[name="branch"]', "feature/slug-fix");
    await page.waitForFunction(() => location.search.includes("branch=feature%2Fslug-fix"));
    await page.waitForFunction(() => document.querySelector("#view h2")?.textContent.endsWith("on feature/slug-fix"));
    assert.equal(await page.textContent(`${row} td.cell[data-suite="crud"] a`), "0 passed, 1 failed");
    // Weighed against its base: main passed it, so the pull request's failure is new.
    assert.equal(await page.textContent(`${row} td.cell[data-suite="crud"] .badge`), "1 regressed");
    assert.equal(await page.textContent(`${row} .source`), "bbbbbbbbbb on feature/slug-fix");
    // The pull request's run is compared with main's run before it, its base.
    await page.click(`${row} td:first-of-type a`);
    await page.waitForSelector("#tests");
    await page.click("text=Changes against main's run before it");
    await page.waitForSelector("#newly-failing");
    assert.match(page.url(), new RegExp(`view=diff&from=${encodeURIComponent(main)}&to=${encodeURIComponent(pull)}$`));
    assert.match(await page.textContent("#newly-failing"), /Newly failing \(1\).*crud › put — failed/s);
    // Back to the matrix: the branch chosen is in the URL, and "any branch" shows the newest.
    await page.goBack();
    await page.goBack();
    await page.waitForSelector("#matrix");
    // The run page's answer, asked for on the way back, does not replace the matrix later.
    await sleep(500);
    assert.ok(await page.$("#matrix"), "the matrix stays after going back twice");
    assert.equal(await page.inputValue('select[name="branch"]'), "feature/slug-fix");
    await page.selectOption('select[name="branch"]', "*");
    await page.waitForFunction(() => location.search.includes("branch=*") || location.search.includes("branch=%2A"));
    await page.waitForFunction(() => !document.querySelector("#view h2")?.textContent.includes(" on "));
    assert.equal(await page.textContent(`${row} .source`), "bbbbbbbbbb on feature/slug-fix");
    assert.deepEqual(errors, []);
    await page.close();
  } finally {
    await branchApp.stop();
    own.remove();
  }
});


test("a run reads as people read it: durations rounded, a broken test's evidence names each pair once", async () => {
  const own = scratch();
  const smallApp = await startApp(own.dir, ["--token", TOKEN]);
  try {
    const body = () => {
      const r = run("linux-x86_64", "node-20", "1.0.0", [["crud", "slow", "passed"], ["crud", "quick", "passed"], ["crud", "broke", "failed", "expected 2\nreceived 3"]]);
      r.results.tests[0].duration = 1234.567;
      r.results.tests[1].duration = 1.03926;
      return r;
    };
    await post(smallApp.url, body(), TOKEN);
    await sleep(5);
    const key = runOf(await post(smallApp.url, body(), TOKEN));
    const page = await browser.newPage();
    await page.goto(`${smallApp.url}?view=run&key=${encodeURIComponent(key)}`);
    await page.waitForSelector("#tests");
    const durations = await page.$$eval("#tests tbody tr", (trs) => trs.map((tr) => tr.lastElementChild.textContent));
    assert.deepEqual(durations.sort(), ["1", "1.04", "1235"]);
    // Failed in both of the pair's runs: broken, its evidence the pair's two runs, named apart.
    const evidence = await page.$$eval('#tests .class[data-class="broken"] a', (as) => as.map((a) => a.textContent));
    assert.deepEqual(evidence, ["linux-x86_64/node-20", "linux-x86_64/node-20 (earlier)"]);
    assert.equal(await page.textContent("#tests pre.message"), "expected 2\nreceived 3", "the message keeps its line break");
    await page.close();
  } finally {
    await smallApp.stop();
    own.remove();
  }
});
