// Tests down the side at size (issue 47): 500 suites over 30 pairs, each pair's newest run
// holding 1,000 tests, in a file:// bucket; the suites in 10 areas of 50 (`area-3/module-7`),
// and flat (500 rows at the top). Times the tree's first paint cold (an empty cache) and warm,
// the opening of one area (50 suites) and of one suite (its tests: every pair's newest run
// read whole), by the page's own "tree-rendered" marks.
import { post, run, scratch, startApp } from "./support.mjs";

const AREAS = 10;
const MODULES = 50;
const PAIRS = 30;
const TOKEN = "tree-bench-token";

function sample(pair, flat) {
  const tests = [];
  for (let a = 0; a < AREAS; a++) {
    for (let m = 0; m < MODULES; m++) {
      const suite = flat ? `suite-${a * MODULES + m}` : `area-${a}/module-${m}`;
      tests.push([suite, "works", "passed"], [suite, "edge case", (pair + a + m) % 37 === 0 ? "failed" : "passed"]);
    }
  }
  return run(`platform-${pair % 5}`, `runtime-${Math.floor(pair / 5)}`, "0.1.0", tests);
}

/** Milliseconds from `act` until the page has rendered the tree once more: from the start of
 * navigation for a load (`loads`), else from the act (a click that opens a node). */
async function timed(page, act, loads = false) {
  const before = loads ? 0 : await page.evaluate(() => performance.getEntriesByName("tree-rendered").length);
  const start = loads ? 0 : await page.evaluate(() => performance.now());
  await act();
  await page.waitForFunction((n) => performance.getEntriesByName("tree-rendered").length > n, before, { timeout: 120_000 });
  return page.evaluate((t0) => performance.getEntriesByName("tree-rendered").at(-1).startTime - t0, start);
}

/** The figures of one layout: in areas, or `flat`. */
async function layout(browser, flat) {
  const work = scratch();
  let app = await startApp(work.dir, ["--token", TOKEN, "--per-minute", "100000000", "--burst", "100000000"]);
  try {
    for (let pair = 0; pair < PAIRS; pair++) await post(app.url, sample(pair, flat), TOKEN);
    await app.stop();
    app = await startApp(work.dir, ["--cache", `${work.dir}/tree-cold.sqlite3`]);
    const page = await browser.newPage();
    const cold = await timed(page, () => page.goto(`${app.url}?view=tree`), true);
    const rows = await page.$$eval("#tree tbody tr", (trs) => trs.length);
    const warm = await timed(page, () => page.reload(), true);
    const area = flat ? null : await timed(page, () => page.click('#tree button[data-path="area-3"]'));
    const areaRows = await page.$$eval("#tree tbody tr", (trs) => trs.length);
    const suite = await timed(page, () => page.click(`#tree button[data-path="${flat ? "suite-157" : "area-3/module-7"}"]`));
    const requests = Number(await page.getAttribute("#cost", "data-requests"));
    await page.close();
    return {
      first_paint_cold_ms: Math.round(cold), first_paint_warm_ms: Math.round(warm), top_rows: rows,
      ...(flat ? {} : { open_area_ms: Math.round(area), rows_after_opening: areaRows }),
      open_suite_ms: Math.round(suite), open_suite_requests: requests,
    };
  } finally {
    await app.stop();
    work.remove();
  }
}

/** The tree at 500 suites over 30 pairs, in areas and flat. */
export async function treeFigures(browser) {
  return { suites: AREAS * MODULES, pairs: PAIRS, tests_per_run: AREAS * MODULES * 2,
    in_areas: await layout(browser, false), flat: await layout(browser, true) };
}
