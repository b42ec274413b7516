// Triage on the page: what a failure group or a flaky test cost (its impact, each figure's rule
// as its title), whether a failure is new or known, and the failure rules with their editor.
import { api, fail, h, link, navigationCount, show, testLink, when } from "./core.js";

/** Impact as one line, each figure's rule its title. */
export function impactLine(impact, triage) {
  const rule = Object.fromEntries((triage && triage.impact) || []);
  const n = (count, one) => `${count} ${one}${count === 1 ? "" : "s"}`;
  return h("span", { class: "impact", title: triage ? `over ${triage.window}` : "" },
    h("span", { title: rule.minutes, "data-figure": "minutes" }, `${impact.minutes} CI minutes lost`), " · ",
    h("span", { title: rule.runs }, `${n(impact.runs, "run")} failed`), " · ",
    h("span", { title: rule.blocked }, `${n(impact.blocked, "commit")} blocked`), " · ",
    h("span", { title: rule.pairs }, n(impact.pairs, "pair")),
    impact.firstSeen ? h("span", { title: rule.seen }, " · seen ", when(impact.firstSeen), " to ", when(impact.lastSeen)) : null);
}

/** An issue's title, linked when its address is a web address (the bucket's rules are checked,
 * but a page never links what could run). */
function issueLink(issue, title) {
  return /^https?:\/\//i.test(issue || "") ? h("a", { href: issue, rel: "noreferrer" }, title) : h("span", {}, title);
}

/** A failure's word beside what came before it: `new`, `known` (linking its issue), or none. */
export function noveltyBadge(novelty, triage) {
  if (!novelty) return null;
  if (novelty.kind === "new") {
    return h("span", { class: "badge new", title: (triage && triage.new) || `not seen alike on ${novelty.branch} in ${novelty.days} days` }, "new");
  }
  if (novelty.kind === "known") {
    return h("span", { class: "known" }, h("span", { class: "badge" }, "known"), " ", issueLink(novelty.issue, novelty.title));
  }
  return null;
}

/** The rule a failure group is kept under, its issue linked. */
export function ruleLine(rule) {
  return h("p", { class: "rule" }, `rule ${rule.id}${rule.closed ? " (closed)" : ""}: `, issueLink(rule.issue, rule.title));
}

/** The failure rules: each with its patterns, its impact and its newest failures; and a form
 * that adds one (the collector's token needed, kept for this tab only). */
export async function rulesView() {
  const data = await api("rules");
  const form = h("form", { id: "rule-form" },
    h("label", {}, "title ", h("input", { name: "title", required: "" })),
    h("label", {}, "issue ", h("input", { name: "issue", type: "url", required: "", placeholder: "https://…" })),
    h("label", {}, "test pattern ", h("input", { name: "test", placeholder: "suite::name, * for any run" })),
    h("label", {}, "text pattern ", h("input", { name: "text", placeholder: "anywhere in the failure's text" })),
    h("label", {}, "token ", h("input", { name: "token", type: "password", autocomplete: "off" })),
    h("button", { type: "submit" }, "Add the rule"), h("span", { class: "said", role: "status" }));
  form.elements.token.value = sessionStorage.getItem("objstore-token") || "";
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    const fields = Object.fromEntries(new FormData(form));
    const body = { action: "add", title: fields.title, issue: fields.issue };
    if (fields.test) body.test = fields.test;
    if (fields.text) body.text = fields.text;
    edit(fields.token, body, form.querySelector(".said")).catch(fail);
  });
  show(h("h2", {}, "Failure rules"),
    h("p", { class: "note" }, "A rule binds failures to the issue that tracks them: a test pattern (a test's whole suite::name) and/or a text " +
      "pattern (anywhere in its message), * standing for any run of characters. Every view groups the failures a rule matches under it, " +
      "marks them known rather than new, and the summaries link the issue. Also: objstore-results rules."),
    data.rules.length === 0 ? h("p", { class: "note" }, "No rule yet.")
      : h("ol", { id: "rules" }, data.rules.map((r) => h("li", { "data-rule": r.id },
        ruleLine(r),
        r.test ? h("p", {}, "test: ", h("code", {}, r.test)) : null,
        r.text ? h("p", {}, "text: ", h("code", {}, r.text)) : null,
        h("p", {}, impactLine(r.impact, data.triage)),
        h("ul", {}, r.failures.map((f) => h("li", {}, link({ view: "run", key: f.run, suite: f.suite, status: "failed" }, f.pair),
          " · ", testLink(f.suite, f.name, f.pair), f.message ? h("span", { class: "muted" }, `: ${f.message}`) : null))),
        h("button", { type: "button", "data-action": r.closed ? "reopen" : "close" }, r.closed ? "Reopen" : "Close"),
        h("button", { type: "button", "data-action": "remove" }, "Remove")))),
    h("h3", {}, "Add a rule"), form);
  for (const button of document.querySelectorAll("#rules button")) {
    button.addEventListener("click", () => edit(form.elements.token.value,
      { action: button.dataset.action, id: button.closest("li").dataset.rule }, form.querySelector(".said")).catch(fail));
  }
}

/** Sends one edit of the rules, then shows them again (or says why it was refused). */
async function edit(token, body, said) {
  const on = navigationCount();
  sessionStorage.setItem("objstore-token", token || "");
  const response = await fetch("/api/rules", {
    method: "POST",
    headers: { "content-type": "application/json", ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: JSON.stringify(body),
  });
  const answer = await response.json().catch(() => ({ error: `the server answered ${response.status}` }));
  if (navigationCount() !== on) return; // the reader went elsewhere meanwhile
  if (!response.ok) {
    said.textContent = answer.error || `the server answered ${response.status}`;
    return;
  }
  await rulesView().catch(fail);
}

/** The lifecycle's proposals: each with its rule and its measures per window, confirmed with
 * the collector's token; and the newest events. */
export async function proposalsView() {
  const data = await api("proposals");
  const token = h("input", { name: "token", type: "password", autocomplete: "off", id: "proposal-token" });
  token.value = sessionStorage.getItem("objstore-token") || "";
  const said = h("span", { class: "said", role: "status" });
  show(h("h2", {}, "Proposals"),
    h("p", { class: "note" }, "The triage lifecycle proposes to quarantine a flaky test, release a quiet one, close a quiet rule's issue or " +
      "reopen a closed rule whose failures came back. A proposal activates when any window crosses its threshold and stays until every " +
      "window is under a lower one. Nothing is applied until a person confirms it (unless the team serves with --auto-apply)."),
    h("label", {}, "token ", token), " ", said,
    data.active.length === 0 ? h("p", { class: "note" }, "No proposal is active.")
      : h("ul", { id: "proposals" }, data.active.map((p) => h("li", { "data-proposal": p.id },
        h("strong", {}, p.id), " · at activation ", Object.entries(p.measures).map(([w, m]) => `${w}: ${m}`).join(", "),
        " · active since ", when(p.since),
        h("p", { class: "muted" }, p.why),
        h("button", { type: "button" }, "Confirm")))),
    h("h3", {}, "Events"),
    data.history.length === 0 ? h("p", { class: "note" }, "None yet.")
      : h("ul", { id: "lifecycle-events" }, data.history.map((e) => h("li", {}, when(e.at), ` ${e.event}: ${e.proposal.id}`))));
  for (const button of document.querySelectorAll("#proposals button")) {
    button.addEventListener("click", async () => {
      const on = navigationCount();
      sessionStorage.setItem("objstore-token", token.value || "");
      const response = await fetch("/api/proposals", {
        method: "POST",
        headers: { "content-type": "application/json", ...(token.value ? { authorization: `Bearer ${token.value}` } : {}) },
        body: JSON.stringify({ confirm: button.closest("li").dataset.proposal }),
      });
      const answer = await response.json().catch(() => ({ error: `the server answered ${response.status}` }));
      if (navigationCount() !== on) return; // the reader went elsewhere meanwhile
      if (!response.ok) said.textContent = answer.error || `the server answered ${response.status}`;
      else await proposalsView().catch(fail);
    });
  }
}
