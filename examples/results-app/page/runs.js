import { STATUSES, age, api, ciLink, classBadges, counts, fail, filterBar, h, legend, link, ms, pair, show, source, sourceLink, testLink, verdict, when } from "./core.js";
import { noveltyBadge } from "./triage.js";

/** A run's name for people: its CI run's title, else when it ran (its key stays in the URL). */
export function runName(run) {
  const ci = run.ci || {};
  if (ci.title) return ci.title;
  return typeof run.time === "number" ? `run of ${new Date(run.time).toISOString().slice(0, 16).replace("T", " ")} UTC` : "run";
}

/** A pair's runs as rows, each with a box to choose it for a comparison (`picked`). */
function runRows(runs, picked) {
  return runs.map((run) => h("tr", { "data-key": run.key },
    h("td", {}, h("input", { type: "checkbox", "aria-label": `compare ${pair(run)}, ${runName(run)}`, value: run.key,
      onchange: (e) => picked(e.target) })),
    h("td", {}, link({ view: "run", key: run.key }, runName(run))),
    h("td", {}, run.version || "?"), h("td", { class: "source" }, source(run)), h("td", {}, when(run.time)),
    run.error ? h("td", { class: "error" }, `cannot be read: ${run.error}`)
      : h("td", { class: verdict(run.summary) }, counts(run.summary))));
}

/** A link to a view, with a class (the strip's runs carry their verdict). */
export function classedLink(params, cls, ...children) {
  const a = link(params, ...children);
  a.className = cls;
  return a;
}

/** A pair's runs, a page at a time, as a strip and as rows to compare two of. */
async function pagedView(title, fetchPage, extra) {
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
    strip.append(...runStrip(page.runs));
    rows.append(...runRows(page.runs, picked));
    after = page.next;
    more.hidden = !after;
    return page;
  };
  more.addEventListener("click", () => load().catch(fail));
  const first = await load();
  showCompare();
  show(h("h2", {}, title), extra ? extra(first) : null, strip,
    h("table", { id: "runs" }, h("thead", {}, h("tr", {}, h("th", {}, "compare"),
      h("th", {}, "run"), h("th", {}, "version"), h("th", {}, "commit"), h("th", {}, "ran"), h("th", {}, "tests"))), rows),
    more, compare);
}

/** Runs as a strip of boxes, newest first. */
function runStrip(runs) {
  return runs.map((run) => h("li", {},
    classedLink({ view: "run", key: run.key }, run.error ? "fail" : verdict(run.summary),
      run.error ? "unreadable" : `${run.summary.passed} passed, ${run.summary.failed} failed`, " · ", age(run.time))));
}

export function pairView(state) {
  return pagedView(`History of ${state.platform} / ${state.browser}`,
    (after) => api("history", { platform: state.platform, browser: state.browser, ...(after ? { after } : {}) }),
    (first) => first.flaky.length === 0 ? h("p", { class: "note" }, "No flaky test among these runs.")
      : h("section", { id: "flaky" }, h("h3", {}, "Flaky (passed on a retry, or passed and failed, at one commit; at one version where runs name no commit)"),
        h("ul", {}, first.flaky.map((t) => h("li", {}, testLink(t.suite, t.name, `${state.platform}/${state.browser}`), ` (${t.basis})`)))));
}

/** The latest runs as CI runs, newest first: the files of one CI run on every pair are one row
 * (the name segment they share), [its pairs under it]. */
export async function latestView() {
  const groups = [];
  const rows = h("tbody", {});
  const more = h("button", { type: "button" }, "Load more");
  let after = null;
  const load = async () => {
    const page = await api("latest", after ? { after } : {});
    for (const run of page.runs) {
      const segment = run.key.split("/")[2];
      const last = groups.at(-1);
      // A CI run's pairs can straddle two pages: the second joins the first's row.
      if (last && last.segment === segment) last.runs.push(run);
      else groups.push({ segment, runs: [run] });
    }
    rows.replaceChildren(...groups.map(ciRunRow));
    after = page.next;
    more.hidden = !after;
  };
  more.addEventListener("click", () => load().catch(fail));
  await load();
  show(h("h2", {}, "Latest CI runs"),
    h("table", { id: "ci-runs" }, h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "CI run"), h("th", { scope: "col" }, "commit"),
      h("th", { scope: "col" }, "pairs"), h("th", { scope: "col" }, "verdict"), h("th", { scope: "col" }, "ran"))), rows),
    more);
}

/** A CI run's verdict in words: "2 of 9 pairs failed, 11 failures", or "passed on 9 pairs". */
function ciVerdict(runs) {
  const failures = runs.reduce((n, r) => n + (r.summary ? r.summary.failed : 0), 0);
  const failing = runs.filter((r) => r.error || (r.summary && r.summary.failed > 0)).length;
  const pairs = `${runs.length} pair${runs.length === 1 ? "" : "s"}`;
  if (failing === 0) return { cls: "pass", text: `passed on ${pairs}` };
  return { cls: "fail", text: `${failing} of ${pairs} failed, ${failures} failure${failures === 1 ? "" : "s"}` };
}

function ciRunRow(group) {
  const first = group.runs[0];
  const ci = first.ci || {};
  const title = ci.run ? link({ view: "cirun", run: ci.run }, runName(first)) : link({ view: "run", key: first.key }, `${pair(first)}, ${runName(first)}`);
  const { cls, text } = ciVerdict(group.runs);
  const pairs = h("details", {}, h("summary", {}, `${group.runs.length} pair${group.runs.length === 1 ? "" : "s"}`),
    h("ul", {}, group.runs.map((r) => h("li", { "data-key": r.key }, link({ view: "run", key: r.key }, pair(r)), ": ",
      r.error ? "cannot be read" : counts(r.summary)))));
  return h("tr", { "data-run": ci.run || null, "data-key": first.key },
    h("th", { scope: "row" }, title, ci.url ? [" · ", ciLink(ci)] : null),
    h("td", { class: "source" }, sourceLink(first)), h("td", {}, pairs), h("td", { class: cls }, text), h("td", {}, when(first.time)));
}

/** A CI run on every pair: its verdict, its pairs' runs, and its failures, each test once with
 * the pairs it failed on. */
export async function ciRunView(state) {
  const data = await api("cirun", { run: state.run });
  const first = data.rows[0] || {};
  const ci = first.ci || {};
  const { cls, text } = ciVerdict(data.rows);
  const testList = (id, title, tests) => tests.length === 0 ? null : h("section", { id },
    h("h3", {}, `${title} (${tests.length})`),
    h("ul", {}, tests.map((t) => h("li", { "data-test": `${t.suite} › ${t.name}` },
      testLink(t.suite, t.name),
      t.classes.map((c) => [" ", h("span", { class: "badge" }, c)]), " on ",
      t.pairs.map(([p, key], i) => [i ? ", " : "", link({ view: "run", key, suite: t.suite }, p)]),
      t.message ? h("pre", { class: "message" }, t.message) : null))));
  show(h("h2", {}, data.title),
    h("p", {}, h("span", { class: cls }, text), ci.commit || ci.branch ? [" · ", h("span", { class: "source" }, sourceLink(first))] : null,
      ci.url ? [" · ", ciLink(ci)] : null),
    h("table", { id: "ci-pairs" }, h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "pair"), h("th", { scope: "col" }, "version"),
      h("th", { scope: "col" }, "tests"))),
    h("tbody", {}, data.rows.map((r) => h("tr", { "data-key": r.key }, h("th", { scope: "row" }, link({ view: "run", key: r.key }, pair(r))),
      h("td", {}, r.version || "?"), r.error ? h("td", { class: "error" }, `cannot be read: ${r.error}`)
        : h("td", { class: verdict(r.summary) }, counts(r.summary)))))),
    data.failures.length === 0 ? h("p", { class: "note" }, "Nothing failed.") : testList("ci-failures", "Failures", data.failures),
    testList("ci-flaky", "Flaky", data.flaky));
}

export async function runView(state) {
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
  const inClass = (t) => !state.class || (t.classes || []).some((c) => c.class === state.class);
  const tests = run.tests.filter((t) => (!state.suite || t.suite === state.suite) && inGroup(t) &&
    (!state.status || t.status === state.status) && inClass(t));
  const suites = [...new Set(run.tests.map((t) => t.suite))];
  show(...header,
    h("p", { class: verdict(run.summary) }, counts(run.summary)),
    labels.length ? h("ul", { class: "labels", "aria-label": "labels" }, labels.map(([k, v]) => h("li", {}, `${k}=${v}`))) : null,
    h("details", { id: "files" }, h("summary", {}, `${files.length} report file${files.length === 1 ? "" : "s"}`),
      h("ul", {}, files.map((f) => h("li", {}, f.error ? h("span", { class: "error" }, `${f.key}: cannot be read: ${f.error}`)
        : `${f.file || f.key}${f.job ? ` (job ${f.job})` : ""}: ` + (f.rerun ? `a rerun (its tests' later attempts), ${f.tests} tests of its own` : `${f.tests} tests`) +
          `, ${f.tool.name}${f.tool.version ? " " + f.tool.version : ""}`)))),
    filterBar(state, [["suite", "suite", suites], ["status", "status", [...STATUSES, "pending", "other"]],
      ["class", "class", Object.keys(run.rules || {})]]),
    h("table", { id: "tests" },
      h("thead", {}, h("tr", {}, h("th", {}, "suite"), h("th", {}, "test"), h("th", {}, "status"), h("th", {}, "ms"))),
      h("tbody", {}, tests.map((t) => h("tr", { "data-status": t.status },
        h("td", {}, t.suite),
        h("td", {}, link({ view: "test", platform: run.platform, browser: run.browser, suite: t.suite, name: t.name }, t.name),
          files.length > 1 ? h("span", { class: "muted" }, ` (${fileName(t.file)})`) : null,
          t.retries && t.status === "passed" && t.flaky ? h("span", { class: "badge" }, "passed on retry") : null,
          t.quarantined ? h("span", { class: "badge", title: "held by the quarantine: it did not fail its job" }, "quarantined") : null,
          classBadges(t.classes, run.rules),
          noveltyBadge(t.novelty),
          t.message ? h("pre", { class: "message" }, t.message) : null,
          testText(t)),
        h("td", { class: verdict({ passed: t.status === "passed" ? 1 : 0, failed: t.status === "failed" ? 1 : 0 }) }, t.status),
        h("td", {}, ms(t.duration)))))),
    legend(run.rules));
}

/** The first `file:line` a failure's text names (not the runtime's own files), or null. */
export function where(text) {
  for (const [, place] of (text || "").matchAll(/([\w.\/\\-]+\.[A-Za-z]\w*:\d+)/g)) {
    if (!/^(node:|internal\/)/.test(place)) return place;
  }
  return null;
}

/** A test's failure text, its output and its earlier attempts, as text. */
export function testText(t) {
  const at = where(t.trace) || where(t.message);
  const block = (label, text) => text ? h("details", { class: "text" }, h("summary", {}, label), h("pre", {}, text)) : null;
  const attempts = (t.retryAttempts || []).map((a) => h("li", {}, `attempt ${a.attempt}: ${a.status}`,
    a.message ? h("pre", { class: "message" }, a.message) : null, a.trace ? h("pre", {}, a.trace) : null));
  return [at ? h("p", { class: "where" }, "at ", h("code", {}, at)) : null, block("trace", t.trace), block("stderr", (t.stderr || []).join("\n")), block("stdout", (t.stdout || []).join("\n")),
    attempts.length ? h("details", { class: "attempts" }, h("summary", {}, `${attempts.length} earlier attempt(s)`), h("ol", {}, attempts)) : null];
}


export async function diffView(state) {
  const d = await api("diff", { from: state.from, to: state.to });
  const section = (id, title, tests) => h("section", { id },
    h("h3", {}, `${title} (${tests.length})`),
    tests.length === 0 ? h("p", { class: "note" }, "None.")
      : h("ul", {}, tests.map((t) => h("li", {}, testLink(t.suite, t.name, `${d.to.platform}/${d.to.browser}`), ` — ${t.status}`,
        t.message ? h("pre", { class: "message" }, t.message) : null))));
  const side = (run) => [link({ view: "run", key: run.key }, `${pair(run)}, ${runName(run)}`), ` (${run.version || "?"}, `, when(run.time), ")"];
  show(h("h2", {}, "Changes between two runs"),
    h("p", {}, "From ", side(d.from), " to ", side(d.to)),
    section("newly-failing", "Newly failing", d.newlyFailing),
    section("newly-passing", "Newly passing", d.newlyPassing),
    section("added", "Added", d.added),
    section("removed", "Removed", d.removed));
}
