// The results page: every view is a URL (?view=...), rendered from the server's JSON views.
// Everything from the bucket is untrusted: it reaches the page only as text (textContent and
// attribute values through the DOM), never as markup.
"use strict";

const main = document.getElementById("view");
const costLine = document.getElementById("cost");

// ----- DOM helpers --------------------------------------------------------------------------

/** An element with attributes (set through the DOM, never parsed) and children (text or nodes). */
function h(tag, attrs, ...children) {
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
function link(params, ...children) {
  const given = Object.entries(params).filter(([, v]) => v !== undefined && v !== null && v !== "");
  return h("a", { href: "/?" + new URLSearchParams(given).toString(), "data-nav": true }, ...children);
}

/** Whether the view being built follows a navigation (its heading then takes the focus). */
let navigated = false;

/** Shows a view: its heading names the document, and after a navigation takes the focus, so
 * that a screen reader says where the reader went. */
function show(...nodes) {
  main.replaceChildren(...nodes.flat(Infinity).filter((n) => n !== null && n !== undefined && n !== false));
  const heading = main.querySelector("h2");
  document.title = `${heading ? heading.textContent : "Error"} · Test results`;
  if (navigated && heading) {
    heading.tabIndex = -1;
    heading.focus();
  }
  navigated = false;
}

// ----- formatting ---------------------------------------------------------------------------

function age(ms) {
  if (typeof ms !== "number") return "unknown age";
  const s = Math.round((Date.now() - ms) / 1000);
  if (s < -60) return "in the future (a clock or a name is wrong)";
  if (s < 60) return `${Math.max(0, s)} s ago`;
  if (s < 3600) return `${Math.floor(s / 60)} min ago`;
  if (s < 86400) return `${Math.floor(s / 3600)} h ago`;
  return `${Math.floor(s / 86400)} d ago`;
}

function when(ms) {
  return h("time", { datetime: typeof ms === "number" ? new Date(ms).toISOString() : null,
    title: typeof ms === "number" ? new Date(ms).toISOString() : null }, age(ms));
}

/** pass, fail or skip: the class of a set of counts (with its text beside it, never alone). */
function verdict(counts) {
  if (!counts) return "none";
  if (counts.failed > 0) return "fail";
  if (counts.passed > 0) return "pass";
  return "skip";
}

// "3 passed, 1 failed, 2 skipped": the separators are text too (a copy, a screen reader), and a
// matrix cell, which puts each count on its own line, hides them.
function counts(c) {
  const parts = [`${c.passed} passed`, `${c.failed} failed`, c.skipped ? `${c.skipped} skipped` : null].filter(Boolean);
  return parts.flatMap((text, i) => (i === 0 ? [] : [h("span", { class: "sep" }, ", ")]).concat(h("span", {}, text)));
}

function pair(row) {
  return `${row.platform} / ${row.browser}`;
}

/** Where a run came from, in a few words: its commit (short) and branch. */
function source(run) {
  const ci = run.ci || {};
  return [ci.commit ? ci.commit.slice(0, 10) : null, ci.branch].filter(Boolean).join(" on ") || "—";
}

/** A run's source, its commit linked to the commit view. */
function sourceLink(run) {
  const ci = run.ci || {};
  return ci.commit ? link({ view: "commit", commit: ci.commit }, source(run)) : source(run);
}

/** The classes' rules, as a legend beside the view that shows them. */
function legend(rules) {
  return h("dl", { class: "legend", "aria-label": "classes and their rules" },
    Object.entries(rules || {}).map(([name, rule]) => [h("dt", {}, h("span", { class: "badge" }, name)), h("dd", {}, rule)]));
}

/** A test's classes as badges (the rule as their title), each with the runs that show it: a
 * pair named once, its further runs as "earlier". */
function classBadges(classes, rules) {
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

/** A duration in milliseconds as people read it: whole from 100 ms, else three digits. */
function ms(duration) {
  const n = Number(duration) || 0;
  return String(n >= 100 ? Math.round(n) : Number(n.toPrecision(3)));
}

/** A link out to the run's CI page; only http(s) (the server checks it too). */
function ciLink(ci) {
  return ci && /^https?:\/\//i.test(ci.url || "") ? h("a", { href: ci.url, rel: "noreferrer noopener", class: "ci" }, "CI run") : null;
}

/** What the view's requests cost at S3 Standard's, Cloudflare R2's and S3 Express One Zone's prices. */
function prices(cost) {
  const usd = (x) => `$${Number(x).toFixed(7)}`;
  const by = cost.usdBy || {};
  return `${usd(cost.usd)} on S3 Standard, ${usd(by.r2)} on Cloudflare R2, ${usd(by.s3ExpressOneZone)} on S3 Express One Zone`;
}

function showCost(cost) {
  if (!cost) return;
  const kinds = Object.entries(cost.byKind || {}).map(([k, n]) => `${n} ${k}`).join(", ");
  costLine.textContent = `This view cost ${cost.requests} bucket request${cost.requests === 1 ? "" : "s"}` +
    (kinds ? ` (${kinds})` : "") + `, ${cost.bytesIn} bytes in, about ` + prices(cost) + "." +
    (cost.shared ? " Another view was built at the same time: these counts may include some of its requests." : "");
  costLine.dataset.requests = String(cost.requests);
}

// ----- data ---------------------------------------------------------------------------------

async function api(path, params) {
  const response = await fetch(`/api/${path}?` + new URLSearchParams(params || {}).toString(),
    { headers: { accept: "application/json" } });
  const body = await response.json().catch(() => ({ error: `the server answered ${response.status}` }));
  if (!response.ok) throw new Error(body.error || `the server answered ${response.status}`);
  showCost(body.cost);
  return body;
}

// ----- filters (state in the URL) -----------------------------------------------------------

function filterBar(state, options, extra = []) {
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
function branchPicker(state, data) {
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

const STATUSES = ["failed", "passed", "skipped"];
/** The pairs the matrix shows at a time (the server's page). */
const PAIRS_SHOWN = 50;

// ----- views --------------------------------------------------------------------------------

/** The suites that are columns as they are, at most 12 (`?columns=N`); above that, suites are
 * grouped by their path's first word (`unit/crud` is in `unit`), and `?group=G` opens one. */
function columnsOf(suites, state) {
  const most = Number(state.columns) > 0 ? Number(state.columns) : 12;
  if (suites.length <= most) return suites.map((s) => ({ name: s, suites: [s] }));
  const columns = [];
  for (const s of suites) {
    const group = s.split("/")[0];
    const open = state.group === group;
    const found = columns.find((c) => c.group === group && !open);
    if (found) found.suites.push(s);
    else columns.push(open ? { name: s, suites: [s] } : { name: group, group, suites: [s] });
  }
  // A group of one suite of its own name is that suite.
  return columns.map((c) => c.suites.length === 1 && c.suites[0] === c.name ? { name: c.name, suites: c.suites } : c);
}

/** A cell's counts and classes over several suites. */
function sumCells(cells, suites) {
  const present = suites.map((s) => cells[s]).filter(Boolean);
  if (present.length === 0) return undefined;
  const sum = { passed: 0, failed: 0, skipped: 0, classes: {} };
  for (const c of present) {
    for (const k of ["passed", "failed", "skipped"]) sum[k] += c[k];
    for (const [name, n] of Object.entries(c.classes || {})) sum.classes[name] = (sum.classes[name] || 0) + n;
  }
  return sum;
}

/** The matrix's filters and its page, as the server takes them. */
const MATRIX_FILTERS = ["after", "platform", "browser", "suite", "status", "class", "commit", "label", "branch"];

async function matrixView(state) {
  const asked = Object.fromEntries(MATRIX_FILTERS.filter((f) => state[f]).map((f) => [f, state[f]]));
  const data = await api("matrix", asked);
  let suites = data.suites;
  if (state.suite) suites = suites.filter((s) => s === state.suite);
  const columns = columnsOf(suites, state);
  // The server filtered and paged the pairs.
  const rows = data.rows;
  const head = h("tr", {}, h("th", { scope: "col" }, "platform / runtime"), h("th", { scope: "col" }, "newest run"),
    columns.map((c) => h("th", { scope: "col", "data-group": c.group },
      c.group ? link({ ...state, group: c.group }, `${c.name}/… (${c.suites.length})`) : c.name)));
  const body = rows.map((row) => {
    const label = h("th", { scope: "row" }, link({ view: "pair", platform: row.platform, browser: row.browser }, pair(row)));
    const run = h("td", {}, link({ view: "run", key: row.key }, row.version || "?"), " · ", when(row.time),
      row.ci ? [" · ", h("span", { class: "source" }, sourceLink(row))] : null);
    if (row.error) {
      return h("tr", { "data-pair": pair(row) }, label, run,
        h("td", { class: "error", colspan: Math.max(1, columns.length) }, `The newest run could not be loaded: ${row.error}`));
    }
    // A cell opens its run at that suite's (or group's) tests; a failing one at its failures,
    // with their text.
    const cells = columns.map((col) => {
      const c = sumCells(row.cells, col.suites);
      const which = col.group ? { group: col.group } : { suite: col.name };
      const tests = c && { view: "run", key: row.key, ...which, ...(c.failed > 0 ? { status: "failed" } : {}) };
      const classes = Object.entries((c && c.classes) || {}).map(([name, n]) =>
        h("span", { class: "badge", "data-class": name, title: data.rules[name] }, `${n} ${name}`));
      return h("td", { class: `cell ${verdict(c)}`, "data-suite": col.name },
        c ? link(tests, counts(c)) : h("span", {}, "not run"), classes);
    });
    return h("tr", { "data-pair": pair(row) }, label, run, cells);
  });
  show(
    h("h2", {}, "Newest run per platform and runtime", data.branch ? ` on ${data.branch}` : ""),
    filterBar(state, [["platform", "platform", data.platforms], ["browser", "runtime", data.browsers],
      ["suite", "suite", data.suites], ["status", "with a test that", STATUSES], ["class", "with a test that is", Object.keys(data.rules)],
      ["label", "build variant", data.labels || []]], branchPicker(state, data)),
    h("p", { class: "muted", id: "pairs-shown" }, `${rows.length} of ${data.matching} pair${data.matching === 1 ? "" : "s"}` +
      (data.matching < data.pairs ? ` passing the filters (of ${data.pairs})` : ""),
      state.after ? [" · ", link({ ...state, after: "" }, "first pairs")] : null,
      data.next ? [" · ", link({ ...state, after: data.next }, `next ${PAIRS_SHOWN} pairs`)] : null),
    data.rows.length === 0
      ? h("p", { class: "note" }, data.pairs === 0 ? "The bucket holds no runs yet."
        : `No pair has a run${data.branch ? ` on ${data.branch}` : ""} that passes the filters.`)
      // The table scrolls, not the page: its header row and first column stay in view.
      : h("div", { class: "scroll" }, h("table", { id: "matrix" }, h("thead", {}, head), h("tbody", {}, body))),
    columns.some((c) => c.group) ? h("p", { class: "note" },
      `${suites.length} suites, grouped by their first word; a group's heading opens it.`) : null,
    data.rows.length ? legend(data.rules) : null,
  );
  performance.mark("matrix-rendered");
}

function runRows(runs, withPair, picked) {
  return runs.map((run) => h("tr", { "data-key": run.key },
    picked ? h("td", {}, h("input", { type: "checkbox", "aria-label": `compare ${run.key}`, value: run.key,
      onchange: (e) => picked(e.target) })) : null,
    withPair ? h("td", {}, link({ view: "pair", platform: run.platform, browser: run.browser }, pair(run))) : null,
    h("td", {}, link({ view: "run", key: run.key }, run.key)),
    h("td", {}, run.version || "?"), h("td", { class: "source" }, source(run)), h("td", {}, when(run.time)),
    run.error ? h("td", { class: "error" }, `cannot be read: ${run.error}`)
      : h("td", { class: verdict(run.summary) }, counts(run.summary))));
}

/** A link to a view, with a class (the strip's runs carry their verdict). */
function classedLink(params, cls, ...children) {
  const a = link(params, ...children);
  a.className = cls;
  return a;
}

async function pagedView(title, fetchPage, withPair, extra) {
  const strip = h("ol", { class: "strip", "aria-label": "runs, newest first" });
  const chosen = [];
  const compare = h("p", {});
  // The two runs chosen last, compared older (the greater name: reverse timestamps) to newer.
  const showCompare = () => {
    const [a, b] = chosen.slice(-2);
    compare.replaceChildren(b === undefined ? h("span", { class: "muted" }, "Choose two runs to compare them.")
      : link({ view: "diff", from: a > b ? a : b, to: a > b ? b : a }, "Compare the two runs chosen"));
  };
  const picked = (box) => {
    if (box.checked) chosen.push(box.value);
    else chosen.splice(chosen.indexOf(box.value), 1);
    showCompare();
  };
  const rows = h("tbody", {});
  const more = h("button", { type: "button" }, "Load more");
  let after = null;
  const load = async () => {
    const page = await fetchPage(after);
    strip.append(...runStrip(page.runs, withPair));
    rows.append(...runRows(page.runs, withPair, picked));
    after = page.next;
    more.hidden = !after;
    return page;
  };
  more.addEventListener("click", () => load().catch(fail));
  const first = await load();
  showCompare();
  show(h("h2", {}, title), extra ? extra(first) : null, strip,
    h("table", { id: "runs" }, h("thead", {}, h("tr", {}, h("th", {}, "compare"), withPair ? h("th", {}, "pair") : null,
      h("th", {}, "run"), h("th", {}, "version"), h("th", {}, "commit"), h("th", {}, "ran"), h("th", {}, "tests"))), rows),
    more, compare);
}

/** Runs as a strip of boxes, newest first. */
function runStrip(runs, withPair) {
  return runs.map((run) => h("li", {},
    classedLink({ view: "run", key: run.key }, run.error ? "fail" : verdict(run.summary),
      withPair ? `${pair(run)} · ` : "",
      run.error ? "unreadable" : `${run.summary.passed} passed, ${run.summary.failed} failed`, " · ", age(run.time))));
}

function pairView(state) {
  return pagedView(`History of ${state.platform} / ${state.browser}`,
    (after) => api("history", { platform: state.platform, browser: state.browser, ...(after ? { after } : {}) }),
    false,
    (first) => first.flaky.length === 0 ? h("p", { class: "note" }, "No flaky test among these runs.")
      : h("section", { id: "flaky" }, h("h3", {}, "Flaky (passed on a retry, or passed and failed, at one commit; at one version where runs name no commit)"),
        h("ul", {}, first.flaky.map((t) => h("li", {}, `${t.suite}: ${t.name} (${t.basis})`)))));
}

function latestView() {
  return pagedView("Latest runs across every pair", (after) => api("latest", after ? { after } : {}), true);
}

async function runView(state) {
  const run = await api("run", { key: state.key });
  const ci = run.ci || {};
  const header = [h("h2", {}, `${pair(run)} · version ${run.version || "?"}`),
    h("p", {}, link({ view: "pair", platform: run.platform, browser: run.browser }, "History of this pair"), " · ran ",
      when(run.time), ci.commit || ci.branch ? [" · ", h("span", { class: "source" }, sourceLink(run))] : null,
      ci.url ? [" · ", ciLink(ci)] : null,
      run.previous ? [" · ", link({ view: "diff", from: run.previous, to: run.key },
        run.base ? `Changes against ${run.base}'s run before it` : "Changes since the previous run")] : "")];
  if (run.error) return show(...header, h("p", { class: "error" }, `This run cannot be read: ${run.error}`));
  const files = run.files || [];
  const fileName = (i) => files[i] && (files[i].file || files[i].key.split("/").pop());
  const labels = Object.entries(run.labels || {});
  const inGroup = (t) => !state.group || t.suite === state.group || t.suite.startsWith(state.group + "/");
  const tests = run.tests.filter((t) => (!state.suite || t.suite === state.suite) && inGroup(t) &&
    (!state.status || t.status === state.status));
  const suites = [...new Set(run.tests.map((t) => t.suite))];
  show(...header,
    h("p", { class: verdict(run.summary) }, counts(run.summary)),
    labels.length ? h("ul", { class: "labels", "aria-label": "labels" }, labels.map(([k, v]) => h("li", {}, `${k}=${v}`))) : null,
    h("details", { id: "files" }, h("summary", {}, `${files.length} report file${files.length === 1 ? "" : "s"}`),
      h("ul", {}, files.map((f) => h("li", {}, f.error ? h("span", { class: "error" }, `${f.key}: cannot be read: ${f.error}`)
        : `${f.file || f.key}${f.job ? ` (job ${f.job})` : ""}: ` + (f.rerun ? `a rerun (its tests' later attempts), ${f.tests} tests of its own` : `${f.tests} tests`) +
          `, ${f.tool.name}${f.tool.version ? " " + f.tool.version : ""}`)))),
    filterBar(state, [["suite", "suite", suites], ["status", "status", [...STATUSES, "pending", "other"]]]),
    h("table", { id: "tests" },
      h("thead", {}, h("tr", {}, h("th", {}, "suite"), h("th", {}, "test"), h("th", {}, "status"), h("th", {}, "ms"))),
      h("tbody", {}, tests.map((t) => h("tr", { "data-status": t.status },
        h("td", {}, t.suite),
        h("td", {}, link({ view: "test", platform: run.platform, browser: run.browser, suite: t.suite, name: t.name }, t.name),
          files.length > 1 ? h("span", { class: "muted" }, ` (${fileName(t.file)})`) : null,
          t.retries && t.status === "passed" && t.flaky ? h("span", { class: "badge" }, "passed on retry") : null,
          t.quarantined ? h("span", { class: "badge", title: "held by the quarantine: it did not fail its job" }, "quarantined") : null,
          classBadges(t.classes, run.rules),
          t.message ? h("pre", { class: "message" }, t.message) : null,
          testText(t)),
        h("td", { class: verdict({ passed: t.status === "passed" ? 1 : 0, failed: t.status === "failed" ? 1 : 0 }) }, t.status),
        h("td", {}, ms(t.duration)))))),
    legend(run.rules));
}

/** The first `file:line` a failure's text names (not the runtime's own files), or null. */
function where(text) {
  for (const [, place] of (text || "").matchAll(/([\w.\/\\-]+\.[A-Za-z]\w*:\d+)/g)) {
    if (!/^(node:|internal\/)/.test(place)) return place;
  }
  return null;
}

/** A test's failure text, its output and its earlier attempts, as text. */
function testText(t) {
  const at = where(t.trace) || where(t.message);
  const block = (label, text) => text ? h("details", { class: "text" }, h("summary", {}, label), h("pre", {}, text)) : null;
  const attempts = (t.retryAttempts || []).map((a) => h("li", {}, `attempt ${a.attempt}: ${a.status}`,
    a.message ? h("pre", { class: "message" }, a.message) : null, a.trace ? h("pre", {}, a.trace) : null));
  return [at ? h("p", { class: "where" }, "at ", h("code", {}, at)) : null, block("trace", t.trace), block("stderr", (t.stderr || []).join("\n")), block("stdout", (t.stdout || []).join("\n")),
    attempts.length ? h("details", { class: "attempts" }, h("summary", {}, `${attempts.length} earlier attempt(s)`), h("ol", {}, attempts)) : null];
}

async function failuresView() {
  const data = await api("failures");
  show(h("h2", {}, "Failures grouped across pairs (each pair's newest run)"),
    h("p", { class: "note" }, "A group is one failure's text with paths, line numbers, addresses, numbers and temporary names taken out: the same assert on two platforms is one group."),
    data.groups.length === 0 ? h("p", { class: "note" }, "No failures in the newest runs.")
      : h("ol", { id: "failures" }, data.groups.map((g) => h("li", { class: "group", "data-fingerprint": g.fingerprint },
        h("p", {}, h("strong", {}, `${g.pairs.length} pair${g.pairs.length === 1 ? "" : "s"}, ${g.tests.length} test${g.tests.length === 1 ? "" : "s"}`),
          " · ", g.pairs.join(", ")),
        h("pre", { class: "message" }, g.message),
        h("p", { class: "muted" }, "grouped as: ", h("code", {}, g.text)),
        h("ul", {}, g.tests.map((t) => h("li", {}, link({ view: "run", key: t.run, suite: t.suite, status: "failed" }, t.pair),
          ` · ${t.suite}: ${t.name}`)))))));
}

/** One test's history on one pair: its outcomes as a strip, since when it fails, its durations. */
async function testView(state) {
  const t = await api("test", { platform: state.platform, browser: state.browser, suite: state.suite, name: state.name });
  const since = t.failingSince;
  show(h("h2", {}, `${t.suite}: ${t.name}`),
    h("p", {}, link({ view: "pair", platform: t.platform, browser: t.browser }, `${t.platform} / ${t.browser}`),
      ` · its last ${t.runs} runs, newest first`),
    h("ol", { class: "strip", id: "outcomes", "aria-label": "outcomes, newest first; identical runs collapsed" },
      t.strip.map((s) => h("li", {}, classedLink({ view: "run", key: s.newest, suite: t.suite },
        s.status === "failed" ? "fail" : s.status === "passed" ? "pass" : "skip",
        `${s.status}${s.runs > 1 ? ` × ${s.runs}` : ""}`)))),
    since ? h("p", { class: "fail", id: "failing-since" }, `Failing ${since.all ? "in every run shown" : "since"} `,
      link({ view: "run", key: since.run }, since.commit ? `commit ${since.commit.slice(0, 10)}` : "this run"),
      ` (${since.runs} run${since.runs === 1 ? "" : "s"}), `, when(since.time)) : null,
    t.durations ? h("p", { id: "durations" }, `Passing runs take ${t.durations.p50} ms (p50), ${t.durations.p95} ms (p95), over ${t.durations.of}`,
      t.slower ? h("span", { class: "badge" }, `slower than its last 10 runs by ${t.slower}%`) : null) : null);
}

/** Tests whose name or suite holds the query, in each pair's newest run. */
async function searchView(state) {
  const found = await api("search", { q: state.q || "" });
  show(h("h2", {}, `Tests matching “${found.query}”`),
    found.tests.length === 0 ? h("p", { class: "note" }, "No test of the newest runs matches.")
      : h("table", { id: "found" }, h("thead", {}, h("tr", {}, h("th", {}, "pair"), h("th", {}, "suite"), h("th", {}, "test"), h("th", {}, "status"))),
        h("tbody", {}, found.tests.map((t) => h("tr", {},
          h("td", {}, link({ view: "run", key: t.run }, `${t.platform} / ${t.browser}`)), h("td", {}, t.suite),
          h("td", {}, link({ view: "test", platform: t.platform, browser: t.browser, suite: t.suite, name: t.name }, t.name)),
          h("td", { class: verdict({ passed: t.status === "passed" ? 1 : 0, failed: t.status === "failed" ? 1 : 0 }) }, t.status))))),
    found.more ? h("p", { class: "note" }, "More tests match than the 100 shown: narrow the search.") : null);
}

/** Every pair at one commit; with a base commit, what changed since. */
async function commitView(state) {
  const c = await api("commit", { commit: state.commit, ...(state.base ? { base: state.base } : {}) });
  const tests = (id, title, list, describe) => h("section", { id }, h("h3", {}, `${title} (${list.length})`),
    list.length === 0 ? h("p", { class: "note" }, "None.") : h("ul", {}, list.map((t) => h("li", {}, describe(t)))));
  const at = (t) => [link({ view: "run", key: t.run, suite: t.suite }, t.pair), ` · ${t.suite}: ${t.name}`];
  const compare = h("form", { class: "filters", id: "compare", onsubmit: (e) => {
    e.preventDefault();
    const base = new FormData(e.target).get("base");
    navigate({ view: "commit", commit: state.commit, ...(base ? { base: String(base) } : {}) });
  } }, h("label", {}, "compared with commit", h("input", { name: "base", value: state.base || "", maxlength: 64 })),
  h("button", { type: "submit" }, "Compare"));
  show(h("h2", {}, `Commit ${c.commit}${c.base ? ` compared with ${c.base}` : ""}`), compare,
    c.runs.length === 0 ? h("p", { class: "note" }, "No pair's recent runs name this commit.")
      : h("table", { id: "runs" }, h("thead", {}, h("tr", {}, h("th", {}, "pair"), h("th", {}, "version"), h("th", {}, "ran"), h("th", {}, "tests"))),
        h("tbody", {}, c.runs.map((run) => h("tr", { "data-key": run.key },
          h("td", {}, link({ view: "run", key: run.key }, pair(run))), h("td", {}, run.version || "?"), h("td", {}, when(run.time)),
          run.error ? h("td", { class: "error" }, `cannot be read: ${run.error}`) : h("td", { class: verdict(run.summary) }, counts(run.summary)))))),
    c.base ? tests("newly-failing", "Newly failing since the base", c.newlyFailing, at)
      : tests("failures", "Failures at this commit", c.failures || [], at),
    c.base ? tests("fixed", "Fixed since the base", c.fixed, at) : null,
    tests("divergent", "Divergent: passed on some pairs, failed on others", c.divergent,
      (t) => `${t.suite}: ${t.name} — passed on ${t.passed.join(", ")}; failed on ${t.failed.join(", ")}`),
    tests("flaky-at-commit", "Flaky: passed on a retry, or passed and failed, in one pair's runs at this commit", c.flaky, at));
}

async function diffView(state) {
  const d = await api("diff", { from: state.from, to: state.to });
  const section = (id, title, tests) => h("section", { id },
    h("h3", {}, `${title} (${tests.length})`),
    tests.length === 0 ? h("p", { class: "note" }, "None.")
      : h("ul", {}, tests.map((t) => h("li", {}, `${t.suite}: ${t.name} — ${t.status}`,
        t.message ? h("pre", { class: "message" }, t.message) : null))));
  const side = (run) => [link({ view: "run", key: run.key }, run.key), ` (${run.version || "?"}, `, when(run.time), ")"];
  show(h("h2", {}, "Changes between two runs"),
    h("p", {}, "From ", side(d.from), " to ", side(d.to)),
    section("newly-failing", "Newly failing", d.newlyFailing),
    section("newly-passing", "Newly passing", d.newlyPassing),
    section("added", "Added", d.added),
    section("removed", "Removed", d.removed));
}

async function quarantineView() {
  const data = await api("quarantine");
  const passes = (c) => c.outcomes.filter((o) => o === "passed").length;
  show(h("h2", {}, "Quarantine"),
    h("p", { class: "note" }, "Tests known to fail, kept in the bucket (objstore-results quarantine): their failures are still published, " +
      "marked, and do not fail a job (the pytest plugin, objstore-results gate)."),
    data.entries.length === 0 ? h("p", { class: "note" }, "Nothing is quarantined.")
      : h("table", { id: "quarantine" },
        h("thead", {}, h("tr", {}, h("th", {}, "test"), h("th", {}, "pairs"), h("th", {}, "reason"), h("th", {}, "added"),
          h("th", {}, "until"), h("th", {}, `its last ${data.releaseAfter} runs`))),
        h("tbody", {}, data.entries.map((e) => h("tr", { "data-test": `${e.suite} › ${e.name}`, "data-releasable": String(e.releasable) },
          h("td", {}, `${e.suite} › ${e.name}`),
          h("td", {}, h("code", {}, e.pairs)),
          h("td", {}, e.reason),
          h("td", { class: "added" }, e.added ? when(e.added) : "—", e.by ? ` by ${e.by}` : ""),
          h("td", {}, e.until ? `${e.until}${e.expired ? " (expired)" : ""}` : "—"),
          h("td", {}, e.pairsCovered.length === 0 ? "no pair it covers has runs"
            : e.pairsCovered.map((c) => covered(e, c, passes)),
            e.releasable ? h("p", { class: "release" }, `Passed its last ${data.releaseAfter} runs on every pair it covers: release it with `,
              h("code", {}, `objstore-results quarantine remove --suite ${shellQuoted(e.suite)} --name ${shellQuoted(e.name)} --pairs ${shellQuoted(e.pairs)}`)) : null))))));
}

/** A pair a quarantine entry covers: linked to the test's history there, and how it fared in
 * the runs where it ran ("not run here" where the pair does not run it). */
function covered(entry, c, passes) {
  const [platform, browser] = c.pair.split("/");
  const ran = c.outcomes.filter((o) => o !== null).length;
  return h("div", { "data-pair": c.pair }, link({ view: "test", platform, browser, suite: entry.suite, name: entry.name }, c.pair),
    ran === 0 ? ": not run here" : `: passed ${passes(c)} of ${ran}`);
}

/** `text` as one shell word: single-quoted, its own quotes closed and escaped. */
function shellQuoted(text) {
  return `'${String(text).replaceAll("'", "'\\''")}'`;
}

// ----- routing ------------------------------------------------------------------------------

const VIEWS = { matrix: matrixView, pair: pairView, latest: latestView, run: runView, diff: diffView, failures: failuresView,
  test: testView, search: searchView, commit: commitView, quarantine: quarantineView };

// The header's search goes through the page's own navigation.
document.getElementById("search").addEventListener("submit", (e) => {
  e.preventDefault();
  const q = new FormData(e.target).get("q");
  if (q) navigate({ view: "search", q: String(q) });
});

function fail(error) {
  show(h("p", { class: "error", role: "alert" }, `This view could not be built: ${error.message}`));
}

function render() {
  const state = Object.fromEntries(new URLSearchParams(location.search));
  const view = VIEWS[state.view || "matrix"] || matrixView;
  costLine.textContent = "";
  // What a view cost is kept for who asks (`?cost` opens it): a team reads its results.
  if ("cost" in state) document.getElementById("cost-box").open = true;
  return view(state).catch(fail);
}

function navigate(state) {
  history.pushState(null, "", "/?" + new URLSearchParams(state).toString());
  navigated = true;
  render();
}

document.addEventListener("click", (e) => {
  const a = e.target.closest && e.target.closest("a[data-nav]");
  if (!a || e.ctrlKey || e.metaKey || e.shiftKey || e.button !== 0) return;
  e.preventDefault();
  history.pushState(null, "", a.getAttribute("href"));
  navigated = true;
  render();
});
window.addEventListener("popstate", () => {
  navigated = true;
  render();
});
render();
