// A node:test reporter that publishes the run's results into a bucket through objstore-db, in
// the results app's layout: one object per report at `<platform>/<runtime>/<reverse
// timestamp>-<run id>/<file id>`, its body a CTRF report naming tests as the app names node's
// JUnit (the outermost describe block is the suite, the ones inside name the test; a test
// outside any block is in its file's suite, `crud.test.mjs` is `crud`) and where it came from
// (`ci`), its metadata headers platform,
// browser (the runtime) and version. In CI (or with OBJSTORE_RESULTS_RUN), the reports of one CI
// run, from any number of jobs and from `objstore-results post` too, are one run: the first
// writes the run's anchor `.runs/<run id>` create-only, the others read it.
//
//   OBJSTORE_RESULTS=file:///some/dir node --test --test-reporter=spec --test-reporter-destination=stdout \
//       --test-reporter=objstore-db/reporter --test-reporter-destination=stdout
//
// OBJSTORE_COLLECTOR (with OBJSTORE_COLLECTOR_TOKEN): post through a results collector instead,
// with no bucket settings at all (collector.mjs).
// OBJSTORE_RESULTS: the endpoint (file://<dir> or http(s)://host); OBJSTORE_RESULTS_BUCKET
// (default "results") and OBJSTORE_RESULTS_PREFIX; S3 credentials from AWS_ACCESS_KEY_ID,
// AWS_SECRET_ACCESS_KEY and AWS_REGION. The run is labelled as `objstore-results post` labels
// it: OBJSTORE_RESULTS_PLATFORM, _RUNTIME and _VERSION, else this machine's platform and node,
// and the version of the package.json where node runs (else "unversioned"). It prints one
// line: where the results went, or why not. The repository's CODEOWNERS (.github/, the top,
// docs/ or .gitlab/, looked for from where node runs up to the repository's top) is kept in the
// bucket beside the runs when it changed, so that the app names tests' owners
// (OBJSTORE_RESULTS_CODEOWNERS names another file, or `off`).
import fs from 'node:fs';
import crypto from 'node:crypto';
import os from 'node:os';
import path from 'node:path';

import api from './index.js';
import ci from './ci.js';
import * as collector from './collector.mjs';
import digests from './digest.js';

const { Storage } = api;

// Reverse timestamps count down from here, so the newest run sorts first within a pair.
const FAR_FUTURE_MS = 9_999_999_999_999;
// A run id the app takes: 1 to 64 of A-Z a-z 0-9 . _ + -, starting with a letter or digit.
const LABEL = /^[A-Za-z0-9][A-Za-z0-9._+-]{0,63}$/;

/** The OS and architecture, as `linux-x86_64`. */
export function platformName() {
  /** @type {Record<string, string>} */
  const names = { x64: 'x86_64', ia32: 'x86', arm64: 'arm64' };
  const arch = names[process.arch] || process.arch;
  return `${os.platform()}-${arch}`;
}

/** The runtime, as `node-20`. */
export function runtimeName() {
  return `node-${process.versions.node.split('.')[0]}`;
}

/**
 * The version of the project in `dir`, as its package.json gives it.
 * @param {string} dir
 * @returns {string | undefined}
 */
function projectVersion(dir) {
  try {
    const version = JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8')).version;
    return typeof version === 'string' && version !== '' ? version : undefined;
  } catch {
    return undefined;
  }
}

/**
 * What the run is published as; an error naming a label the app would refuse.
 * @param {NodeJS.ProcessEnv} env
 */
export function runLabels(env) {
  const labels = {
    platform: env.OBJSTORE_RESULTS_PLATFORM || platformName(),
    runtime: env.OBJSTORE_RESULTS_RUNTIME || runtimeName(),
    version: env.OBJSTORE_RESULTS_VERSION || projectVersion(process.cwd()) || 'unversioned',
  };
  for (const [name, value] of Object.entries(labels)) {
    if (!LABEL.test(value)) {
      throw new Error(`the ${name} ${JSON.stringify(value)} must be 1 to 64 of A-Z a-z 0-9 . _ + -, starting with a letter or digit`);
    }
  }
  // A rerun of tests the run already has (a failed file run again): its tests are their later
  // attempts, as `post --rerun` says.
  const rerun = !['', '0', undefined].includes(env.OBJSTORE_RESULTS_RERUN);
  if (rerun && !ci.detect(env).run) {
    throw new Error("OBJSTORE_RESULTS_RERUN publishes later attempts of a run's tests: name the run (OBJSTORE_RESULTS_RUN, or run in CI)");
  }
  return { ...labels, rerun };
}

/**
 * The suite of a test file: its name without `.test.mjs` (or `test_`, `.test`, `.spec`).
 * @param {string | undefined} file
 */
export function suiteOf(file) {
  const base = path.basename(file || 'unknown').replace(/\.(m|c)?[jt]s$/, '');
  return base.replace(/[._-](test|spec)$/, '').replace(/^test[._-]/, '');
}

/** Folders that hold tests, and steps that name no suite: the results app's words. */
const TEST_FOLDERS = new Set(['test', 'tests', 'spec', 'specs', '__tests__']);
const EXTENSIONS = new Set(['py', 'mjs', 'js', 'cjs', 'ts', 'rs', 'c', 'cc', 'cpp', 'cxx', 'h', 'hpp', 'exe', 'out']);

/**
 * The suite of a test's outermost describe block, as the results app names node's JUnit and TAP
 * suites (so that the reporter's tests and a post of node's own reports are one history): each
 * `.`- or `/`-separated step lower-cased without `test_` or `_test`, below a tests folder.
 * @param {string} title
 */
export function suiteOfBlock(title) {
  let steps = title.split(/[./\\]/).filter((s) => s && !EXTENSIONS.has(s.toLowerCase()) && !/^\d+$/.test(s));
  const below = steps.map((s) => TEST_FOLDERS.has(s.toLowerCase())).lastIndexOf(true);
  if (below >= 0 && below + 1 < steps.length) steps = steps.slice(below + 1);
  /** @type {string[]} */
  const words = [];
  for (const step of steps) {
    const word = step.toLowerCase().replace(/^test_/, '').replace(/_tests?$/, '');
    if (word && words[words.length - 1] !== word) words.push(word);
  }
  return words.join('/');
}

/** @typedef {{name: string, status: string, duration: number, suite: string, message?: string, trace?: string}} CtrfTest */

/**
 * The describe blocks (and tests with subtests) around tests, per file: node reports a block
 * after its tests, so each test waits for its blocks to be reported, innermost first.
 */
class Blocks {
  constructor() {
    /** @type {Map<string, {test: CtrfTest, level: number, path: string[]}[]>} */
    this.waiting = new Map();
  }

  /** A test at `level` (0: the file's top level), named once its blocks are known. */
  add(/** @type {CtrfTest} */ test, /** @type {string} */ file, /** @type {number} */ level) {
    if (level === 0) return;
    const list = this.waiting.get(file) ?? [];
    list.push({ test, level, path: [] });
    this.waiting.set(file, list);
  }

  /** A describe block at `level` ended: the tests just inside it are in it. */
  ended(/** @type {string} */ file, /** @type {number} */ level, /** @type {string} */ title) {
    const list = this.waiting.get(file) ?? [];
    for (const w of list) {
      if (w.level === level + 1) {
        w.path.unshift(title);
        w.level = level;
      }
    }
    if (level === 0) {
      this.name(list.filter((w) => w.level === 0));
      this.waiting.set(file, list.filter((w) => w.level !== 0));
    }
  }

  /** The tests whose blocks never all ended (a run cut short) are named by what is known. */
  finish() {
    for (const list of this.waiting.values()) this.name(list);
  }

  /** The outermost block is the suite; the blocks inside it name the test (`inner > test`). */
  name(/** @type {{test: CtrfTest, path: string[]}[]} */ list) {
    for (const { test, path: [outer, ...inner] } of list) {
      if (outer === undefined) continue;
      test.suite = suiteOfBlock(outer) || test.suite;
      test.name = [...inner, test.name].join(' > ');
    }
  }
}

/** The most text kept of a failure (the results app's cap): a quarter for the message. */
const TEXT_CAP = 8 * 1024;

/**
 * `text` cut to `room` characters, saying how much was cut.
 * @param {string} text
 * @param {number} room
 */
function cut(text, room) {
  if (text.length <= room) return text;
  const kept = text.slice(0, room - 40);
  return `${kept}… [cut: ${text.length - kept.length} more characters]`;
}

/**
 * The CTRF report of what `source` said.
 * @param {AsyncIterable<{type: string, data: any}>} source
 * @param {{platform: string, runtime: string, version: string, rerun: boolean}} labels
 */
async function collect(source, labels) {
  /** @type {CtrfTest[]} */
  const tests = [];
  const start = Date.now();
  // Failures that are not a test's own (a describe block's hook, a file that did not load): no
  // quarantine holds them. And tests that failed only because a subtest did: their subtests
  // speak for them.
  let otherFailures = 0;
  /** @type {Set<CtrfTest>} */
  const bySubtests = new Set();
  const blocks = new Blocks();
  for await (const { type, data } of source) {
    if (type !== 'test:pass' && type !== 'test:fail') continue;
    const failureType = data.details?.error?.failureType ?? data.details?.error?.cause?.failureType;
    if (data.details?.type === 'suite') {
      blocks.ended(data.file ?? '', data.nesting ?? 0, data.name);
      // A describe block: its tests speak for it, unless it failed by itself.
      if (type === 'test:fail' && failureType !== 'subtestsFailed') otherFailures++;
      continue;
    }
    const status = data.skip ? 'skipped' : data.todo ? 'pending' : type === 'test:pass' ? 'passed' : 'failed';
    /** @type {CtrfTest} */
    const test = { name: data.name, status, duration: Math.round(data.details?.duration_ms ?? 0), suite: suiteOf(data.file) };
    if (status === 'failed') {
      // The assertion's own error (node wraps it), its one-line reason and its stack.
      const error = data.details?.error?.cause ?? data.details?.error;
      test.message = cut(String(error?.message ?? error ?? ''), TEXT_CAP / 4);
      if (error?.stack) test.trace = cut(String(error.stack), (TEXT_CAP * 3) / 4);
    }
    if (status === 'failed' && failureType === 'subtestsFailed') bySubtests.add(test);
    blocks.add(test, data.file ?? '', data.nesting ?? 0);
    // A test with subtests is their block too, as node's JUnit and TAP nest them.
    blocks.ended(data.file ?? '', data.nesting ?? 0, data.name);
    tests.push(test);
  }
  blocks.finish();
  const count = (/** @type {string} */ status) => tests.filter((t) => t.status === status).length;
  /** @type {Record<string, string> & { rerun?: boolean }} */
  const origin = labels.rerun ? Object.assign({ rerun: true }, ci.detect(process.env)) : ci.detect(process.env);
  const { version } = labels;
  const report = {
    platform: labels.platform,
    browser: labels.runtime,
    version,
    ...(Object.keys(origin).length > 0 ? { ci: origin } : {}),
    results: {
      tool: { name: 'node:test', version: process.versions.node },
      summary: {
        tests: tests.length,
        passed: count('passed'),
        failed: count('failed'),
        skipped: count('skipped'),
        pending: count('pending'),
        other: 0,
        start,
        stop: Date.now(),
      },
      tests,
      environment: { osPlatform: platformName(), runtime: runtimeName(), version },
    },
  };
  return { report, otherFailures, bySubtests };
}

/**
 * Writes `report` as one object through the library; the key and the flush's outcome.
 * @param {Awaited<ReturnType<typeof collect>>['report']} report
 * @param {NodeJS.ProcessEnv} env
 */
async function publish(report, env) {
  /** @type {import('./index.js').SyncOptions['Options']} */
  const options = {
    ...bucketOptions(env),
    metadata: ['platform', 'browser', 'version'],
    // A marker per run, so that a viewer's warm refresh is one LIST.
    changeLog: true,
  };
  const hex = () => crypto.randomBytes(8).toString('hex');
  const db = new Storage('node-test-results', { stores: [{ name: 'results', Sync: { format: 'objstore', immutable: true, Options: options } }] }, { mechanism: 'memory' });
  try {
    const runKey = `${report.platform}/${report.browser}/${await runSegment(db, report.ci && report.ci.run)}/`;
    // The name carries the report's digest, so that the app's matrix needs no GET.
    const key = runKey + digests.fileSegment(hex(), report, Buffer.byteLength(options.prefix + runKey));
    await db.add('results', report, key);
    return { key, outcome: await db.flush() };
  } finally {
    await db.close();
  }
}

/**
 * The run's name segment: its anchor's, else a new one (anchored now when the run is named). Of
 * two jobs that anchor one run at once, the bucket keeps one anchor, and the other job's refused
 * anchor is discarded and the bucket's read.
 * @param {InstanceType<typeof Storage>} db
 * @param {string | undefined} run
 * @returns {Promise<string>}
 */
async function runSegment(db, run) {
  const reverse = String(FAR_FUTURE_MS - Date.now()).padStart(13, '0');
  if (!run) return `${reverse}-${crypto.randomBytes(8).toString('hex')}`;
  if (!LABEL.test(run)) throw new Error(`the run id ${JSON.stringify(run)} must be 1 to 64 of A-Z a-z 0-9 . _ + -`);
  const anchor = `.runs/${run}`;
  const anchored = async () => {
    const found = await db.get('results', anchor, { fresh: true });
    const segment = found && found.segment;
    if (found !== undefined && !(typeof segment === 'string' && segment === `${segment.slice(0, 13)}-${run}` && /^\d{13}$/.test(segment.slice(0, 13)))) {
      throw new Error(`the bucket's anchor of run ${JSON.stringify(run)} is not a run's`);
    }
    return segment;
  };
  const found = await anchored();
  if (found) return found;
  const mine = `${reverse}-${run}`;
  await db.add('results', { run, segment: mine }, anchor);
  await db.flush();
  if ((await db.syncStatus('results', anchor)) === 'synced') return mine;
  for (const write of await db.refusedWrites()) {
    if (write.key === anchor) await db.resolveRefused(write.sequence, 'discard');
  }
  const theirs = await anchored();
  if (!theirs) throw new Error(`the bucket did not take the anchor of run ${JSON.stringify(run)}`);
  return theirs;
}

/**
 * The bucket's settings, as the results app's `OBJSTORE_RESULTS*` and `AWS_*` give them.
 * @param {NodeJS.ProcessEnv} env
 */
function bucketOptions(env) {
  /** @type {{bucket: string, endpoint: string, prefix: string, [option: string]: string}} */
  const options = { bucket: env.OBJSTORE_RESULTS_BUCKET || 'results', endpoint: env.OBJSTORE_RESULTS || '', prefix: env.OBJSTORE_RESULTS_PREFIX || '' };
  if (env.AWS_ACCESS_KEY_ID) {
    Object.assign(options, { accessKeyId: env.AWS_ACCESS_KEY_ID, secretAccessKey: env.AWS_SECRET_ACCESS_KEY || '', region: env.AWS_REGION || 'us-east-1' });
  }
  return options;
}

/**
 * The entries of the bucket's quarantine (`.quarantine`, kept by `objstore-results
 * quarantine`): one GET; none when the bucket holds none.
 * @param {NodeJS.ProcessEnv} env
 * @returns {Promise<{suite: string, name: string, pairs: string, reason?: string, until?: string}[]>}
 */
async function readQuarantine(env) {
  const db = new Storage('node-quarantine', { stores: [{ name: 'quarantine', Sync: { format: 'objstore', Options: bucketOptions(env) } }] }, { mechanism: 'memory' });
  try {
    const found = await db.get('quarantine', '.quarantine', { fresh: true });
    if (found === undefined || found === null) return [];
    if (!Array.isArray(found.entries)) throw new Error("the bucket's .quarantine is not a quarantine");
    return found.entries.filter((/** @type {unknown} */ e) => typeof e === 'object' && e !== null);
  } finally {
    await db.close();
  }
}

// Where GitHub and GitLab look for a repository's CODEOWNERS, in their order.
const CODEOWNERS_PLACES = ['.github/CODEOWNERS', 'CODEOWNERS', 'docs/CODEOWNERS', '.gitlab/CODEOWNERS'];
// The largest CODEOWNERS sent (GitHub reads the first 3 MB; a collector takes 1 MB).
const CODEOWNERS_BYTES = 1024 * 1024;

/**
 * A CODEOWNERS file's text: UTF-8, at most CODEOWNERS_BYTES (else an error saying so).
 * @param {string} file
 */
function readCodeowners(file) {
  const bytes = fs.readFileSync(file);
  if (bytes.length > CODEOWNERS_BYTES) throw new Error(`${file} is over ${CODEOWNERS_BYTES} bytes`);
  return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
}

/**
 * The repository's CODEOWNERS ({source: its place in the repository, text}): looked for in `dir`
 * and each folder above it up to the repository's top (the one holding `.git`).
 * @param {string} dir
 * @returns {{source: string, text: string} | undefined}
 */
export function findCodeowners(dir) {
  for (let folder = path.resolve(dir); ; folder = path.dirname(folder)) {
    for (const place of CODEOWNERS_PLACES) {
      const file = path.join(folder, place);
      const stat = fs.statSync(file, { throwIfNoEntry: false });
      if (stat && stat.isFile() && stat.size <= CODEOWNERS_BYTES) return { source: place, text: readCodeowners(file) };
    }
    if (fs.existsSync(path.join(folder, '.git')) || path.dirname(folder) === folder) return undefined;
  }
}

/**
 * Keeps `text` as the bucket's `.codeowners` unless it already is (one GET); whether it wrote.
 * @param {NodeJS.ProcessEnv} env @param {string} text @param {string} source
 */
async function keepCodeowners(env, text, source) {
  const db = new Storage('node-codeowners', { stores: [{ name: 'quarantine', Sync: { format: 'objstore', Options: bucketOptions(env) } }] }, { mechanism: 'memory' });
  try {
    const stored = await db.get('quarantine', '.codeowners', { fresh: true });
    if (stored && stored.text === text) return false;
    await db.put('quarantine', { text, source, at: Date.now() }, '.codeowners');
    const outcome = await db.flush();
    if (outcome.pending) throw new Error(outcome.offline || outcome.blocked || 'the bucket did not take it');
    return true;
  } finally {
    await db.close();
  }
}

/**
 * The line to print after keeping the repository's CODEOWNERS, if any.
 * @param {NodeJS.ProcessEnv} env @param {string | undefined} through
 * @returns {Promise<string | undefined>}
 */
async function sendCodeowners(env, through) {
  const named = env.OBJSTORE_RESULTS_CODEOWNERS;
  if (named === 'off') return undefined;
  let found;
  try {
    found = named ? { source: named, text: readCodeowners(named) } : findCodeowners(process.cwd());
  } catch (error) {
    return `objstore-db: the CODEOWNERS was not kept: ${error instanceof Error ? error.message : error}\n`;
  }
  if (!found) return undefined;
  try {
    const changed = through ? await collector.keepCodeowners(through, found.text, found.source, env) : await keepCodeowners(env, found.text, found.source);
    return changed ? `objstore-db: CODEOWNERS kept from ${found.source}\n` : undefined;
  } catch (error) {
    return `objstore-db: the CODEOWNERS was not kept: ${error instanceof Error ? error.message : error}\n`;
  }
}

/**
 * Whether `pattern` (`*` for any run of characters) is `text`, in time linear in their lengths
 * whatever the stars (a pattern is written by anyone who may edit the bucket).
 * @param {string} pattern @param {string} text
 */
function glob(pattern, text) {
  let [p, t, starP, starT] = [0, 0, -1, 0];
  while (t < text.length) {
    if (p < pattern.length && pattern[p] === '*') [starP, starT, p] = [p, t, p + 1];
    else if (p < pattern.length && pattern[p] === text[t]) [p, t] = [p + 1, t + 1];
    else if (starP >= 0) [p, t, starT] = [starP + 1, starT + 1, starT + 1];
    else return false;
  }
  while (p < pattern.length && pattern[p] === '*') p++;
  return p === pattern.length;
}

/**
 * Marks the failures the quarantine holds for this pair today; how many failures are left (a
 * test that failed only because its subtests did is left to them).
 * @param {Awaited<ReturnType<typeof collect>>['report']} report
 * @param {Awaited<ReturnType<typeof readQuarantine>>} entries
 * @param {Set<CtrfTest>} bySubtests
 */
function applyQuarantine(report, entries, bySubtests) {
  const today = new Date().toISOString().slice(0, 10);
  let left = 0;
  for (const test of report.results.tests) {
    if (test.status !== 'failed' || bySubtests.has(test)) continue;
    const held = entries.some((e) => {
      const [platform = '', runtime = ''] = String(e.pairs || '*/*').split('/');
      return e.suite === test.suite && e.name === test.name && glob(platform, report.platform) && glob(runtime, report.browser) &&
        (e.until === undefined || e.until === null || today <= String(e.until));
    });
    if (held) /** @type {any} */ (test).quarantined = true;
    else left++;
  }
  return left;
}

/** @param {AsyncIterable<{type: string, data: any}>} source */
export default async function* objstoreReporter(source) {
  const env = process.env;
  let labels;
  try {
    labels = runLabels(env);
  } catch (error) {
    for await (const _ of source); // node waits for its reporters to read every event
    yield `objstore-db: the results were not published: ${error instanceof Error ? error.message : error}\n`;
    return;
  }
  const { report, otherFailures, bySubtests } = await collect(source, labels);
  // Through a collector when one is named (the job then needs no bucket settings), as `post` does.
  const through = env.OBJSTORE_COLLECTOR;
  if (!env.OBJSTORE_RESULTS && !through) {
    yield 'objstore-db: neither OBJSTORE_RESULTS nor OBJSTORE_COLLECTOR is set; the results were not published\n';
    return;
  }
  const failed = report.results.tests.filter((t) => t.status === 'failed').length;
  if (failed > 0) {
    try {
      const entries = through ? await collector.readQuarantine(through, env) : await readQuarantine(env);
      const left = applyQuarantine(report, entries, bySubtests);
      // Only a run whose every failure is a quarantined test's passes (not one whose hooks or
      // files failed too).
      if (left === 0 && otherFailures === 0) {
        // Every failure is a known one: published, marked, and the run passes.
        yield `objstore-db: ${failed} failure(s), every one quarantined: the run passes\n`;
        process.exitCode = 0;
      }
    } catch (error) {
      yield `objstore-db: the quarantine was not read: ${error instanceof Error ? error.message : error}\n`;
    }
  }
  try {
    if (through) {
      yield `objstore-db: results published to ${through} as ${await collector.postRun(through, report, env)}\n`;
    } else {
      const { key, outcome } = await publish(report, env);
      if (outcome.pending) {
        const why = outcome.offline || outcome.blocked || [...outcome.rejected, ...outcome.held].map((w) => w.message).join('; ') || 'the bucket did not take them';
        yield `objstore-db: the results were not published: ${why}\n`;
        return;
      }
      yield `objstore-db: results published to ${env.OBJSTORE_RESULTS} as ${key}\n`;
    }
    const said = await sendCodeowners(env, through);
    if (said) yield said;
  } catch (error) {
    yield `objstore-db: the results were not published: ${error instanceof Error ? error.message : error}\n`;
  }
}
