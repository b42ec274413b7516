import { api, branchPicker, counts, STATUSES, filterBar, h, legend, link, pair, show, sourceLink, verdict, when } from "./core.js";

/** The pairs the matrix shows at a time (the server's page). */
export const PAIRS_SHOWN = 50;

// ----- views --------------------------------------------------------------------------------

/** The suites that are columns as they are, at most 12 (`?columns=N`); above that, suites are
 * grouped by their path's first word (`unit/crud` is in `unit`), and `?group=G` opens one. */
export function columnsOf(suites, state) {
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
export function sumCells(cells, suites) {
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
export const MATRIX_FILTERS = ["after", "platform", "browser", "suite", "status", "class", "commit", "label", "branch"];

export async function matrixView(state) {
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
  // Which runtimes run each suite, on any pair (the server's word).
  const runtimesOf = new Map(Object.entries(data.runtimes || {}).map(([suite, names]) => [suite, new Set(names)]));
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
      // A class's count opens the run at the tests it counts (a flaky pass among them).
      const classes = Object.entries((c && c.classes) || {}).map(([name, n]) =>
        link({ view: "run", key: row.key, ...which, class: name }, h("span", { class: "badge", "data-class": name, title: data.rules[name] }, `${n} ${name}`)));
      // A suite no run of this runtime has is not this row's to run: blank, not "not run".
      if (!c && !col.suites.some((suite) => (runtimesOf.get(suite) || new Set()).has(row.browser))) {
        return h("td", { class: "cell none", "data-suite": col.name, title: `${row.browser} has no such suite` }, "");
      }
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
    columns.some((c) => c.group) ? h("p", { class: "note", id: "offer-tree" },
      `${suites.length} suites, grouped by their first word; a group's heading opens it. `,
      link({ view: "tree", ...(state.branch ? { branch: state.branch } : {}) }, "See them down the side, with the pairs across")) : null,
    data.rows.length ? legend(data.rules) : null,
  );
  performance.mark("matrix-rendered");
}
