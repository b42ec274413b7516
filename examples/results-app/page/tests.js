import { api, counts, filterBar, h, link, ms, navigate, pair, shellQuoted, show, testLink, verdict, when } from "./core.js";
import { classedLink } from "./runs.js";
import { impactLine, noveltyBadge, ruleLine } from "./triage.js";

export async function failuresView(state) {
  const data = await api("failures");
  const owners = [...new Set(data.groups.flatMap((g) => g.owners))].sort();
  const groups = state.owner ? data.groups.filter((g) => g.owners.includes(state.owner)) : data.groups;
  show(h("h2", {}, "Failures grouped across pairs (each pair's newest run)"),
    h("p", { class: "note" }, "A group is the failures a failure rule matches (see Rules), else one failure's text with paths, line numbers, " +
      `addresses, numbers and temporary names taken out. Ranked by the CI minutes they cost over ${data.triage.window}; each figure's rule is its title.`),
    owners.length ? filterBar(state, [["owner", "owner", owners]]) : null,
    groups.length === 0 ? h("p", { class: "note" }, state.owner ? `No failure is ${state.owner}'s.` : "No failures in the newest runs.")
      : h("ol", { id: "failures" }, groups.map((g) => h("li", { class: "group", "data-fingerprint": g.fingerprint, "data-key": g.key },
        g.rule ? ruleLine(g.rule) : null,
        h("p", {}, h("strong", {}, `${g.pairs.length} pair${g.pairs.length === 1 ? "" : "s"}, ${g.tests.length} test${g.tests.length === 1 ? "" : "s"}`),
          " · ", g.pairs.join(", "), g.owners.length ? h("span", { class: "owners" }, ` · owners ${g.owners.join(", ")}`) : null,
          " ", g.rule ? null : noveltyBadge(g.novelty, data.triage)),
        h("p", {}, impactLine(g.impact, data.triage)),
        h("pre", { class: "message" }, g.message),
        h("p", { class: "muted" }, "grouped as: ", h("code", {}, g.text)),
        h("ul", {}, g.tests.map((t) => h("li", {}, link({ view: "run", key: t.run, suite: t.suite, status: "failed" }, t.pair),
          " · ", testLink(t.suite, t.name, t.pair), " ", g.rule ? null : noveltyBadge(t.novelty, data.triage))))))));
}

/** A rate as people read it: `7.7%`. */
function percent(x) {
  return `${Math.round(x * 1000) / 10}%`;
}

/** A test's own page: on every pair (or one), how often it failed and flaked, when it last
 * passed and first failed; its runs as a table; the failure groups it falls in; on one pair,
 * its outcomes as a strip, since when it fails and its durations. */
export async function testView(state) {
  const t = await api("test", { ...(state.platform ? { platform: state.platform, browser: state.browser } : {}), suite: state.suite, name: state.name });
  const since = t.failingSince;
  const outcome = (r) => r.passedOnRetry ? `passed on attempt ${r.attempts}` : r.attempts > 1 ? `${r.status} after ${r.attempts} attempts` : r.status;
  show(h("h2", {}, `${t.suite} › ${t.name}`),
    h("p", {}, t.pair ? [`On ${t.pair.replace("/", " / ")} (its last ${t.window} runs) · `, testLink(t.suite, t.name, null, "on every pair")]
      : `On every pair that runs it, over each pair's last ${t.window} runs.`),
    t.owners.length ? h("p", { class: "owners" }, `Owners: ${t.owners.join(", ")}`) : null,
    t.pairs.length === 0 ? h("p", { class: "note" }, "No run looked at ran this test.")
      : h("table", { id: "test-pairs" }, h("thead", {}, h("tr", {}, ["pair", "runs", "failed", "flake rate", "last passed", "first failed"].map((c) => h("th", { scope: "col" }, c)))),
        h("tbody", {}, t.pairs.map((p) => h("tr", { "data-pair": p.pair },
          h("th", { scope: "row" }, t.pair ? p.pair : testLink(t.suite, t.name, p.pair, p.pair)), h("td", {}, String(p.ran)), h("td", {}, String(p.failed)),
          h("td", {}, `${percent(p.rate)} (${p.flaky} flaky)`),
          h("td", {}, p.lastPassed ? link({ view: "run", key: p.lastPassed, suite: t.suite }, when(p.lastPassedAt)) : "not in these runs"),
          h("td", {}, p.firstFailed ? link({ view: "run", key: p.firstFailed, suite: t.suite }, when(p.firstFailedAt)) : "not in these runs"))))),
    t.strip ? h("ol", { class: "strip", id: "outcomes", "aria-label": "outcomes, newest first; identical runs collapsed" },
      t.strip.map((s) => h("li", {}, classedLink({ view: "run", key: s.newest, suite: t.suite },
        s.status === "failed" ? "fail" : s.status === "passed" ? "pass" : "skip",
        `${s.status}${s.runs > 1 ? ` × ${s.runs}` : ""}`)))) : null,
    since ? h("p", { class: "fail", id: "failing-since" }, `Failing ${since.all ? "in every run shown" : "since"} `,
      link({ view: "run", key: since.run }, since.commit ? `commit ${since.commit.slice(0, 10)}` : "this run"),
      ` (${since.runs} run${since.runs === 1 ? "" : "s"}), `, when(since.time)) : null,
    t.durations ? h("p", { id: "durations" }, `Passing runs take ${t.durations.p50} ms (p50), ${t.durations.p95} ms (p95), over ${t.durations.of}`,
      t.slower ? h("span", { class: "badge" }, `slower than its last 10 runs by ${t.slower}%`) : null) : null,
    t.rows.length === 0 ? null : h("table", { id: "test-runs" },
      h("caption", {}, `Its runs, newest first (${t.rows.length})`),
      h("thead", {}, h("tr", {}, ["ran", "pair", "commit", "branch", "outcome", "message", "ms"].map((c) => h("th", { scope: "col" }, c)))),
      h("tbody", {}, t.rows.map((r) => h("tr", { "data-status": r.status },
        h("td", {}, link({ view: "run", key: r.run, suite: t.suite }, when(r.time))), h("td", {}, r.pair),
        h("td", {}, r.commit ? link({ view: "commit", commit: r.commit }, r.commit.slice(0, 10)) : "—"), h("td", {}, r.branch || "—"),
        h("td", { class: r.passedOnRetry ? "flaky" : verdict({ passed: r.status === "passed" ? 1 : 0, failed: r.status === "failed" ? 1 : 0 }) }, outcome(r)),
        h("td", {}, r.message || ""), h("td", {}, ms(r.duration)))))),
    t.groups.length === 0 ? null : h("section", { id: "test-groups" }, h("h3", {}, "Failure groups it falls in"),
      h("ul", {}, t.groups.map((g) => h("li", { "data-fingerprint": g.fingerprint }, `${g.runs} run${g.runs === 1 ? "" : "s"}: `, h("code", {}, g.text)))),
      link({ view: "failures" }, "Top failures across pairs")));
}

/** Tests whose name or suite holds the query, in each pair's newest run. */
export async function searchView(state) {
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
export async function commitView(state) {
  const c = await api("commit", { commit: state.commit, ...(state.base ? { base: state.base } : {}) });
  const tests = (id, title, list, describe) => h("section", { id }, h("h3", {}, `${title} (${list.length})`),
    list.length === 0 ? h("p", { class: "note" }, "None.") : h("ul", {}, list.map((t) => h("li", {}, describe(t)))));
  const at = (t) => [link({ view: "run", key: t.run, suite: t.suite }, t.pair), " · ", testLink(t.suite, t.name, t.pair)];
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
      (t) => [testLink(t.suite, t.name), ` — passed on ${t.passed.join(", ")}; failed on ${t.failed.join(", ")}`]),
    tests("flaky-at-commit", "Flaky: passed on a retry, or passed and failed, in one pair's runs at this commit", c.flaky, at));
}

export async function quarantineView() {
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
export function covered(entry, c, passes) {
  const [platform, browser] = c.pair.split("/");
  const ran = c.outcomes.filter((o) => o !== null).length;
  return h("div", { "data-pair": c.pair }, link({ view: "test", platform, browser, suite: entry.suite, name: entry.name }, c.pair),
    ran === 0 ? ": not run here" : `: passed ${passes(c)} of ${ran}`);
}

/** The flaky tests across every pair, those that cost the most CI minutes first, then the most
 * often flaky: each with its flake rate,
 * the pairs it flaked on (each opening the newest run whose page marks it flaky) and since when. */
export async function flakyView(state) {
  const data = await api("flaky");
  const owners = [...new Set(data.tests.flatMap((t) => t.owners))].sort();
  const tests = state.owner ? data.tests.filter((t) => t.owners.includes(state.owner)) : data.tests;
  show(h("h2", {}, "Flaky tests"),
    h("p", { class: "note" }, `A test flaked in a run where it passed on a retry, or failed at a commit where it also passed ` +
      `(at a version where runs name no commit), by the one rule of every view, over each pair's newest ${data.window} runs (any branch). ` +
      "Its flake rate is those runs over the runs that ran it; each pair opens the newest run whose page marks it flaky."),
    owners.length ? filterBar(state, [["owner", "owner", owners]]) : null,
    tests.length === 0 ? h("p", { class: "note" }, state.owner ? `No flaky test is ${state.owner}'s.` : "No test is flaky in these runs.")
      : h("table", { id: "flaky-tests" },
        h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "test"), h("th", { scope: "col" }, "cost"), h("th", { scope: "col" }, "flake rate"),
          h("th", { scope: "col" }, "pairs"), h("th", { scope: "col" }, "since"), h("th", { scope: "col" }, "owners"))),
        h("tbody", {}, tests.map((t) => {
          return h("tr", { "data-test": `${t.suite} › ${t.name}` },
            h("th", { scope: "row" }, testLink(t.suite, t.name)),
            h("td", {}, impactLine(t.impact, data.triage)),
            h("td", {}, `${percent(t.rate)} (${t.flaky} of ${t.ran} runs)`),
            h("td", {}, t.pairs.map((p, i) => [i ? ", " : "", link({ view: "run", key: p.run, suite: t.suite, class: "flaky" }, p.pair), ` ${p.flaky} of ${p.ran}`])),
            h("td", {}, typeof t.since === "number" ? when(t.since) : "—"),
            h("td", { class: "owners" }, t.owners.join(", ") || "—"));
        }))),
    data.more ? h("p", { class: "note" }, `The ${data.tests.length} most flaky are listed.`) : null);
}
