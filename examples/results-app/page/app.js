// The results page's router: every view is a URL (?view=...), rendered from the server's JSON
// views by the module that owns it.
import { costLine, fail, go, navigate, onNavigation, wentBack } from "./core.js";
import { matrixView } from "./matrix.js";
import { treeView } from "./tree.js";
import { proposalsView, rulesView } from "./triage.js";
import { ciRunView, diffView, latestView, pairView, runView } from "./runs.js";
import { commitView, failuresView, flakyView, quarantineView, searchView, testView } from "./tests.js";

const VIEWS = { matrix: matrixView, pair: pairView, latest: latestView, run: runView, diff: diffView, failures: failuresView,
  test: testView, search: searchView, commit: commitView, quarantine: quarantineView, cirun: ciRunView, flaky: flakyView, tree: treeView,
  rules: rulesView, proposals: proposalsView };

// The header's search goes through the page's own navigation.
document.getElementById("search").addEventListener("submit", (e) => {
  e.preventDefault();
  const q = new FormData(e.target).get("q");
  if (q) navigate({ view: "search", q: String(q) });
});

function render() {
  const state = Object.fromEntries(new URLSearchParams(location.search));
  const view = VIEWS[state.view || "matrix"] || matrixView;
  costLine.textContent = "";
  // What a view cost is kept for who asks (`?cost` opens it): a team reads its results.
  if ("cost" in state) document.getElementById("cost-box").open = true;
  return view(state).catch(fail);
}

document.addEventListener("click", (e) => {
  const a = e.target.closest && e.target.closest("a[data-nav]");
  if (!a || e.ctrlKey || e.metaKey || e.shiftKey || e.button !== 0) return;
  e.preventDefault();
  go(a.getAttribute("href"));
});
window.addEventListener("popstate", wentBack);
onNavigation(render);
render();
