import { api, h, link, show, update, verdict } from "./core.js";

/** Each class's mark in a compact cell (the legend names them). */
const MARKS = { regressed: "R", flaky: "F", broken: "B", divergent: "D" };

/** The node last opened or closed: its button takes the focus back after the view is rebuilt. */
let toggled = null;

/** Tests down the side: the suites as a tree, the pairs across; each cell `passed / total`,
 * coloured, with its classes' marks. A node opens in place; what is open is in the address. */
export async function treeView(state) {
  const open = (state.open || "").split("\n").filter(Boolean);
  const data = await api("tree", { ...(open.length ? { open: open.join("\n") } : {}), ...(state.branch ? { branch: state.branch } : {}) });
  const toggle = (node) => {
    const closing = open.includes(node.path);
    // Closing a node closes what is open under it.
    const next = closing ? open.filter((o) => o !== node.path && !o.startsWith(node.path + "/")) : [...open, node.path];
    toggled = node.path;
    const address = { view: "tree", ...(next.length ? { open: next.join("\n") } : {}), ...(state.branch ? { branch: state.branch } : {}) };
    update(address);
  };
  const head = h("tr", {}, h("th", { scope: "col" }, `${data.suites} suite${data.suites === 1 ? "" : "s"}`),
    data.pairs.map((p) => h("th", { scope: "col", class: "pair" },
      link({ view: "pair", platform: p.platform, browser: p.browser }, h("span", {}, p.platform), h("span", {}, p.browser)))));
  const rows = data.nodes.map((node) => {
    const label = node.opens
      ? h("button", { type: "button", class: "toggle", "aria-expanded": String(open.includes(node.path)), "data-path": node.path,
        onclick: () => toggle(node) }, node.name)
      : node.suite ? link({ view: "test", suite: node.suite, name: node.name }, node.name) : node.name;
    const cells = node.cells.map((c, i) => {
      if (!c) return h("td", { class: "cell none" }, "");
      const total = c.passed + c.failed + c.skipped;
      const column = data.pairs[i];
      const text = node.opens ? `${c.passed} / ${total}` : c.failed ? "failed" : c.passed ? "passed" : "skipped";
      // A node's cell counts the suites under it (its own too): the run opens at that group; a
      // mark, at the tests of its class there.
      const where = node.opens ? { group: node.path } : { suite: node.suite };
      const marks = Object.entries(c.classes || {}).map(([name, n]) => link({ view: "run", key: column.key, ...where, class: name },
        h("abbr", { class: "mark", "data-class": name, title: `${n} ${name}: ${data.rules[name]}` }, MARKS[name] || name)));
      return h("td", { class: `cell ${verdict(c)}` }, link({ view: "run", key: column.key, ...where }, text), marks);
    });
    return h("tr", { "data-path": node.path, "data-depth": String(node.depth) },
      h("th", { scope: "row", class: `depth-${Math.min(node.depth, 8)}` }, label), cells);
  });
  show(h("h2", {}, "Tests down the side", data.branch ? ` on ${data.branch}` : ""),
    h("p", { class: "note" }, "Suites by the parts of their names, then their tests; a pair's cell is its newest run's passed and total tests there, ",
      "blank where the pair runs nothing of it. ", link({ view: "matrix", ...(state.branch ? { branch: state.branch } : {}) }, "The matrix")),
    data.morePairs ? h("p", { class: "note" }, `The first ${data.pairs.length} pairs are shown across; ${data.morePairs} more are not.`) : null,
    h("div", { class: "scroll" }, h("table", { id: "tree" }, h("thead", {}, head), h("tbody", {}, rows))),
    h("dl", { class: "legend", "aria-label": "marks and their rules" },
      Object.entries(MARKS).map(([name, mark]) => [h("dt", {}, h("abbr", { class: "mark" }, mark)), h("dd", {}, `${name}: ${data.rules[name]}`)])));
  performance.mark("tree-rendered");
  if (toggled) {
    const button = document.querySelector(`#tree button[data-path="${CSS.escape(toggled)}"]`);
    toggled = null;
    if (button) button.focus();
  }
}
