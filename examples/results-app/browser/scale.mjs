// The page at scale (issue 25): N = 100,000 runs over 500 platform/runtime pairs, written through
// the library (the Node package) into a file:// bucket and into Garage, then read by the app
// with an empty cache: from the file:// bucket directly, and from Garage through a relay that
// holds every request 20 ms (a bucket in another building). Per bucket: the cold matrix's
// requests, GETs and time to a rendered matrix (the median of three apps, each over an empty
// cache); the warm reloads' median; one test's history
// cold and warm (its requests); the page's JS heap. The baseline, measured in the same run, is
// the page over an empty bucket, warm; the cold matrix's is the bare listing of every name, with
// nothing cached (what the bucket itself costs). Writes the figures under "page.scale" in
// target/bench/app.json.
//   node scale.mjs [--runs N] [--pairs P] [--branchless] [--seed-only DIR [GARAGE_PREFIX] | --reuse DIR GARAGE_PREFIX]
//   (Garage: tests/servers/garage starts it)
import { execFileSync, spawn } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import net from "node:net";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { launch, loads, median, root, scratch, startApp } from "./support.mjs";

const require = createRequire(import.meta.url);
const { Storage } = require(join(root, "bindings/node/index.js"));
const digests = require(join(root, "bindings/node/digest.js"));

const arg = (name, fallback) => {
  const i = process.argv.indexOf(name);
  return i > 0 ? Number(process.argv[i + 1]) : fallback;
};
const RUNS = arg("--runs", 100_000);
const PAIRS = arg("--pairs", 500);
const PLATFORMS = Math.max(1, Math.round(PAIRS / 10));
const LATENCY_MS = 20;
const WARM_LOADS = 5;
const COLD_LOADS = 3;
const SUITES = ["crud", "cursor", "event", "transaction", "query", "sql"];
const FAR_FUTURE_MS = 9_999_999_999_999;
// --branchless: runs that name no branch (a CI post without one), which make the matrix look
// further back in every pair for a default branch.
const BRANCH = process.argv.includes("--branchless") ? {} : { branch: "main" };

/** Run `i`: its pair, key and body (36 tests, one failing now and then), a minute after run i - 1,
 * on `main` as a CI run's post says. */
function sample(i, prefix) {
  const pair = i % PAIRS;
  const platform = `platform-${String(pair % PLATFORMS).padStart(2, "0")}`;
  const runtime = `runtime-${Math.floor(pair / PLATFORMS)}`;
  const at = Date.now() - (RUNS - i) * 60_000;
  const tests = [];
  for (const suite of SUITES) {
    for (let t = 0; t < 6; t++) {
      tests.push({ name: `${suite} test ${t}`, suite, status: (i + t) % 97 === 0 ? "failed" : "passed", duration: 1 + ((i * 7 + t) % 13) });
    }
  }
  const count = (s) => tests.filter((t) => t.status === s).length;
  const body = {
    platform, browser: runtime, version: "0.1.0",
    ci: { commit: (0x1000000 + Math.floor(i / PAIRS)).toString(16).padStart(12, "0"), ...BRANCH },
    results: { tool: { name: "scale" }, summary: { tests: tests.length, passed: count("passed"), failed: count("failed"),
      skipped: 0, pending: 0, other: 0, start: at, stop: at + 1000 }, tests },
  };
  const run = `${platform}/${runtime}/${String(FAR_FUTURE_MS - at).padStart(13, "0")}-${i.toString(16).padStart(16, "0")}/`;
  return { key: run + digests.fileSegment(i.toString(16).padStart(16, "0"), body, Buffer.byteLength(prefix + run)), body };
}

/** Writes the N runs through the library as the app does (its metadata headers included),
 * 1,000 to a flush, then a checkpoint of them (what the collector writes every ten minutes):
 * its report, and how long it took. */
async function seed(options) {
  const db = new Storage("scale-seed", { stores: [{ name: "results", Sync: { format: "objstore", immutable: true,
    Options: { ...options, concurrency: 32, changeLog: true, checkpoints: true, metadata: ["platform", "browser", "version"] } } }] },
  { mechanism: "memory" });
  try {
    for (let i = 0; i < RUNS; i += 1000) {
      const batch = Array.from({ length: Math.min(1000, RUNS - i) }, (_, j) => sample(i + j, options.prefix));
      await db.put("results", batch.map((s) => s.body), batch.map((s) => s.key));
      const flushed = await db.flush();
      if (flushed.pending) throw new Error(`seeding: ${JSON.stringify(flushed).slice(0, 300)}`);
    }
    // As the collector writes them, every ten minutes: no write in the change log's minute
    // before it (a checkpoint right after the burst of writes hands a cold reader that minute's
    // writes too).
    await new Promise((resolve) => setTimeout(resolve, 61_000));
    const t = performance.now();
    const written = await db.checkpoint("results");
    return { ...written, ms: Math.round(performance.now() - t) };
  } finally {
    await db.close();
  }
}

/**
 * The floor under a cold matrix: the same listing of every name (the app's key layout, so one
 * listing per platform side by side) with nothing written to a cache, through the Node package
 * (a store that keeps no descriptions). Returns its time in ms and its requests.
 */
async function listingOnly(options) {
  const db = new Storage(`scale-list-${Date.now()}`, { stores: [{ name: "results", Sync: { format: "objstore",
    prefetch: "meta", immutable: true, Options: { ...options, keyLayout: "{platform}/{browser}/{run}/{file}" } } }] },
  { mechanism: "memory" });
  try {
    const t = performance.now();
    await db.count("results");
    return { ms: Math.round(performance.now() - t), requests: db.syncStats().total };
  } finally {
    await db.close();
  }
}

/** What a file:// bucket holds on disk, in bytes: the run bodies, the change log, the
 * checkpoints and the library's own files (`.objstore`), as `du` counts them (blocks). */
function bucketBytes(dir) {
  const du = (path) => existsSync(path) ? Number(execFileSync("du", ["-sb", "--apparent-size", path]).toString().split("\t")[0]) : 0;
  const blocks = (path) => existsSync(path) ? Number(execFileSync("du", ["-sB1", path]).toString().split("\t")[0]) : 0;
  const whole = blocks(dir);
  const log = blocks(join(dir, ".objstore-changes"));
  const checkpoints = blocks(join(dir, ".objstore-checkpoints"));
  const library = blocks(join(dir, ".objstore"));
  return { on_disk: whole, change_log: log, checkpoints, library_files: library,
    bodies_on_disk: whole - log - checkpoints - library, vs_bodies: Number((whole / (whole - log - checkpoints - library)).toFixed(2)), bodies_apparent: du(dir) - du(join(dir, ".objstore-changes")) - du(join(dir, ".objstore-checkpoints")) - du(join(dir, ".objstore")) };
}

/** A TCP relay to `target` (host:port) that holds every chunk a client sends `ms` before passing it on. */
async function relay(target, ms) {
  const [host, port] = target.split(":");
  const server = net.createServer((client) => {
    const upstream = net.connect(Number(port), host);
    client.on("data", (chunk) => setTimeout(() => upstream.write(chunk), ms));
    upstream.pipe(client);
    const end = () => { client.destroy(); upstream.destroy(); };
    client.on("error", end).on("close", end);
    upstream.on("error", end).on("close", end);
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { endpoint: `http://127.0.0.1:${server.address().port}`, close: () => server.close() };
}

/** The app over one bucket, cold then warm: the figures of `page.scale` for it. The cold load
 * is the median of COLD_LOADS, each by an app of its own over an empty cache (one cold load
 * on this shared machine varied by a third between runs); the last app goes on warm. */
async function measure(browser, dir, env) {
  const colds = [];
  for (let i = 1; i < COLD_LOADS; i++) {
    const app = await startApp(dir, ["--cache", join(work.dir, `cold-${Date.now()}.sqlite3`)], env);
    try {
      colds.push((await loads(browser, app.url, 1))[0]);
    } finally {
      await app.stop();
    }
  }
  const app = await startApp(dir, ["--cache", join(work.dir, `cold-${Date.now()}.sqlite3`)], env);
  try {
    const [last, ...warm] = await loads(browser, app.url, WARM_LOADS + 1);
    colds.push(last);
    const cold = [...colds].sort((a, b) => a.ms - b.ms)[Math.floor(colds.length / 2)];
    for (const c of colds) if (c.rows !== Math.min(50, PAIRS)) throw new Error(`the matrix shows ${c.rows} rows`);
    const history = async () => {
      const q = new URLSearchParams({ platform: "platform-00", browser: "runtime-0", suite: "crud", name: "crud test 0" });
      const view = await (await fetch(`${app.url}api/test?${q}`)).json();
      if (!view.strip) throw new Error(`no history: ${JSON.stringify(view).slice(0, 200)}`);
      return { requests: view.cost.requests, by_kind: view.cost.byKind };
    };
    const historyCold = await history();
    const historyWarm = await history();
    const kind = (k) => Number(cold.kinds.match(new RegExp(`(\\d+) ${k}`))?.[1] ?? 0);
    return {
      cold: { ms: Math.round(cold.ms), each_ms: colds.map((c) => Math.round(c.ms)), requests: cold.requests, lists: kind("LIST"), gets: kind("GET"),
        bytes: cold.bytesIn, by_kind: cold.kinds, server_ms: cold.buildMs, bucket_ms: cold.bucketMs,
        local_ms: Math.round(cold.buildMs - cold.bucketMs), request_target: 6 },
      warm: { median_ms: Math.round(median(warm.map((w) => w.ms))), requests: warm.map((w) => w.requests) },
      history: { cold: historyCold, warm: historyWarm },
      js_heap_mb: cold.heapMb,
    };
  } finally {
    await app.stop();
  }
}

/** The options of the Garage bucket `g` (garage()'s answer) under `prefix`. */
function garageOptions(g, prefix) {
  return { bucket: g.GARAGE_BUCKET, endpoint: g.GARAGE_ENDPOINT, prefix, accessKeyId: g.GARAGE_ACCESS_KEY_ID,
    secretAccessKey: g.GARAGE_SECRET_ACCESS_KEY, region: g.GARAGE_REGION };
}

function garage() {
  execFileSync(join(root, "tests/servers/garage"), { stdio: ["ignore", "ignore", "inherit"] });
  const env = Object.fromEntries(readFileSync(join(root, "target/servers/garage.env"), "utf8").split("\n")
    .map((l) => l.replace(/^export /, "").split("=")).filter((kv) => kv.length === 2));
  return env;
}

/** seed() in a process of its own (`--seed OPTIONS`), so that the measuring process keeps a
 * small heap: seeding 100,000 runs in it left a 1.2 GB heap, whose collection took a core from
 * the page's server while it was timed (its cold build took 210-250 ms, 140-180 ms otherwise). */
async function seedApart(options) {
  const passed = ["--runs", String(RUNS), "--pairs", String(PAIRS), ...(BRANCH.branch ? [] : ["--branchless"])];
  const child = spawn(process.execPath, [fileURLToPath(import.meta.url), "--seed", JSON.stringify(options), ...passed],
    { stdio: ["ignore", "pipe", "inherit"] });
  let out = "";
  child.stdout.on("data", (chunk) => { out += chunk; });
  const code = await new Promise((resolve) => child.on("close", resolve));
  if (code !== 0) throw new Error(`seeding ${options.endpoint} exited with ${code}`);
  return JSON.parse(out.trim().split("\n").pop());
}

const seedArg = process.argv.indexOf("--seed");
if (seedArg > 0) {
  console.log(JSON.stringify(await seed(JSON.parse(process.argv[seedArg + 1]))));
  process.exit(0);
}

// --seed-only DIR [PREFIX]: writes the runs into the file:// bucket DIR/bucket (and, given a
// PREFIX, into Garage under it) and stops: what --reuse DIR PREFIX reads (for profiling). A
// bucket already in DIR is kept.
const seedOnly = process.argv.indexOf("--seed-only");
if (seedOnly > 0) {
  const [dir, prefix] = process.argv.slice(seedOnly + 1, seedOnly + 3);
  if (!existsSync(join(dir, "bucket"))) await seed({ bucket: "results", endpoint: `file://${join(dir, "bucket")}`, prefix: "" });
  if (prefix && !prefix.startsWith("--")) await seed(garageOptions(garage(), prefix));
  process.exit(0);
}

const browser = await launch();
const work = scratch();
const empty = scratch();
const apps = [];
let closeRelay = () => {};
try {
  const emptyApp = await startApp(empty.dir);
  apps.push(emptyApp);
  const baseline = await loads(browser, emptyApp.url, WARM_LOADS + 1);
  const baselineMs = median(baseline.slice(1).map((b) => b.ms));

  // --file-only: the file:// bucket alone (a million runs: Garage is not seeded).
  const fileOnly = process.argv.includes("--file-only");
  // --reuse DIR PREFIX: the runs a --seed-only run (or an earlier run) left in DIR and under
  // PREFIX in Garage are read again, unseeded (for measuring a change quickly).
  const reuse = process.argv.indexOf("--reuse");
  const [reuseDir, reusePrefix] = reuse > 0 ? process.argv.slice(reuse + 1, reuse + 3) : [];
  const prefix = reusePrefix || `scale-${process.pid}-${Date.now()}/`;
  const bucketDir = reuseDir || work.dir;
  let t = Date.now();
  const checkpoints = {};
  if (!reuseDir) checkpoints.file = await seedApart({ bucket: "results", endpoint: `file://${join(work.dir, "bucket")}`, prefix: "" });
  const seededFileMs = Date.now() - t;
  // The disk settles first: 900 MB of runs still being written back would slow the cold
  // reader's own writes (its local copy's commits), timed as its work.
  execFileSync("sync");
  console.log(`scale: seeded ${RUNS} runs over ${PAIRS} pairs into a file:// bucket in ${(seededFileMs / 1000).toFixed(1)} s`);
  // Measured before Garage is started or seeded: a Garage settling writes (this run's, or an
  // earlier run's that it still works through) takes this machine's two cores from the page's
  // server (it doubled the cold matrix here).
  const file = await measure(browser, bucketDir, {});
  file.cold.listing_only = await listingOnly({ bucket: "results", endpoint: `file://${join(bucketDir, "bucket")}`, prefix: "" });
  file.bucket_bytes = bucketBytes(join(bucketDir, "bucket", "results"));
  const g = fileOnly ? null : garage();
  t = Date.now();
  if (!reusePrefix && g) checkpoints.garage = await seedApart(garageOptions(g, prefix));
  execFileSync("sync");
  const seededGarageMs = Date.now() - t;
  if (g) console.log(`scale: seeded them into Garage in ${(seededGarageMs / 1000).toFixed(1)} s`);
  let far = null;
  if (g) {
    const relayed = await relay(g.GARAGE_ENDPOINT.replace(/^http:\/\//, ""), LATENCY_MS);
    closeRelay = relayed.close;
    far = await measure(browser, bucketDir, { OBJSTORE_RESULTS: relayed.endpoint, OBJSTORE_RESULTS_BUCKET: g.GARAGE_BUCKET,
      OBJSTORE_RESULTS_PREFIX: prefix, AWS_ACCESS_KEY_ID: g.GARAGE_ACCESS_KEY_ID,
      AWS_SECRET_ACCESS_KEY: g.GARAGE_SECRET_ACCESS_KEY, AWS_REGION: g.GARAGE_REGION });
    far.cold.listing_only = await listingOnly({ ...garageOptions(g, prefix), endpoint: relayed.endpoint });
  }

  const figures = {
    runs: RUNS, pairs: PAIRS, platforms: PLATFORMS, seeded_ms: { file: seededFileMs, garage: seededGarageMs }, checkpoints,
    empty_bucket_warm_median_ms: Math.round(baselineMs),
    file: { ...file, warm_vs_empty_bucket: Number((file.warm.median_ms / baselineMs).toFixed(2)) },
    ...(far ? { garage_20ms: { ...far, latency_ms: LATENCY_MS, warm_vs_empty_bucket: Number((far.warm.median_ms / baselineMs).toFixed(2)) } } : {}),
    targets: { cold_requests: 6, cold_ms_at_20ms: 500, cold_ms_file: RUNS >= 1_000_000 ? 1000 : 300, warm_ms: 100,
      history_cold: "1 LIST + its shards' GETs + 50 GET", history_warm: 0 },
  };
  for (const [name, f] of [["file://", file], [`Garage, ${LATENCY_MS} ms away`, far]]) {
    if (!f) continue;
    console.log(`scale: ${RUNS} runs over ${PAIRS} pairs, ${name}`);
    console.log(`  cold matrix: ${f.cold.ms} ms (median of ${f.cold.each_ms.join(", ")}), ${f.cold.requests} requests (${f.cold.by_kind}), ${f.cold.bytes} bytes (target ≤ ${f.cold.request_target} requests)`);
    console.log(`    the server's build ${f.cold.server_ms} ms: ${f.cold.bucket_ms} ms waiting on the bucket, ${f.cold.local_ms} ms local work`);
    console.log(`  the same listing, nothing cached: ${f.cold.listing_only.ms} ms, ${f.cold.listing_only.requests} requests (the cold matrix is ×${(f.cold.ms / f.cold.listing_only.ms).toFixed(2)} of it)`);
    console.log(`  warm matrix: median ${f.warm.median_ms} ms (requests ${f.warm.requests.join(", ")}); the empty bucket's ${Math.round(baselineMs)} ms`);
    console.log(`  one test's history: cold ${f.history.cold.requests} requests ${JSON.stringify(f.history.cold.by_kind)}, warm ${f.history.warm.requests}`);
    console.log(`  the page's JS heap: ${f.js_heap_mb} MB`);
  }
  console.log(`  checkpoints written: ${JSON.stringify(checkpoints)}`);
  console.log(`  the file:// bucket: ${JSON.stringify(file.bucket_bytes)}`);
  const out = join(root, "target/bench/app.json");
  mkdirSync(join(root, "target/bench"), { recursive: true });
  const all = existsSync(out) ? JSON.parse(readFileSync(out, "utf8")) : {};
  const key = (RUNS === 100_000 ? "scale" : `scale_${RUNS}`) + (BRANCH.branch ? "" : "_branchless");
  all.page = { ...(all.page || {}), [key]: figures };
  writeFileSync(out, JSON.stringify(all, null, 2) + "\n");
  console.log(`  written to ${out}`);
} finally {
  closeRelay();
  for (const app of apps) await app.stop();
  await browser.close();
  work.remove();
  empty.remove();
}
