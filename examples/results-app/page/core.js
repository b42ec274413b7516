// The results page: every view is a URL (?view=...), rendered from the server's JSON views.
// Everything from the bucket is untrusted: it reaches the page only as text (textContent and
// attribute values through the DOM), never as markup.

const main = document.getElementById("view");
/** The view's cost line, at the page's foot. */
export const costLine = document.getElementById("cost");

// ----- DOM helpers --------------------------------------------------------------------------

/** An element with attributes (set through the DOM, never parsed) and children (text or nodes). */
export function h(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (name === "class") node.className = value;
    else if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
    else node.setAttribute(name, value === true ? "" : String(value));
  }
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

/** A link to another view of this page, followed without a reload. */
export function link(params, ...children) {
  const given = Object.entries(params).filter(([, v]) => v !== undefined && v !== null && v !== "");
  return h("a", { href: "/?" + new URLSearchParams(given).toString(), "data-nav": true }, ...children);
}

/** Whether the view being built follows a navigation (its heading then takes the focus). */
let navigated = false;

/** Shows a view: its heading names the document, and after a navigation takes the focus, so
 * that a screen reader says where the reader went. */
export function show(...nodes) {
  main.replaceChildren(...nodes.flat(Infinity).filter((n) => n !== null && n !== undefined && n !== false));
  const heading = main.querySelector("h2");
  document.title = `${heading ? heading.textContent : "Error"} · Test results`;
  if (navigated && heading) {
    heading.tabIndex = -1;
    heading.focus();
  }
  navigated = false;
  // Benchmarks time any view by it (the matrix and the tree mark themselves as well).
  performance.mark("view-shown");
}

// ----- formatting ---------------------------------------------------------------------------

export function age(ms) {
  if (typeof ms !== "number") return "unknown age";
  const s = Math.round((Date.now() - ms) / 1000);
  if (s < -60) return "in the future (a clock or a name is wrong)";
  if (s < 60) return `${Math.max(0, s)} s ago`;
  if (s < 3600) return `${Math.floor(s / 60)} min ago`;
  if (s < 86400) return `${Math.floor(s / 3600)} h ago`;
  return `${Math.floor(s / 86400)} d ago`;
}

export function when(ms) {
  return h("time", { datetime: typeof ms === "number" ? new Date(ms).toISOString() : null,
    title: typeof ms === "number" ? new Date(ms).toISOString() : null }, age(ms));
}

/** pass, fail or skip: the class of a set of counts (with its text beside it, never alone). */
export function verdict(counts) {
  if (!counts) return "none";
  if (counts.failed > 0) return "fail";
  if (counts.passed > 0) return "pass";
  return "skip";
}

// "3 passed, 1 failed, 2 skipped": the separators are text too (a copy, a screen reader), and a
// matrix cell, which puts each count on its own line, hides them.
export function counts(c) {
  const parts = [`${c.passed} passed`, `${c.failed} failed`, c.skipped ? `${c.skipped} skipped` : null].filter(Boolean);
  return parts.flatMap((text, i) => (i === 0 ? [] : [h("span", { class: "sep" }, ", ")]).concat(h("span", {}, text)));
}

export function pair(row) {
  return `${row.platform} / ${row.browser}`;
}

/** Where a run came from, in a few words: its commit (short) and branch. */
export function source(run) {
  const ci = run.ci || {};
  return [ci.commit ? ci.commit.slice(0, 10) : null, ci.branch].filter(Boolean).join(" on ") || "—";
}

/** A run's source, its commit linked to the commit view. */
export function sourceLink(run) {
  const ci = run.ci || {};
  return ci.commit ? link({ view: "commit", commit: ci.commit }, source(run)) : source(run);
}

/** The classes' rules, as a legend beside the view that shows them. */
export function legend(rules) {
  return h("dl", { class: "legend", "aria-label": "classes and their rules" },
    Object.entries(rules || {}).map(([name, rule]) => [h("dt", {}, h("span", { class: "badge" }, name)), h("dd", {}, rule)]));
}

/** A test's classes as badges (the rule as their title), each with the runs that show it: a
 * pair named once, its further runs as "earlier". */
export function classBadges(classes, rules) {
  return (classes || []).map((c) => {
    const named = new Set();
    return h("span", { class: "class", "data-class": c.class },
      h("span", { class: "badge", title: (rules || {})[c.class] }, c.class),
      (c.evidence || []).map((key) => {
        const pairName = key.split("/").slice(0, 2).join("/");
        const text = named.has(pairName) ? `${pairName} (earlier)` : pairName;
        named.add(pairName);
        return [" ", link({ view: "run", key }, text)];
      }));
  });
}

/** A link to a test's own page: on `pairName` (`platform/runtime`) if given, else every pair. */
export function testLink(suite, name, pairName, ...children) {
  const [platform, ...browser] = (pairName || "").split("/");
  const onPair = pairName ? { platform, browser: browser.join("/") } : {};
  return link({ view: "test", ...onPair, suite, name }, ...(children.length ? children : [`${suite} › ${name}`]));
}

/** A duration in milliseconds as people read it: whole from 100 ms, else three digits. */
export function ms(duration) {
  const n = Number(duration) || 0;
  return String(n >= 100 ? Math.round(n) : Number(n.toPrecision(3)));
}

/** A link out to the run's CI page; only http(s) (the server checks it too). */
export function ciLink(ci) {
  return ci && /^https?:\/\//i.test(ci.url || "") ? h("a", { href: ci.url, rel: "noreferrer noopener", class: "ci" }, "CI run") : null;
}

/** What the view's requests cost at S3 Standard's, Cloudflare R2's and S3 Express One Zone's prices. */
export function prices(cost) {
  const usd = (x) => `$${Number(x).toFixed(7)}`;
  const by = cost.usdBy || {};
  return `${usd(cost.usd)} on S3 Standard, ${usd(by.r2)} on Cloudflare R2, ${usd(by.s3ExpressOneZone)} on S3 Express One Zone`;
}

export function showCost(cost) {
  if (!cost) return;
  const kinds = Object.entries(cost.byKind || {}).map(([k, n]) => `${n} ${k}`).join(", ");
  costLine.textContent = `This view cost ${cost.requests} bucket request${cost.requests === 1 ? "" : "s"}` +
    (kinds ? ` (${kinds})` : "") + `, ${cost.bytesIn} bytes in, about ` + prices(cost) + "." +
    ` The server built it in ${cost.ms} ms, ${cost.bucketMs} of them waiting on the bucket.` +
    (cost.shared ? " Another view was built at the same time: these counts may include some of its requests." : "");
  costLine.dataset.requests = String(cost.requests);
  costLine.dataset.buildMs = String(cost.ms);
  costLine.dataset.bucketMs = String(cost.bucketMs);
  costLine.dataset.bytesIn = String(cost.bytesIn);
}

// ----- data ---------------------------------------------------------------------------------

export async function api(path, params) {
  const asked = navigations;
  const response = await fetch(`/api/${path}?` + new URLSearchParams(params || {}).toString(),
    { headers: { accept: "application/json" } });
  const body = await response.json().catch(() => ({ error: `the server answered ${response.status}` }));
  // A navigation since it was asked for (the body read too): the view that asked is not the one
  // to show (going back twice quickly must not end on the first page's slower answer).
  if (asked !== navigations) throw Object.assign(new Error("superseded by a later navigation"), { superseded: true });
  if (!response.ok) throw new Error(body.error || `the server answered ${response.status}`);
  showCost(body.cost);
  return body;
}

// ----- filters (state in the URL) -----------------------------------------------------------

export function filterBar(state, options, extra = []) {
  const controls = options.map(([name, label, values]) => {
    const select = h("select", { name, onchange: (e) => {
      // A filter changed: from the first page again.
      const next = { ...state, [name]: e.target.value };
      delete next.after;
      if (!e.target.value) delete next[name];
      navigate(next);
    } }, h("option", { value: "" }, "all"), values.map((v) => h("option", { value: v, selected: state[name] === v }, v)));
    return h("label", {}, label, select);
  });
  return h("form", { class: "filters", role: "search" }, extra, controls);
}

/** Whose newest runs the matrix shows: the default branch's (no parameter), one branch's, or
 * any branch's (`*`). */
export function branchPicker(state, data) {
  const names = (data.branches || []).filter((b) => b !== data.defaultBranch);
  const select = h("select", { name: "branch", onchange: (e) => {
    const next = { ...state, branch: e.target.value };
    delete next.after;
    if (!e.target.value) delete next.branch;
    navigate(next);
  } }, h("option", { value: "" }, data.defaultBranch ? `${data.defaultBranch} (default)` : "any (no default branch)"),
  names.map((b) => h("option", { value: b, selected: state.branch === b }, b)),
  data.defaultBranch ? h("option", { value: "*", selected: state.branch === "*" }, "any branch") : null);
  return h("label", {}, "branch", select);
}

/** The outcomes a filter offers. */
export const STATUSES = ["failed", "passed", "skipped"];

// ----- navigation ---------------------------------------------------------------------------

/** What builds the view the address names (the router's, set once at start). */
let renderView = () => Promise.resolve();
/** Navigations so far: an answer asked for before the latest is dropped (see `api`). */
let navigations = 0;

/** How many navigations there have been: a view that redraws itself after its own request
 * checks this did not change meanwhile. */
export function navigationCount() {
  return navigations;
}

export function onNavigation(render) {
  renderView = render;
}

/** Goes to `href` of this page without a reload; the new view's heading takes the focus. */
export function go(href) {
  history.pushState(null, "", href);
  navigated = true;
  navigations++;
  return renderView();
}

export function navigate(state) {
  return go("/?" + new URLSearchParams(state).toString());
}

/** Changes the address to `state` and builds its view in place: the focus stays where it was
 * (a tree's node opened), not on the heading. */
export function update(state) {
  history.pushState(null, "", "/?" + new URLSearchParams(state).toString());
  navigations++;
  return renderView();
}

/** The browser went back or forward: the view of the address it went to. */
export function wentBack() {
  navigated = true;
  navigations++;
  return renderView();
}

export function fail(error) {
  if (error && error.superseded) return;
  show(h("p", { class: "error", role: "alert" }, `This view could not be built: ${error.message}`));
}

/** `text` as one shell word: single-quoted, its own quotes closed and escaped. */
export function shellQuoted(text) {
  return `'${String(text).replaceAll("'", "'\\''")}'`;
}
