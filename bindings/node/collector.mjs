// Publishing through a results collector (`objstore-results serve`) instead of the bucket: a CI
// job then needs no bucket credentials, only OBJSTORE_COLLECTOR (its address) and
// OBJSTORE_COLLECTOR_TOKEN. As `objstore-results post --collector` does it: the run is posted to
// `<collector>/results` with an Idempotency-Key, sent again after a failure the collector may
// not have stored, and stored once however many tries it took.
import crypto from 'node:crypto';

// The waits before each new try of a post the collector failed (a 5xx, or no answer): four
// tries in all, over about seven seconds, as `post` makes them.
const RETRY_WAITS_MS = [500, 2000, 5000];

/** The collector's root (`http://host:port`): a URL naming its `/results` names it too. @param {string} url */
export function rootOf(url) {
  return url.replace(/\/+$/, '').replace(/\/results$/, '');
}

/**
 * One request with the token, its status and JSON answer (null when it sent none).
 * @param {string} url @param {RequestInit} init @param {NodeJS.ProcessEnv} env
 */
async function request(url, init, env) {
  /** @type {Record<string, string>} */
  const headers = { ...(/** @type {Record<string, string>} */ (init.headers ?? {})) };
  if (env.OBJSTORE_COLLECTOR_TOKEN) headers.authorization = `Bearer ${env.OBJSTORE_COLLECTOR_TOKEN}`;
  const answer = await fetch(url, { ...init, headers, signal: AbortSignal.timeout(60_000) });
  const text = await answer.text();
  let body = null;
  try {
    body = JSON.parse(text);
  } catch {
    // no JSON: said below as "no error message"
  }
  return { status: answer.status, body };
}

/** @param {string} url @param {number} status @param {any} body */
function refusal(url, status, body) {
  const hint = status === 401 || status === 403 ? ' (OBJSTORE_COLLECTOR_TOKEN is sent as the bearer token)' : '';
  return `the collector at ${url} answered ${status}: ${body?.error ?? 'no error message'}${hint}`;
}

/**
 * Posts `run` (the results app's stored format); the key the collector stored it under.
 * @param {string} collector @param {object} run @param {NodeJS.ProcessEnv} env
 * @returns {Promise<string>}
 */
export async function postRun(collector, run, env) {
  const url = `${rootOf(collector)}/results`;
  const init = { method: 'POST', body: JSON.stringify(run), headers: { 'content-type': 'application/json', 'idempotency-key': crypto.randomUUID() } };
  for (let attempt = 0; ; attempt++) {
    let why;
    /** @type {{status: number, body: any} | undefined} */
    let answer;
    try {
      answer = await request(url, init, env);
    } catch (error) {
      why = `posting to ${url}: ${error instanceof Error ? error.message : error}`;
    }
    if (answer) {
      if (answer.status === 201 && typeof answer.body?.key === 'string') return answer.body.key;
      why = refusal(url, answer.status, answer.body);
      if (answer.status < 500) throw new Error(why);
    }
    if (attempt === RETRY_WAITS_MS.length) throw new Error(why);
    await new Promise((resolve) => setTimeout(resolve, RETRY_WAITS_MS[attempt]));
  }
}

/**
 * The quarantine's entries, as the collector's `/api/quarantine` view gives them.
 * @param {string} collector @param {NodeJS.ProcessEnv} env
 * @returns {Promise<{suite: string, name: string, pairs: string, reason?: string, until?: string}[]>}
 */
export async function readQuarantine(collector, env) {
  const url = `${rootOf(collector)}/api/quarantine`;
  const { status, body } = await request(url, { method: 'GET' }, env);
  if (status !== 200) throw new Error(refusal(url, status, body));
  if (!Array.isArray(body?.entries)) throw new Error(`the collector at ${url} sent no quarantine`);
  return body.entries.filter((/** @type {unknown} */ e) => typeof e === 'object' && e !== null);
}

/**
 * Sends the repository's CODEOWNERS to the collector, which keeps it in its bucket when it
 * changed (a token of every pair needed); whether it changed.
 * @param {string} collector @param {string} text @param {string} source @param {NodeJS.ProcessEnv} env
 * @returns {Promise<boolean>}
 */
export async function keepCodeowners(collector, text, source, env) {
  const url = `${rootOf(collector)}/api/codeowners`;
  const { status, body } = await request(url, { method: 'POST', body: JSON.stringify({ text, source }), headers: { 'content-type': 'application/json' } }, env);
  if (status !== 200) throw new Error(refusal(url, status, body));
  return body?.changed === true;
}
