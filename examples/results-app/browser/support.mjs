// What the browser tests and the page benchmark share: the app as a real process on loopback,
// runs in the stored format, and Debian's Chromium driven by playwright-core.
import { execFileSync, spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, rmSync } from "node:fs";
import { createInterface } from "node:readline";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";

export const root = join(dirname(fileURLToPath(import.meta.url)), "../../..");
const binary = process.env.OBJSTORE_RESULTS_BIN || join(root, "target/debug/objstore-results");

export function scratch() {
  const dir = mkdtempSync(join(tmpdir(), "objstore-results-page-"));
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/** `objstore-results serve` on a free port over the file:// bucket in `dir` (or the bucket `env` names). */
export async function startApp(dir, args = [], env = {}) {
  const cache = args.includes("--cache") ? [] : ["--cache", join(dir, "cache.sqlite3")];
  const child = spawn(binary, ["serve", "--listen", "127.0.0.1:0", ...cache, ...args], {
    env: { ...process.env, OBJSTORE_RESULTS: `file://${join(dir, "bucket")}`, OBJSTORE_RESULTS_PREFIX: "", ...env },
    stdio: ["ignore", "pipe", "inherit"],
  });
  const lines = createInterface({ input: child.stdout });
  const [line] = await Promise.race([
    once(lines, "line"),
    once(child, "exit").then(([code]) => { throw new Error(`objstore-results serve exited with ${code}`); }),
  ]);
  const url = line.match(/page is at (http:\/\/\S+\/)/)?.[1];
  if (!url) throw new Error(`unexpected first line: ${line}`);
  return {
    url,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = once(child, "exit");
      child.kill();
      await exited;
    },
  };
}

/** `objstore-results checkpoint` over the file:// bucket in `dir` (or the bucket `env` names):
 * what it wrote, as the command prints it, and how long it took in ms. */
export function checkpoint(dir, env = {}) {
  const started = performance.now();
  const out = execFileSync(binary, ["checkpoint", "--cache", join(dir, `checkpoint-${Date.now()}.sqlite3`)], {
    env: { ...process.env, OBJSTORE_RESULTS: `file://${join(dir, "bucket")}`, OBJSTORE_RESULTS_PREFIX: "", ...env },
    stdio: ["ignore", "pipe", "inherit"],
  }).toString().trim();
  return { printed: out, ms: Math.round(performance.now() - started) };
}

/** A run as the app stores it; `tests` are [suite, name, status, message?]. */
export function run(platform, browser, version, tests) {
  const list = tests.map(([suite, name, status, message]) => ({ name, status, duration: 1, suite, ...(message ? { message } : {}) }));
  const count = (s) => list.filter((t) => t.status === s).length;
  const now = Date.now();
  return {
    platform, browser, version,
    results: {
      tool: { name: "page-test" },
      summary: { tests: list.length, passed: count("passed"), failed: count("failed"), skipped: count("skipped"),
        pending: count("pending"), other: count("other"), start: now, stop: now },
      tests: list,
    },
  };
}

/** The run a stored file's key belongs to: `<platform>/<browser>/<run>`. */
export const runOf = (key) => key.split("/").slice(0, 3).join("/");

/** Posts `body` to the collector with a bearer token; the stored file's key. */
export async function post(url, body, token) {
  const response = await fetch(new URL("results", url), {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
    body: JSON.stringify(body),
  });
  const answer = await response.json();
  if (response.status !== 201) throw new Error(`post answered ${response.status}: ${JSON.stringify(answer)}`);
  return answer.key;
}

export function launch() {
  return chromium.launch({
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    // The test command runs as root in CI containers, where Chromium's sandbox cannot start.
    args: ["--no-sandbox", "--disable-dev-shm-usage"],
  });
}

/**
 * Loads the page at `url` `times` times in one tab: [{ms, requests, kinds, rows, heapMb}] per
 * load, the first one cold. `ms` is the page's own `mark` ("matrix-rendered" unless told) from
 * the start of navigation; `buildMs` and `bucketMs` the server's time for the view and the part of
 * it spent waiting on the bucket; `heapMb` the page's JS heap after a garbage collection.
 */
export async function loads(browser, url, times, mark = "matrix-rendered") {
  const page = await browser.newPage();
  const cdp = await page.context().newCDPSession(page);
  const out = [];
  for (let i = 0; i < times; i++) {
    await (i === 0 ? page.goto(url) : page.reload());
    await page.waitForFunction((m) => performance.getEntriesByName(m).length > 0, mark, { timeout: 120_000 });
    const ms = await page.evaluate((m) => performance.getEntriesByName(m)[0].startTime, mark);
    const requests = Number(await page.getAttribute("#cost", "data-requests"));
    // The server's own time for the view, and the part of it spent waiting on the bucket.
    const buildMs = Number(await page.getAttribute("#cost", "data-build-ms"));
    const bucketMs = Number(await page.getAttribute("#cost", "data-bucket-ms"));
    const bytesIn = Number(await page.getAttribute("#cost", "data-bytes-in"));
    const kinds = (await page.textContent("#cost")).match(/\(([^)]*)\)/)?.[1] ?? "";
    const rows = await page.$$eval("#matrix tbody tr", (trs) => trs.length).catch(() => 0);
    await cdp.send("HeapProfiler.collectGarbage");
    const { usedSize } = await cdp.send("Runtime.getHeapUsage");
    out.push({ ms, requests, kinds, rows, buildMs, bucketMs, bytesIn, heapMb: Number((usedSize / 2 ** 20).toFixed(1)) });
  }
  await page.close();
  return out;
}

export const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
