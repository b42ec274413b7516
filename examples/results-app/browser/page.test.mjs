// The results page in headless Chromium against the app serving a seeded file:// bucket.
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { once } from "node:events";
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { spawnSync } from "node:child_process";
import { launch, post, root, run, runOf, scratch, sleep, startApp } from "./support.mjs";

const TOKEN = "page-test-token";
const EVIL_SUITE = `<img src=x onerror="window.__pwned='suite'">`;
const EVIL_NAME = `<script>window.__pwned='name'</script>`;
const EVIL_MESSAGE = `<img src=x onerror="window.__pwned='message'">`;

let work, app, browser, allowedOrigin, otherOrigin;
/** The seeded runs, oldest first, with the keys the collector stored them under. */
const seeded = [];

/** A page that posts a run to the collector from its own origin (for the CORS tests). */
async function originServer() {
  const server = createServer((_, res) => res.end("<!doctype html><title>other page</title>"));
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  return { server, url: `http://127.0.0.1:${server.address().port}` };
}

/** Pair A: 30 runs of one version; `cursor: walk` fails in two of them (flaky); the newest adds a
 * test, drops one and fails `crud: add`. */
function pairA(i) {
  const newest = i === 29;
  return run("linux-x86_64", "python-3.11", "0.1.0", [
    ["crud", "put and get", "passed"],
    ["crud", "add", newest ? "failed" : "passed", newest ? "add over an existing key was accepted" : undefined],
    newest ? ["crud", "new test", "passed"] : ["sql", "old", "passed"],
    ["cursor", "walk", i % 10 === 3 ? "failed" : "passed", i % 10 === 3 ? "visited p0003 twice" : undefined],
    ["sql", "select", "passed"],
    ["transaction", "rollback", "skipped"],
  ]);
}

before(async () => {
  work = scratch();
  const allowed = await originServer();
  const other = await originServer();
  allowedOrigin = allowed;
  otherOrigin = other;
  // Pages cannot hold a token: the allowed one is let in without it, explicitly.
  app = await startApp(work.dir, ["--token", TOKEN, "--origin", allowed.url, "--allow-anonymous-origins"]);
  const seed = async (body) => {
    seeded.push({ body, key: runOf(await post(app.url, body, TOKEN)) });
    await sleep(2); // one run per millisecond: names order the runs of a pair by time
  };
  for (let i = 0; i < 30; i++) await seed(pairA(i));
  await seed(run("macos-arm64", "node-20", "0.2.0", [["event", "ready", "passed"], ["query", "page", "passed"]]));
  await seed(run("macos-arm64", "node-20", "0.2.0", [["event", "ready", "passed"], ["event", "off", "passed"],
    ["query", "page", "failed", "page 2 repeated a record"], ["reporter", "publish", "passed"]]));
  await seed(run("linux-x86_64", "evil-1", "0.1.0", [[EVIL_SUITE, EVIL_NAME, "failed", EVIL_MESSAGE]]));
  // A pair whose newest object is not a run at all (written around the library).
  const broken = join(work.dir, "bucket/results/linux-x86_64/broken/0000000000001-garbage");
  mkdirSync(broken, { recursive: true });
  writeFileSync(join(broken, "0123456789abcdef"), "this is not JSON {");
  browser = await launch();
});

after(async () => {
  await browser?.close();
  await app?.stop();
  allowedOrigin?.server.close();
  otherOrigin?.server.close();
  work?.remove();
});

/** The newest seeded run of each pair, as the matrix must show it. */
function expectedRows() {
  const newest = new Map();
  for (const { body, key } of seeded) newest.set(`${body.platform} / ${body.browser}`, { body, key });
  return newest;
}

function cellText(tests, suite) {
  const of = tests.filter((t) => t.suite === suite);
  if (of.length === 0) return "not run";
  const n = (s) => of.filter((t) => t.status === s).length;
  return `${n("passed")} passed, ${n("failed")} failed` + (n("skipped") ? `, ${n("skipped")} skipped` : "");
}

async function matrixPage(query = "") {
  const page = await browser.newPage();
  const errors = [];
  page.on("pageerror", (e) => errors.push(e));
  await page.goto(app.url + query);
  await page.waitForSelector("#matrix, .note, .error");
  return { page, errors };
}

test("the first view costs bucket requests and a reload within the refractory period costs none", async () => {
  const { page } = await matrixPage();
  // The page's "Loading…" note can answer matrixPage's wait before the view came back.
  await page.waitForSelector("#cost[data-requests]", { state: "attached" });
  assert.equal(await page.isVisible("#cost"), false, "what a view cost is folded away");
  const first = Number(await page.getAttribute("#cost", "data-requests"));
  assert.ok(first >= 2, `a cold view lists and fetches (${first} requests)`);
  assert.match(await page.textContent("#cost"), /This view cost \d+ bucket requests \(.*LIST.*\), \d+ bytes in, about \$0\.\d+ on S3 Standard, \$0\.\d+ on Cloudflare R2, \$0\.\d+ on S3 Express One Zone\./);
  await page.reload();
  await page.waitForSelector("#matrix");
  assert.equal(await page.getAttribute("#cost", "data-requests"), "0");
  assert.match(await page.textContent("#cost"), /cost 0 bucket requests/);
  await page.goto(`${app.url}?cost`);
  await page.waitForSelector("#cost[data-requests]");
  assert.equal(await page.isVisible("#cost"), true, "?cost opens it");
  await page.close();
});

test("the matrix matches the seeded bucket cell by cell, with a row for the pair whose run cannot be read", async () => {
  const { page, errors } = await matrixPage();
  const columns = await page.$$eval("#matrix thead th", (ths) => ths.map((th) => th.textContent));
  assert.deepEqual(columns, ["platform / runtime", "newest run", "crud", "cursor", "event", "transaction", "query",
    "sql", EVIL_SUITE, "reporter"]);
  const shown = await page.$$eval("#matrix tbody tr", (trs) => trs.map((tr) => ({
    pair: tr.dataset.pair,
    run: tr.querySelector("td").textContent,
    cells: [...tr.querySelectorAll("td.cell")].map((td) => ({ suite: td.dataset.suite, text: (td.querySelector("a, span") ?? td).textContent,
      verdict: td.classList[1], classes: [...td.querySelectorAll(".badge")].map((b) => b.textContent) })),
    error: tr.querySelector("td.error")?.textContent,
  })));
  const expected = expectedRows();
  assert.deepEqual(shown.map((r) => r.pair).sort(), [...expected.keys(), "linux-x86_64 / broken"].sort());
  for (const row of shown) {
    if (row.pair === "linux-x86_64 / broken") {
      assert.match(row.error, /newest run could not be loaded: .*not JSON/);
      continue;
    }
    const { body } = expected.get(row.pair);
    assert.match(row.run, new RegExp(`^${body.version.replaceAll(".", "\\.")} · \\d+ (s|min) ago$`));
    for (const cell of row.cells) {
      // A suite no pair of this runtime runs is blank on its row; one it runs but this run did not, "not run".
      const runtimeRunsIt = [...expected.values()].some(({ body: b }) => b.browser === body.browser && b.results.tests.some((t) => t.suite === cell.suite));
      assert.equal(cell.text, runtimeRunsIt ? cellText(body.results.tests, cell.suite) : "", `${row.pair}, ${cell.suite}`);
      const failed = body.results.tests.some((t) => t.suite === cell.suite && t.status === "failed");
      const passed = body.results.tests.some((t) => t.suite === cell.suite && t.status === "passed");
      assert.equal(cell.verdict, failed ? "fail" : passed ? "pass" : ["not run", ""].includes(cell.text) ? "none" : "skip");
    }
    assert.equal(row.cells.length, 8);
  }
  // Classes, by their rules: pair A's newest run fails `crud: add`, which passed in the run
  // before at the same version (no commit named): regressed, and flaky on that version.
  const crud = shown.find((r) => r.pair === "linux-x86_64 / python-3.11").cells.find((c) => c.suite === "crud");
  assert.deepEqual(crud.classes, ["1 flaky", "1 regressed"]);
  assert.match(await page.textContent("dl.legend"), /regressed.*failed here and passed in the pair's previous run/s);
  assert.deepEqual(errors, []);
  await page.close();
});

test("flaky tests: a cell's class count opens the tests it counts, and the flaky list ranks them", async () => {
  const { page, errors } = await matrixPage();
  // `cursor: walk` failed twice among the 25 runs before the newest, at its version: flaky in
  // the cell as on the run's page, though it passed in the newest run and the one before.
  const cell = '#matrix tr[data-pair="linux-x86_64 / python-3.11"] td.cell[data-suite="cursor"]';
  assert.equal(await page.textContent(`${cell} [data-class="flaky"]`), "1 flaky");
  await page.click(`${cell} a:has([data-class="flaky"])`);
  await page.waitForSelector("#tests");
  assert.match(page.url(), /suite=cursor&class=flaky$/);
  assert.deepEqual(await page.$$eval("#tests tbody tr", (trs) => trs.map((tr) => tr.textContent.slice(0, 40))), ["cursorwalkflaky linux-x86_64/python-3.11"]);
  // The team's CODEOWNERS, kept in the bucket: the list names each test's owners.
  const codeowners = join(work.dir, "CODEOWNERS");
  writeFileSync(codeowners, "* @org/everyone\ncursor @cursor-team\n");
  const binary = process.env.OBJSTORE_RESULTS_BIN || join(root, "target/debug/objstore-results");
  const set = spawnSync(binary, ["codeowners", "set", codeowners], { env: { ...process.env, OBJSTORE_RESULTS: `file://${join(work.dir, "bucket")}` } });
  assert.equal(set.status, 0, String(set.stderr));
  await page.click('nav a:text-is("Flaky tests")');
  await page.waitForSelector("#flaky-tests");
  const row = '#flaky-tests tr[data-test="cursor › walk"]';
  assert.match(await page.textContent(row), /^cursor › walk[\d.]+ CI minutes lost · 2 runs failed · 2 commits blocked · 1 pair · seen .+ to .+7\.7% \(2 of 26 runs\)linux-x86_64\/python-3\.11 2 of 26\d+ (s|min) ago@cursor-team$/);
  await page.selectOption('select[name="owner"]', "@org/everyone");
  await page.waitForFunction(() => location.search.includes("owner=%40org%2Feveryone"));
  await page.waitForSelector(`${row}`, { state: "detached" });
  await page.selectOption('select[name="owner"]', "@cursor-team");
  await page.waitForSelector(row);
  // The pair opens the newest run whose page marks it flaky: the newest, where it passed.
  await page.click(`${row} td a`);
  await page.waitForSelector("#tests");
  assert.match(page.url(), /view=run&key=.*&suite=cursor&class=flaky$/);
  assert.deepEqual(await page.$$eval("#tests tbody tr", (trs) => trs.map((tr) => [tr.dataset.status, tr.cells[1].textContent.slice(0, 10)])), [["passed", "walkflaky "]]);
  assert.deepEqual(errors, []);
  await page.close();
});

test("a result whose fields hold <script> and <img onerror> shows as text and runs nothing", async () => {
  const { page } = await matrixPage();
  const evilKey = seeded.find((s) => s.body.browser === "evil-1").key;
  await page.click(`a[href*="${encodeURIComponent(evilKey)}"]`);
  await page.waitForSelector("#tests");
  assert.equal(await page.textContent("#tests tbody td:nth-child(1)"), EVIL_SUITE);
  assert.match(await page.textContent("#tests tbody td:nth-child(2)"), new RegExp(EVIL_NAME.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&")));
  assert.equal(await page.textContent("#tests pre.message"), EVIL_MESSAGE);
  assert.equal(await page.$$eval("main img, main script", (n) => n.length), 0);
  await sleep(200);
  assert.equal(await page.evaluate(() => window.__pwned), undefined);
  await page.close();
});

test("every answer says nosniff and the page's policy allows no inline script", async () => {
  for (const path of ["", "app.js", "app.css", "api/matrix", "api/run?key=no/such/run", "results", "nowhere"]) {
    const response = await fetch(app.url + path);
    assert.equal(response.headers.get("x-content-type-options"), "nosniff", path);
    const csp = response.headers.get("content-security-policy");
    assert.match(csp, /script-src 'self'(;|$)/, path);
    assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval/, path);
  }
  assert.equal((await fetch(app.url + "api/run?key=no/such/run")).status, 404);
  assert.equal((await fetch(app.url + "api/run?key=not-a-key")).status, 400);
  assert.equal((await fetch(app.url + "api/run?key=" + encodeURIComponent("../../etc"))).status, 400);
  const long = await fetch(app.url + "api/diff?from=" + "x".repeat(4000) + "&to=a/b/c");
  assert.equal(long.status, 400);
  assert.ok((await long.text()).length < 300, "the error names a short prefix of the input");
  assert.equal((await fetch(app.url + "api/history?platform=linux-x86_64")).status, 400);
});

test("a pair's history: 25 runs newest first, more by key, the flaky test, a run's failures, back and forward", async () => {
  const { page } = await matrixPage();
  await page.click('a:text-is("linux-x86_64 / python-3.11")');
  await page.waitForSelector("#runs");
  assert.match(page.url(), /view=pair&platform=linux-x86_64&browser=python-3.11$/);
  const pairKeys = seeded.filter((s) => s.body.browser === "python-3.11").map((s) => s.key).reverse();
  const listed = () => page.$$eval("#runs tbody tr", (trs) => trs.map((tr) => tr.dataset.key));
  assert.deepEqual(await listed(), pairKeys.slice(0, 25));
  assert.equal(await page.$$eval("ol.strip li", (li) => li.length), 25);
  await page.click("text=Load more");
  await page.waitForFunction(() => document.querySelectorAll("#runs tbody tr").length === 30);
  assert.deepEqual(await listed(), pairKeys);
  assert.equal(await page.isHidden("text=Load more"), true);
  assert.match(await page.textContent("#flaky"), /cursor › walk \(version 0\.1\.0\)/);

  await page.click(`#runs a[href*="${encodeURIComponent(pairKeys[0])}"]`);
  await page.waitForSelector("#tests");
  const failed = await page.$$eval('#tests tr[data-status="failed"]', (trs) => trs.map((tr) => tr.textContent));
  assert.deepEqual(failed.length, 1);
  assert.match(failed[0], /add.*add over an existing key was accepted/);
  const walk = await page.textContent('#tests tr:has-text("walk")');
  assert.match(walk, /flaky/);
  await page.goBack();
  await page.waitForSelector("#runs");
  assert.match(page.url(), /view=pair/);
  await page.goForward();
  await page.waitForSelector("#tests");
  assert.match(page.url(), new RegExp(`view=run&key=${encodeURIComponent(pairKeys[0])}$`));
  await page.close();
});

test("a diff of two runs: newly failing, newly passing, added and removed", async () => {
  const keys = seeded.filter((s) => s.body.browser === "python-3.11").map((s) => s.key);
  const page = await browser.newPage();
  // A permalink opened directly: the newest run against the one before it.
  await page.goto(`${app.url}?view=run&key=${encodeURIComponent(keys[29])}`);
  await page.click("text=Changes since the previous run");
  await page.waitForSelector("#newly-failing");
  assert.match(page.url(), new RegExp(`view=diff&from=${encodeURIComponent(keys[28])}&to=${encodeURIComponent(keys[29])}$`));
  assert.match(await page.textContent("#newly-failing"), /Newly failing \(1\).*crud › add — failed/s);
  assert.match(await page.textContent("#newly-passing"), /Newly passing \(0\)/);
  assert.match(await page.textContent("#added"), /Added \(1\).*crud › new test — passed/s);
  assert.match(await page.textContent("#removed"), /Removed \(1\).*sql › old — passed/s);
  // Two runs chosen in the history: run 3 (walk failed) against run 4 (walk passed).
  await page.goto(`${app.url}?view=pair&platform=linux-x86_64&browser=python-3.11`);
  await page.click("text=Load more");
  await page.check(`input[value="${keys[4]}"]`);
  await page.check(`input[value="${keys[3]}"]`);
  await page.click("text=Compare the two runs chosen");
  await page.waitForSelector("#newly-passing");
  assert.match(await page.textContent("#newly-passing"), /Newly passing \(1\).*cursor › walk — passed/s);
  assert.match(await page.textContent("#newly-failing"), /Newly failing \(0\)/);
  await page.close();
});

test("filters by platform, runtime, suite and status live in the URL and survive a reload and the back button", async () => {
  const { page } = await matrixPage();
  const pairs = () => page.$$eval("#matrix tbody tr", (trs) => trs.map((tr) => tr.dataset.pair).sort());
  await page.selectOption('select[name="platform"]', "macos-arm64");
  await page.waitForFunction(() => location.search.includes("platform=macos-arm64"));
  await page.waitForFunction(() => document.querySelectorAll("#matrix tbody tr").length === 1);
  assert.deepEqual(await pairs(), ["macos-arm64 / node-20"]);
  await page.reload();
  await page.waitForSelector("#matrix");
  assert.deepEqual(await pairs(), ["macos-arm64 / node-20"]);
  await page.goBack();
  await page.waitForFunction(() => document.querySelectorAll("#matrix tbody tr").length === 4);

  await page.goto(`${app.url}?status=failed&suite=crud`);
  await page.waitForSelector("#matrix");
  assert.deepEqual(await page.$$eval("#matrix thead th", (th) => th.map((t) => t.textContent).slice(2)), ["crud"]);
  assert.deepEqual(await pairs(), ["linux-x86_64 / broken", "linux-x86_64 / python-3.11"]);
  await page.goto(`${app.url}?status=passed&browser=node-20`);
  await page.waitForSelector("#matrix");
  assert.deepEqual(await pairs(), ["macos-arm64 / node-20"]);

  // A run's tests by status.
  const key = seeded.at(-2).key;
  await page.goto(`${app.url}?view=run&key=${encodeURIComponent(key)}&status=failed`);
  await page.waitForSelector("#tests");
  assert.deepEqual(await page.$$eval("#tests tbody tr", (trs) => trs.map((tr) => tr.dataset.status)), ["failed"]);
  await page.close();
});

test("the latest runs as CI runs, 25 pair runs at a time, named for people", async () => {
  const page = await browser.newPage();
  await page.goto(`${app.url}?view=latest`);
  await page.waitForSelector("#ci-runs");
  const rows = () => page.$$eval("#ci-runs tbody tr", (trs) => trs.map((tr) => tr.dataset.key));
  const first = await rows();
  // The seeds name no CI run: each is a row of its own. Newest first: the unreadable object's
  // name claims the newest time, then the seeds backwards.
  assert.equal(first.length, 25);
  assert.deepEqual(first.slice(1), seeded.map((s) => s.key).reverse().slice(0, 24));
  await page.click("text=Load more");
  await page.waitForFunction(() => document.querySelectorAll("#ci-runs tbody tr").length === 34);
  assert.equal(new Set(await rows()).size, 34);
  // No raw key in what the page shows: keys live in its links' addresses.
  const shown = await page.textContent("#ci-runs");
  for (const s of seeded) assert.ok(!shown.includes(s.key.split("/")[2]), `${s.key} is not shown`);
  assert.match(shown, /linux-x86_64 \/ python-3\.11, run of \d{4}-\d\d-\d\d \d\d:\d\d UTC/);
  await page.close();
});

test("a page on an allowed origin posts a run through the collector; another origin is refused by the browser", async () => {
  const page = await browser.newPage();
  const body = run("linux-x86_64", "chromium-148", "0.1.0", [["crud", "posted from a page", "passed"]]);
  const send = (url) => page.evaluate(async ([url, body]) => {
    try {
      const response = await fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
      return { status: response.status, body: await response.json() };
    } catch (e) {
      return { refused: String(e) };
    }
  }, [url, body]);
  const before = readdirSync(join(work.dir, "bucket/results/linux-x86_64"));
  await page.goto(otherOrigin.url);
  const refused = await send(app.url + "results");
  assert.match(refused.refused ?? "", /TypeError: Failed to fetch/);
  assert.deepEqual(readdirSync(join(work.dir, "bucket/results/linux-x86_64")), before, "nothing stored for the other origin");
  await page.goto(allowedOrigin.url);
  const stored = await send(app.url + "results");
  assert.equal(stored.status, 201, JSON.stringify(stored));
  assert.match(stored.body.key, /^linux-x86_64\/chromium-148\/\d{13}-[0-9a-f]{16}\/[0-9a-f]{16}\.2\.[A-Za-z0-9._-]+$/);
  await page.close();
});

test("a failing cell opens its run at that suite's failures, with their text", async () => {
  const { page, errors } = await matrixPage();
  await page.click('#matrix tr[data-pair="linux-x86_64 / python-3.11"] td.cell.fail[data-suite="crud"] a');
  await page.waitForSelector("#tests");
  assert.match(page.url(), /view=run&key=[^&]+&suite=crud&status=failed$/);
  const shown = await page.$$eval("#tests tbody tr", (trs) => trs.map((tr) => tr.textContent));
  assert.equal(shown.length, 1);
  assert.match(shown[0], /add.*add over an existing key was accepted/);
  assert.deepEqual(errors, []);
  await page.close();
});

test("every view loads without a console error or a failed request", async () => {
  const page = await browser.newPage();
  const problems = [];
  page.on("console", (m) => m.type() === "error" && problems.push(m.text()));
  page.on("pageerror", (e) => problems.push(String(e)));
  page.on("response", (r) => r.status() >= 400 && problems.push(`${r.status()} ${r.url()}`));
  const key = seeded[seeded.length - 1].key;
  for (const query of ["", "?view=latest", `?view=run&key=${encodeURIComponent(key)}`]) {
    await page.goto(app.url + query);
    await page.waitForSelector("#matrix, #ci-runs, #tests");
    await page.waitForLoadState("networkidle");
  }
  assert.deepEqual(problems, []);
  await page.close();
});

test("a screenshot of the matrix", async () => {
  const page = await browser.newPage({ viewport: { width: 1400, height: 600 } });
  await page.goto(app.url);
  await page.waitForSelector("#matrix");
  const path = join(root, "target/app/matrix.png");
  mkdirSync(join(root, "target/app"), { recursive: true });
  await page.screenshot({ path, fullPage: true });
  assert.ok(readdirSync(join(root, "target/app")).includes("matrix.png"));
  await page.close();
});

test("a run shows a failure's text, its output and earlier attempts as text; a pass on a retry is marked", async () => {
  const body = run("linux-x86_64", "rust-1.95", "0.1.0", [["crud", "retried", "passed"], ["crud", "broke", "failed", "assertion failed"]]);
  Object.assign(body.results.tests[0], { retries: 1, flaky: true,
    retryAttempts: [{ attempt: 1, status: "failed", message: "first try <b>failed</b>" }] });
  Object.assign(body.results.tests[1], { trace: "at src/lib.rs:12\n<img src=x onerror=\"window.__pwned='trace'\">", stdout: ["printed"] });
  const key = runOf(await post(app.url, body, TOKEN));
  const page = await browser.newPage();
  const errors = [];
  page.on("pageerror", (e) => errors.push(e));
  await page.goto(`${app.url}?view=run&key=${encodeURIComponent(key)}`);
  await page.waitForSelector("#tests");
  const retried = await page.textContent('#tests tr:has-text("retried")');
  assert.match(retried, /passed on retry/);
  assert.match(retried, /attempt 1: failed/);
  assert.match(retried, /first try <b>failed<\/b>/);
  const broke = await page.textContent('#tests tr:has-text("broke")');
  assert.match(broke, /at src\/lib\.rs:12/);
  assert.equal(await page.textContent('#tests tr:has-text("broke") .where code'), "src/lib.rs:12", "file:line picked out");
  assert.match(broke, /printed/);
  assert.equal(await page.evaluate(() => window.__pwned), undefined);
  assert.equal(await page.$$eval("#tests img, #tests b", (nodes) => nodes.length), 0, "markup in the text stays text");
  assert.deepEqual(errors, []);
  await page.close();
});

test("files posted for one CI run, by two jobs at different times, are one run: every suite, the commit, the CI page", async () => {
  const ci = { run: "github-4242-1", commit: "0123456789abcdef", branch: "fix-cursor", url: "https://ci.example/runs/4242" };
  const first = run("windows-x86_64", "c-msvc-19", "0.3.0", [["crud", "put", "passed"]]);
  Object.assign(first, { ci: { ...ci, file: "crud.xml", job: "build (windows)" } });
  first.results.environment = { build_type: "Debug" };
  const second = run("windows-x86_64", "c-msvc-19", "0.3.0", [["sql", "select", "failed", "no such column"]]);
  Object.assign(second, { ci: { ...ci, file: "sql.xml", job: "test (windows)" } });
  const keys = [await post(app.url, first, TOKEN)];
  await sleep(20);
  keys.push(await post(app.url, second, TOKEN));
  assert.equal(runOf(keys[0]), runOf(keys[1]), "one run segment for both files");
  assert.notEqual(keys[0], keys[1]);
  const { page, errors } = await matrixPage();
  const row = '#matrix tr[data-pair="windows-x86_64 / c-msvc-19"]';
  assert.equal(await page.textContent(`${row} td.cell[data-suite="crud"]`), "1 passed, 0 failed");
  assert.equal(await page.textContent(`${row} td.cell[data-suite="sql"]`), "0 passed, 1 failed");
  await page.click(`${row} td.cell[data-suite="sql"] a`);
  await page.waitForSelector("#tests");
  assert.match(await page.textContent("#view h2 + p"), /0123456789 on fix-cursor/);
  assert.equal(await page.getAttribute("a.ci", "href"), ci.url);
  assert.match(await page.textContent("#files"), /2 report files.*crud\.xml \(job build \(windows\)\): 1 tests.*sql\.xml/s);
  assert.match(await page.textContent("ul.labels"), /build_type=Debug/);
  // The matrix filters by a build variant its runs carry.
  await page.goto(app.url);
  await page.waitForSelector("#matrix");
  await page.selectOption('select[name="label"]', "build_type=Debug");
  await page.waitForFunction(() => location.search.includes("label=build_type%3DDebug"));
  await page.waitForFunction(() => document.querySelectorAll("#matrix tbody tr").length === 1);
  assert.equal(await page.getAttribute("#matrix tbody tr", "data-pair"), "windows-x86_64 / c-msvc-19");
  await page.click(`${row} td.cell[data-suite="sql"] a`);
  await page.waitForSelector("#tests");
  assert.match(await page.textContent('#tests tr[data-status="failed"]'), /select \(sql\.xml\).*no such column/s);
  // The history holds the run once.
  await page.goto(`${app.url}?view=pair&platform=windows-x86_64&browser=c-msvc-19`);
  await page.waitForSelector("#runs");
  assert.deepEqual(await page.$$eval("#runs tbody tr", (trs) => trs.map((tr) => tr.dataset.key)), [runOf(keys[0])]);
  assert.match(await page.textContent("#runs tbody"), /1 passed.*1 failed/s);
  assert.match(await page.textContent("#runs tbody"), /GitHub run 4242/, "the run is named by its CI run");

  // A third job of the CI run, on another pair: the latest runs show the CI run as one row.
  const third = run("linux-arm64", "c-gcc-13", "0.3.0", [["sql", "select", "failed", "no such column"], ["crud", "put", "passed"]]);
  Object.assign(third, { ci: { ...ci, file: "all.xml", job: "test (arm)" } });
  await post(app.url, third, TOKEN);
  await page.goto(`${app.url}?view=latest`);
  await page.waitForSelector("#ci-runs");
  const ciRow = '#ci-runs tr[data-run="github-4242-1"]';
  assert.equal(await page.$$eval(ciRow, (trs) => trs.length), 1, "one row for the CI run");
  assert.match(await page.textContent(ciRow), /GitHub run 4242 · CI run.*0123456789 on fix-cursor.*2 pairs.*2 of 2 pairs failed, 2 failures/s);
  await page.click(`${ciRow} th a[data-nav]`);
  await page.waitForSelector("#ci-pairs");
  assert.match(page.url(), /view=cirun&run=github-4242-1$/);
  assert.equal(await page.textContent("#view h2"), "GitHub run 4242");
  assert.equal(await page.$$eval("#ci-pairs tbody tr", (trs) => trs.length), 2);
  // One failing test on two pairs is listed once, with both pairs.
  assert.equal(await page.$$eval("#ci-failures li", (li) => li.length), 1);
  assert.match(await page.textContent("#ci-failures li"), /sql › select.* on (windows-x86_64\/c-msvc-19, linux-arm64\/c-gcc-13|linux-arm64\/c-gcc-13, windows-x86_64\/c-msvc-19)\s*no such column/s);
  assert.deepEqual(errors, []);
  await page.close();
});

test("above 12 columns suites are grouped by their first word; a group opens, and each test is two clicks away", async () => {
  const body = run("linux-x86_64", "python-3.12", "0.4.0", [["unit/a", "one", "passed"], ["unit/b", "two", "passed"],
    ["unit/c", "three", "failed", "three went wrong"], ["unit/d", "four", "passed"],
    ["integration/x", "five", "passed"], ["integration/y", "six", "passed"]]);
  await post(app.url, body, TOKEN);
  const { page, errors } = await matrixPage();
  const heads = () => page.$$eval("#matrix thead th", (ths) => ths.map((th) => th.textContent).slice(2));
  const grouped = await heads();
  assert.ok(grouped.length <= 12, grouped.join(" | "));
  assert.ok(grouped.includes("unit/… (4)") && grouped.includes("integration/… (2)") && grouped.includes("crud"), grouped.join(" | "));
  const row = '#matrix tr[data-pair="linux-x86_64 / python-3.12"]';
  assert.equal(await page.textContent(`${row} td.cell[data-suite="unit"] a`), "3 passed, 1 failed");
  // One click: the group's failures in the run.
  await page.click(`${row} td.cell[data-suite="unit"] a`);
  await page.waitForSelector("#tests");
  assert.match(page.url(), /group=unit&status=failed/);
  assert.deepEqual(await page.$$eval("#tests tbody tr", (trs) => trs.map((tr) => tr.textContent)).then((t) => t.length), 1);
  assert.match(await page.textContent("#tests tbody"), /three went wrong/);
  // The group's heading opens it into its suites.
  await page.goBack();
  await page.waitForSelector("#matrix");
  await page.click('#matrix thead th[data-group="unit"] a');
  await page.waitForFunction(() => location.search.includes("group=unit"));
  await page.waitForSelector('#matrix thead th:text-is("unit/c")');
  assert.deepEqual((await heads()).filter((h) => h.startsWith("unit")), ["unit/a", "unit/b", "unit/c", "unit/d"]);
  assert.deepEqual(errors, []);
  await page.close();
});

test("tests down the side: the suite tree opens in place, pairs across, blank where a pair runs nothing of it", async () => {
  const { page, errors } = await matrixPage();
  // Another runtime's suites are blank on a row, not "not run".
  assert.equal(await page.textContent('#matrix tr[data-pair="linux-x86_64 / python-3.11"] td.cell[data-suite="unit"]'), "");
  await page.click("#offer-tree a");
  await page.waitForSelector("#tree");
  assert.match(page.url(), /view=tree$/);
  const column = await page.$$eval("#tree thead th.pair", (ths) => ths.map((th) => th.textContent).indexOf("linux-x86_64python-3.12"));
  assert.ok(column >= 0);
  const cellOf = (path) => page.$eval(`#tree tr[data-path="${path}"]`, (tr, i) => tr.cells[i + 1].textContent, column);
  assert.equal(await cellOf("unit"), "3 / 4");
  assert.equal(await page.$eval('#tree tr[data-path="unit"]', (tr) => tr.cells[1].textContent), "", "a pair that runs no unit suite: blank");
  assert.equal(await page.$$eval('#tree tr[data-path^="unit/"]', (trs) => trs.length), 0, "closed");
  await page.click('#tree button[data-path="unit"]');
  await page.waitForSelector('#tree tr[data-path="unit/c"]');
  assert.match(page.url(), /view=tree&open=unit$/);
  assert.equal(await page.evaluate(() => document.activeElement?.dataset.path), "unit", "the focus stays on the node");
  assert.deepEqual(await page.$$eval('#tree tr[data-depth="1"]', (trs) => trs.map((tr) => tr.dataset.path).filter((p) => p.startsWith("unit/"))),
    ["unit/a", "unit/b", "unit/c", "unit/d"]);
  assert.equal(await cellOf("unit/c"), "0 / 1");
  // A class's mark opens the run at the tests it counts: `cursor: walk`, flaky on pair A.
  const pairA = await page.$$eval("#tree thead th.pair", (ths) => ths.map((th) => th.textContent).indexOf("linux-x86_64python-3.11"));
  const mark = await page.$eval('#tree tr[data-path="cursor"]', (tr, i) => tr.cells[i + 1].querySelector("a:has(abbr.mark)").getAttribute("href"), pairA);
  assert.match(mark, /view=run&key=.*&group=cursor&class=flaky$/);
  // A suite opens into its tests, each linked to its page.
  await page.click('#tree button[data-path="unit/c"]');
  await page.waitForSelector('#tree tr[data-path="unit/c › three"]');
  assert.equal(await cellOf("unit/c › three"), "failed");
  assert.match(page.url(), /open=unit%0Aunit%2Fc$/);
  // The address holds what is open: a reload shows the same rows.
  await page.reload();
  await page.waitForSelector('#tree tr[data-path="unit/c › three"]');
  await page.click('#tree tr[data-path="unit/c › three"] th a');
  await page.waitForSelector("#test-pairs");
  assert.match(page.url(), /view=test&suite=unit%2Fc&name=three$/);
  assert.deepEqual(errors, []);
  await page.close();
});

test("top failures: the same assert on two platforms is one group, linked to each run's failures", async () => {
  const windows = run("windows-x86_64", "c-msvc-19", "0.5.0", [["crud", "put", "failed", "C:\\ci\\db\\tests\\crud.c(12): expected 2, got 3"]]);
  const linux = run("linux-x86_64", "c-gcc-12", "0.5.0", [["crud", "put", "failed", "/home/ci/db/tests/crud.c:14: expected 2, got 3"],
    ["crud", "get", "failed", "/home/ci/db/tests/crud.c:30: no record under key 7"]]);
  await post(app.url, windows, TOKEN);
  await post(app.url, linux, TOKEN);
  const page = await browser.newPage();
  const errors = [];
  page.on("pageerror", (e) => errors.push(e));
  await page.goto(app.url);
  await page.click('nav a:text-is("Top failures")');
  await page.waitForSelector("#failures");
  const groups = await page.$$eval("#failures > li", (lis) => lis.map((li) => li.textContent));
  const shared = groups.find((g) => g.includes("expected N, got N"));
  assert.match(shared, /^2 pairs, 2 tests · linux-x86_64\/c-gcc-12, windows-x86_64\/c-msvc-19/, shared);
  assert.ok(groups.some((g) => /^1 pair, 1 test .*no record under key/s.test(g)), groups.join("\n"));
  await page.click('#failures > li:has-text("expected N, got N") a:text-is("windows-x86_64/c-msvc-19")');
  await page.waitForSelector("#tests");
  assert.match(page.url(), /suite=crud&status=failed/);
  assert.match(await page.textContent("#tests tbody"), /crud\.c\(12\): expected 2, got 3/);
  assert.deepEqual(errors, []);
  await page.close();
});

test("failure rules: added from the page with the token, the top failures group under it, known and linked; removed, gone", async () => {
  const page = await browser.newPage();
  const errors = [];
  page.on("pageerror", (e) => errors.push(e));
  await page.goto(app.url + "?view=failures");
  await page.waitForSelector("#failures");
  // Before any rule: the failures of the newest runs are new or seen, each group with its cost.
  assert.match(await page.textContent("#failures"), /CI minutes lost · \d+ runs? failed · \d+ commits? blocked/);
  assert.ok(await page.$("#failures .badge.new"), "a failure never seen before on the default branch is new");
  await page.click('nav a:text-is("Rules")');
  await page.waitForSelector("#rule-form");
  await page.fill('#rule-form input[name="title"]', "crud put counts twice");
  await page.fill('#rule-form input[name="issue"]', "https://github.com/team/db/issues/12");
  await page.fill('#rule-form input[name="text"]', "expected 2, got 3");
  // Without the token: refused, and said so.
  await page.click('#rule-form button[type="submit"]');
  await page.waitForSelector('#rule-form .said:not(:empty)');
  assert.match(await page.textContent("#rule-form .said"), /bearer token/);
  await page.fill('#rule-form input[name="token"]', TOKEN);
  await page.click('#rule-form button[type="submit"]');
  await page.waitForSelector('#rules li[data-rule="r1"]');
  assert.match(await page.textContent('#rules li[data-rule="r1"]'), /text: expected 2, got 3.*CI minutes lost/s);
  await page.click('nav a:text-is("Top failures")');
  await page.waitForSelector('#failures li[data-key="rule r1"]');
  const known = await page.textContent('#failures li[data-key="rule r1"]');
  assert.match(known, /^rule r1: crud put counts twice/, known);
  assert.equal(await page.getAttribute('#failures li[data-key="rule r1"] .rule a', "href"), "https://github.com/team/db/issues/12");
  await page.click('nav a:text-is("Rules")');
  await page.waitForSelector('#rules li[data-rule="r1"]');
  await page.click('#rules li[data-rule="r1"] button[data-action="remove"]');
  await page.waitForSelector("#rules", { state: "detached" });
  assert.match(await page.textContent("main"), /No rule yet/);
  assert.deepEqual(errors, []);
  await page.close();
});

test("each view names the document, its heading takes the focus after a navigation, and a dark scheme is honoured", async () => {
  const page = await browser.newPage();
  await page.goto(app.url);
  await page.waitForSelector("#matrix");
  assert.equal(await page.title(), "Newest run per platform and runtime · Test results");
  await page.click('nav a:text-is("Latest runs")');
  await page.waitForSelector("#ci-runs");
  assert.equal(await page.title(), "Latest CI runs · Test results");
  assert.equal(await page.evaluate(() => document.activeElement?.textContent), "Latest CI runs");
  assert.equal(await page.evaluate(() => getComputedStyle(document.body).backgroundColor), "rgb(255, 255, 255)");
  await page.emulateMedia({ colorScheme: "dark" });
  assert.equal(await page.evaluate(() => getComputedStyle(document.body).backgroundColor), "rgb(13, 17, 23)");
  await page.close();
});

test("a test's own history: its outcomes as a strip, since when it fails; the search finds tests", async () => {
  const page = await browser.newPage();
  const errors = [];
  page.on("pageerror", (e) => errors.push(e));
  const newest = seeded.filter((s) => s.body.browser === "python-3.11").at(-1).key;
  await page.goto(`${app.url}?view=run&key=${encodeURIComponent(newest)}&status=failed`);
  await page.waitForSelector("#tests");
  await page.click('#tests a:text-is("add")');
  await page.waitForSelector("#outcomes");
  assert.equal(await page.title(), "crud › add · Test results");
  assert.deepEqual(await page.$$eval("#outcomes li", (lis) => lis.map((li) => li.textContent)), ["failed", "passed × 29"]);
  assert.match(await page.textContent("#failing-since"), /^Failing since .*\(1 run\)/);
  assert.match(await page.textContent("#durations"), /p50.*p95.*over 29/);
  // Its pair's figures, and its runs as a table: the newest failed, with its message's first line.
  assert.match(await page.textContent('#test-pairs tr[data-pair="linux-x86_64/python-3.11"]'), /^linux-x86_64\/python-3\.11261(0|3\.8)% \(\d flaky\)\d+ (s|min) ago\d+ (s|min) ago$/);
  const runs = await page.$$eval("#test-runs tbody tr", (trs) => trs.map((tr) => [...tr.cells].map((td) => td.textContent)));
  assert.equal(runs.length, 30);
  assert.deepEqual(runs[0].slice(1), ["linux-x86_64/python-3.11", "—", "—", "failed", "add over an existing key was accepted", "1"]);
  assert.deepEqual(runs[1].slice(4, 6), ["passed", ""]);
  assert.match(await page.textContent("#test-groups"), /1 run: add over an existing key was accepted/);
  // On every pair: the pairs that ran it, each opening the test's page there.
  await page.click('a:text-is("on every pair")');
  await page.waitForURL(/view=test&suite=crud&name=add$/);
  await page.waitForSelector("#test-pairs p, #test-pairs");
  await page.waitForFunction(() => !document.querySelector("#outcomes"));
  // Only the pairs whose runs hold the test: others run a crud suite without it.
  const pairs = await page.$$eval("#test-pairs tbody tr", (trs) => trs.map((tr) => tr.dataset.pair));
  assert.deepEqual(pairs, ["linux-x86_64/python-3.11"]);
  assert.match(await page.textContent('#test-pairs tr[data-pair="linux-x86_64/python-3.11"] th'), /^linux-x86_64\/python-3\.11$/);
  // The search box, then a test's history from what it found.
  await page.fill('#search input[name="q"]', "walk");
  await page.press('#search input[name="q"]', "Enter");
  await page.waitForSelector("#found");
  assert.match(page.url(), /view=search&q=walk$/);
  await page.click('#found a:text-is("walk")');
  await page.waitForSelector("#outcomes");
  const strip = await page.$$eval("#outcomes li", (lis) => lis.map((li) => li.textContent));
  assert.deepEqual(strip, ["passed × 6", "failed", "passed × 9", "failed", "passed × 9", "failed", "passed × 3"]);
  assert.equal(await page.$("#failing-since"), null, "it passes now");
  // Failed twice in the newest 26 runs, at a version where it passed: each of them a flaky run.
  assert.match(await page.textContent('#test-pairs tr[data-pair="linux-x86_64/python-3.11"]'), /^linux-x86_64\/python-3\.112627\.7% \(2 flaky\)/);
  assert.deepEqual(errors, []);
  await page.close();
});

test("a commit view: every pair at one commit, what changed since another, and what diverges", async () => {
  const at = (platform, browser, commit, status) => {
    const body = run(platform, browser, "0.6.0", [["crud", "merge", status, status === "failed" ? "merge lost a write" : undefined]]);
    body.ci = { commit };
    return body;
  };
  for (const body of [at("linux-x86_64", "rust-1.96", "c0ffee01", "passed"), at("macos-arm64", "rust-1.96", "c0ffee01", "passed")]) {
    await post(app.url, body, TOKEN);
  }
  await sleep(5);
  for (const body of [at("linux-x86_64", "rust-1.96", "c0ffee02", "failed"), at("macos-arm64", "rust-1.96", "c0ffee02", "passed")]) {
    await post(app.url, body, TOKEN);
  }
  const page = await browser.newPage();
  const errors = [];
  page.on("pageerror", (e) => errors.push(e));
  await page.goto(`${app.url}?view=commit&commit=c0ffee02`);
  await page.waitForSelector("#runs");
  assert.equal(await page.$$eval("#runs tbody tr", (trs) => trs.length), 2);
  assert.match(await page.textContent("#divergent"), /crud › merge — passed on macos-arm64\/rust-1\.96; failed on linux-x86_64\/rust-1\.96/);
  // With no base, the commit's failures are listed all the same.
  assert.match(await page.textContent("#failures"), /Failures at this commit \(1\).*linux-x86_64\/rust-1\.96 · crud › merge/s);
  await page.fill('#compare input[name="base"]', "c0ffee01");
  await page.click('#compare button');
  await page.waitForSelector("#newly-failing");
  assert.match(page.url(), /view=commit&commit=c0ffee02&base=c0ffee01$/);
  assert.match(await page.textContent("#newly-failing"), /Newly failing since the base \(1\).*linux-x86_64\/rust-1\.96 · crud › merge/s);
  assert.match(await page.textContent("#fixed"), /\(0\)/);
  // A commit is named by 7 characters at least, and by one commit only.
  assert.equal((await fetch(`${app.url}api/commit?commit=c0ff`)).status, 400);
  const ambiguous = await fetch(`${app.url}api/commit?commit=c0ffee0`);
  assert.equal(ambiguous.status, 400);
  assert.match((await ambiguous.json()).error, /more than one commit: c0ffee01, c0ffee02/);
  // A run's commit opens its commit view.
  await page.click('#runs a:text-is("linux-x86_64 / rust-1.96")');
  await page.waitForSelector("#tests");
  await page.click('#view h2 + p a:text-is("c0ffee02")');
  await page.waitForSelector("#divergent");
  assert.deepEqual(errors, []);
  await page.close();
});

test("the quarantine: its entries with their pairs' recent outcomes, added with the CLI", async () => {
  const binary = process.env.OBJSTORE_RESULTS_BIN || join(root, "target/debug/objstore-results");
  const added = spawnSync(binary, ["quarantine", "add", "--suite", "crud", "--name", "add", "--pairs", "linux-x86_64/*",
    "--reason", "flaky <b>on</b> CI", "--until", "2999-01-31", "--by", "ada"], { env: { ...process.env, OBJSTORE_RESULTS: `file://${join(work.dir, "bucket")}` } });
  assert.equal(added.status, 0, String(added.stderr));
  const page = await browser.newPage();
  await page.goto(`${app.url}?view=quarantine`);
  await page.waitForSelector("#quarantine");
  const row = '#quarantine tr[data-test="crud › add"]';
  assert.match(await page.textContent(row), /linux-x86_64\/\*.*flaky <b>on<\/b> CI\d+ s ago by ada2999-01-31.*linux-x86_64\/python-3\.11: passed \d+ of \d+/s);
  // A covered pair that does not run the suite says so, rather than "passed 0 of 20".
  assert.equal(await page.textContent(`${row} div[data-pair="linux-x86_64/evil-1"]`), "linux-x86_64/evil-1: not run here");
  assert.match(await page.textContent(`${row} td.added`), /^\d+ s ago by ada$/, "who added it, and when");
  assert.equal(await page.getAttribute(row, "data-releasable"), "false", "fewer than 20 runs: not yet");
  assert.equal(await page.$$eval("#quarantine b", (b) => b.length), 0, "the reason is text");
  assert.equal(await page.title(), "Quarantine · Test results");
  // Each covered pair opens the test's history there.
  await page.click(`${row} div[data-pair="linux-x86_64/python-3.11"] a`);
  await page.waitForSelector("#view h2");
  assert.match(page.url(), /view=test&platform=linux-x86_64&browser=python-3.11&suite=crud&name=add$/);
  await page.close();
});

test("axe-core finds no WCAG 2 A or AA violation in any view, light or dark", async () => {
  const axe = readFileSync(join(root, "examples/results-app/browser/node_modules/axe-core/axe.min.js"), "utf8");
  // axe is injected by the test (the page's own policy rightly refuses inline scripts).
  const context = await browser.newContext({ bypassCSP: true });
  const page = await context.newPage();
  const key = seeded.filter((s) => s.body.browser === "python-3.11").at(-1).key;
  const views = ["", "?view=latest", `?view=run&key=${encodeURIComponent(key)}`, "?view=pair&platform=linux-x86_64&browser=python-3.11",
    "?view=failures", "?view=test&platform=linux-x86_64&browser=python-3.11&suite=crud&name=add", "?view=search&q=walk",
    "?view=commit&commit=c0ffee02&base=c0ffee01", "?view=quarantine", "?view=cirun&run=github-4242-1", "?view=flaky", "?view=tree&open=unit", "?view=rules", "?view=proposals"];
  const found = [];
  for (const scheme of ["light", "dark"]) {
    await page.emulateMedia({ colorScheme: scheme });
    for (const query of views) {
      await page.goto(app.url + query);
      await page.waitForSelector("main h2");
      await page.evaluate(axe);
      const result = await page.evaluate(() => window.axe.run(document, { runOnly: ["wcag2a", "wcag2aa"] }));
      for (const v of result.violations) {
        found.push(`${scheme} ${query || "matrix"}: ${v.id} (${v.nodes.length}): ${v.nodes[0].failureSummary.split("\n")[1]} at ${v.nodes[0].target}`);
      }
    }
  }
  assert.deepEqual(found, []);
  // The check can fail: an image without a text alternative is found.
  await page.evaluate(() => document.querySelector("main").append(Object.assign(document.createElement("img"), { src: "/favicon.svg" })));
  const broken = await page.evaluate(() => window.axe.run(document, { runOnly: ["wcag2a", "wcag2aa"] }));
  assert.deepEqual(broken.violations.map((v) => v.id), ["image-alt"]);
  await context.close();
});
