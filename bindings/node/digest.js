'use strict';
// A report file's digest, carried in its object name so that the results app draws its matrix
// from a listing alone (S3 listings carry no user metadata). The same format as the app's
// `digest.rs` (the app README's "The result format"): `<file id>.<digest>`, the digest's fields
// joined by `.`: `2.<version>.<commit>.<branch>.<start>.<labels>.<suite>...`, each suite
// `name-passed-failed-skipped-failed ids-skipped ids-retried ids`.

/** The longest object name a bucket takes (with its prefix), and name segment a file system takes. */
const MAX_KEY = 1024;
const MAX_SEGMENT = 255;
const COMMIT_CHARS = 12;
/** A branch is carried by its first 32 bytes, cut at a character's boundary. */
const BRANCH_BYTES = 32;

/** FNV-1a (32 bits) of `suite \0 name \0 occurrence`. @param {string} suite @param {string} name @param {number} occurrence */
function testId(suite, name, occurrence) {
  let h = 0x811c9dc5;
  for (const b of Buffer.from(`${suite}\0${name}\0${occurrence}`)) h = Math.imul(h ^ b, 0x01000193) >>> 0;
  return h;
}

/** ASCII letters and digits as they are, any other byte `_XX`. @param {string} text */
function escape(text) {
  let out = '';
  for (const b of Buffer.from(text)) {
    const c = String.fromCharCode(b);
    out += /^[A-Za-z0-9]$/.test(c) ? c : `_${b.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}

/** Texts, booleans and whole numbers within ±2^53 (which every language writes alike). @param {unknown} value @returns {string | undefined} */
function labelText(value) {
  if (typeof value === 'string') return value;
  if (typeof value === 'boolean') return String(value);
  if (typeof value === 'number' && Number.isSafeInteger(value)) return String(value);
  return undefined;
}

/** Byte order, as the app sorts. @param {string} a @param {string} b */
const byBytes = (a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b));

/**
 * The digest of a report in the result format.
 * @param {{platform?: string, browser?: string, version: string, ci?: {commit?: string, branch?: string, rerun?: boolean}, results: {summary: {start?: number}, environment?: Record<string, unknown>,
 *   tests: {name: string, suite: string, status: string, flaky?: boolean}[]}}} report
 */
function digest(report) {
  const { results } = report;
  /** @type {Map<string, number>} */
  const seen = new Map();
  /** @type {Map<string, {p: number, f: number, s: number, fi: string[], si: string[], ri: string[]}>} */
  const suites = new Map();
  for (const t of results.tests) {
    const k = JSON.stringify([t.suite, t.name]);
    const n = (seen.get(k) || 0) + 1;
    seen.set(k, n);
    const id = testId(t.suite, t.name, n).toString(16).padStart(8, '0');
    let s = suites.get(t.suite);
    if (!s) suites.set(t.suite, (s = { p: 0, f: 0, s: 0, fi: [], si: [], ri: [] }));
    if (t.status === 'passed') {
      s.p++;
      if (t.flaky) s.ri.push(id);
    } else if (t.status === 'failed') {
      s.f++;
      s.fi.push(id);
    } else {
      s.s++;
      s.si.push(id);
    }
  }
  const labels = [];
  // Labels that repeat the run's own platform, runtime or version say nothing the name does not.
  /** @type {Record<string, string | undefined>} */
  const own = { osPlatform: report.platform, runtime: report.browser, version: report.version };
  for (const key of Object.keys(results.environment || {}).sort(byBytes)) {
    const value = (results.environment || {})[key];
    if (Object.hasOwn(own, key) && value === own[key]) continue;
    const text = labelText(value);
    if (text !== undefined) labels.push(escape(key), escape(text));
  }
  const commit = ((report.ci && report.ci.commit) || '').slice(0, COMMIT_CHARS);
  const fields = ['2', escape(report.version), escape(commit), escape(branchKey((report.ci && report.ci.branch) || '')),
    String(results.summary.start || 0), labels.join('-')];
  for (const name of [...suites.keys()].sort(byBytes)) {
    const s = /** @type {NonNullable<ReturnType<typeof suites.get>>} */ (suites.get(name));
    fields.push([escape(name), s.p, s.f, s.s, s.fi.join(''), s.si.join(''), s.ri.join('')].join('-'));
  }
  return fields.join('.');
}

/** The part of a branch's name a digest carries. @param {string} branch */
function branchKey(branch) {
  let key = '';
  for (const c of branch) {
    if (Buffer.byteLength(key + c) > BRANCH_BYTES) break;
    key += c;
  }
  return key;
}

/**
 * `<file id>.<digest>`, or the id alone where the name would be too long (`fixed`: the bytes of
 * the name besides this segment, its prefix included).
 * @param {string} fileId @param {Parameters<typeof digest>[0]} report @param {number} fixed
 */
function fileSegment(fileId, report, fixed) {
  // A rerun's tests are later attempts of its run's: only the bodies can fold them.
  if (report.ci && report.ci.rerun) return fileId;
  const segment = `${fileId}.${digest(report)}`;
  return segment.length <= MAX_SEGMENT && fixed + segment.length <= MAX_KEY ? segment : fileId;
}

module.exports = { digest, fileSegment, testId };
