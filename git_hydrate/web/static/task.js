// One task: fields, the budget control, attachments at that budget, the prompt,
// checkpoints, work commits and history.
"use strict";

const TASK_ID = decodeURIComponent(location.pathname.split("/").pop());
const API = `/api/task/${encodeURIComponent(TASK_ID)}`;
const PAGE = 100;
const state = { offset: 0, budget: null, rescale: false, prompt: "", timer: null };

function dl(pairs) {
  const node = el("dl", { class: "fields" });
  for (const [name, value] of pairs) {
    if (value === null || value === undefined || value === "" || (Array.isArray(value) && !value.length)) continue;
    node.append(el("dt", { text: name }), el("dd", {}, value));
  }
  return node;
}

function list(items, make) {
  return el("ul", {}, items.map((item) => el("li", {}, make(item))));
}

function pathNotes(items) {
  return list(items, (p) => (p.note ? `${p.path} — ${p.note}` : p.path));
}

// The first items of a long list (the server sends at most 100), then how many more.
function more(items, count) {
  return count ? [...items, ` and ${thousands(count)} more (git hydrate show --json for all)`] : items;
}

function renderFields(task) {
  document.title = `git hydrate: ${task.task_id}`;
  const head = el("h1", {}, el("span", { class: "task-id", text: task.task_id }), " ",
    el("span", { class: "task-title", text: task.title }));
  const deps = task.depends.map((d) => el("a", {
    href: taskHref(d.task_id), class: d.station === "done" ? "dep" : "dep waiting",
    text: d.station === "done" ? d.task_id : `${d.task_id} (waiting: ${d.station ?? "not here"})`,
  }));
  const parts = task.children.map((c) => el("a", {
    href: taskHref(c.task_id), class: ["done", "cancelled"].includes(c.station) ? "dep" : "dep waiting",
    text: `${c.task_id} (${c.station})`,
  }));
  const dependents = task.dependents.map((id) => el("a", { href: taskHref(id), class: "dep", text: id }));
  clear(document.getElementById("fields")).append(head, dl([
    ["station", task.status + (task.archived ? " (archived)" : "")],
    ["kind", task.kind],
    ["priority", `P${task.priority}`],
    ["holder", task.assignee ? `${task.assignee} since ${task.claimed_at}` : ""],
    ["parent", task.parent ? el("a", { href: taskHref(task.parent), text: task.parent }) : ""],
    ["tags", more(task.tags.map((t) => el("span", { class: "tag", text: t })), task.tags_more)],
    ["objective", task.objective],
    ["acceptance", task.acceptance],
    ["criteria", task.acceptance_criteria.length ? list(task.acceptance_criteria, (c) => c) : ""],
    ["scope", task.scope.length ? list(task.scope, (s) => s) : ""],
    ["files in play", task.files.length ? pathNotes(task.files) : ""],
    ["tests", task.tests.length ? pathNotes(task.tests) : ""],
    ["depends on", more(deps, task.depends_more)],
    ["needed by", more(dependents, task.dependents_more)],
    ["parts", more(parts, task.children_more)],
    ["token budget", task.token_budget ? thousands(task.token_budget) : ""],
    ["created", task.created_at],
    ["attachments", thousands(task.attachments)],
  ]));
  const checkpoints = task.checkpoints.map((c, i) => el("li", {},
    el("b", { text: `#${i + 1} ${c.at}` }), c.author ? ` by ${c.author}` : "",
    ` · ${thousands(c.tokens)} tokens`, el("div", { text: c.summary }),
    c.evidence ? el("div", { class: "muted", text: `evidence: ${c.evidence}` }) : "",
    c.next_step ? el("div", { class: "muted", text: `next: ${c.next_step}` }) : ""));
  clear(document.getElementById("timeline")).append(checkpoints.length
    ? el("ol", { class: "timeline" }, checkpoints) : el("p", { class: "muted", text: "no checkpoint yet" }));
  const rows = task.log.map((e) => el("tr", {}, el("td", { text: e.when }), el("td", { text: e.action }),
    el("td", { text: e.who }), el("td", { text: e.summary })));
  clear(document.getElementById("history")).append(
    el("table", {}, el("tr", {}, ["when", "action", "who", "summary"].map((h) => el("th", { text: h }))), rows));
}

function budgetParams() {
  const params = new URLSearchParams();
  if (state.budget === null) return params;
  const unit = document.getElementById("unit").value;
  params.set(unit === "tokens" ? "max_tokens" : "max_bytes", String(state.budget));
  if (unit === "tokens") params.set("encoding", document.getElementById("encoding").value);
  params.set("outline", document.getElementById("outline").checked ? "1" : "0");
  return params;
}

function renderNumbers(p, error) {
  const node = clear(document.getElementById("numbers"));
  if (error) {
    node.append(el("p", { class: "error", text: error }));
    return;
  }
  const item = (label, value, id) => el("span", {}, `${label} `, el("b", { id, text: value }));
  node.append(
    item("prompt", `${thousands(p.prompt_bytes)} bytes`, "n-prompt-bytes"),
    item("of", p.max_bytes === null ? "no byte limit" : `${thousands(p.max_bytes)} bytes`, "n-max-bytes"),
    p.max_tokens ? item("tokens", `${thousands(p.token_count)} of ${thousands(p.max_tokens)}`, "n-tokens") : "",
    item("kept", thousands(p.kept), "n-kept"),
    item("outlined", thousands(p.outlined), "n-outlined"),
    item("dropped", `${thousands(p.dropped)} (${thousands(p.dropped_budget)} budget, ${thousands(p.dropped_expired)} expired)`, "n-dropped"),
    item("all would fit in", `${thousands(p.needed_bytes)} bytes` +
      (p.needed_tokens === null || p.needed_tokens === undefined ? "" : `, ${thousands(p.needed_tokens)} tokens`), "n-needed"));
}

function renderAttachments(data) {
  const pager = clear(document.getElementById("pager"));
  const last = Math.max(0, data.total - 1);
  const prev = el("button", { type: "button", text: "previous", disabled: data.offset === 0 });
  const next = el("button", { type: "button", text: "next", disabled: data.offset + PAGE > last });
  prev.addEventListener("click", () => { state.offset = Math.max(0, data.offset - PAGE); refresh(false); });
  next.addEventListener("click", () => { state.offset = data.offset + PAGE; refresh(false); });
  const upto = Math.min(data.total, data.offset + data.items.length);
  pager.append(prev, next, el("span", { class: "muted",
    text: data.total ? `${thousands(data.offset + 1)}–${thousands(upto)} of ${thousands(data.total)}` : "no attachments" }));
  const head = el("tr", {}, ["#", "status", "source", "bytes", "priority", "score", "why ranked here", "hash"].map(
    (h) => el("th", { text: h, class: h === "bytes" || h === "#" ? "num" : null })));
  const rows = data.items.map((a) => el("tr", { class: a.status, "data-hash": a.hash },
    el("td", { class: "num", text: a.rank }),
    el("td", { class: "status", text: a.why ? `${a.status} (${a.why})` : a.status }),
    el("td", { class: "source", text: a.source }),
    el("td", { class: "num", text: thousands(a.size) }),
    el("td", { class: "num", text: a.priority }),
    el("td", { class: "num", text: a.score === null ? "" : a.score.toFixed(2) }),
    el("td", { class: "reason", text: a.reason }),
    el("td", { class: "hash", title: a.hash, text: a.hash.slice(0, 12) })));
  clear(document.getElementById("attachments")).append(el("table", { id: "attachment-table" }, head, rows));
}

// A tiny Markdown view of the prompt: headings, fenced blocks, list items and
// paragraphs, all as text.
function renderMarkdown(text) {
  const out = [];
  const lines = text.split("\n");
  let fence = null;
  let para = [];
  const flush = () => { if (para.length) out.push(el("p", { text: para.join("\n") })); para = []; };
  for (const line of lines) {
    if (fence !== null) {
      if (line.startsWith(fence.mark)) { out.push(el("pre", {}, el("code", { text: fence.lines.join("\n") }))); fence = null; }
      else fence.lines.push(line);
      continue;
    }
    const opening = /^(`{3,}|~{3,})/.exec(line);
    if (opening) { flush(); fence = { mark: opening[1], lines: [] }; continue; }
    const heading = /^(#{1,6})\s+(.*)$/.exec(line);
    if (heading) { flush(); out.push(el(`h${Math.min(6, heading[1].length + 2)}`, { text: heading[2] })); continue; }
    if (!line.trim()) { flush(); continue; }
    para.push(line);
  }
  if (fence !== null) out.push(el("pre", {}, el("code", { text: fence.lines.join("\n") })));
  flush();
  return out;
}

function renderPrompt(data) {
  state.prompt = data.prompt;
  document.getElementById("prompt-raw").textContent = data.prompt;
  clear(document.getElementById("prompt-rendered")).append(...renderMarkdown(data.prompt));
}

function setBudgetControl(p) {
  const unit = document.getElementById("unit").value;
  const value = unit === "tokens" ? p.max_tokens : p.max_bytes;
  if (value === null || value === undefined) return;
  state.budget = value;
  const needed = unit !== "tokens" ? p.needed_bytes
    : (p.needed_tokens === null || p.needed_tokens === undefined) ? Math.ceil(p.needed_bytes / 2) : p.needed_tokens;
  const top = Math.max(value, needed, 1);
  const slider = document.getElementById("slider");
  slider.max = String(Math.ceil(top * 1.1));
  slider.value = String(value);
  document.getElementById("amount").value = String(value);
  document.getElementById("outline").checked = p.outline;
}

async function refresh(withPrompt = true) {
  const params = budgetParams();
  params.set("offset", String(state.offset));
  params.set("limit", String(PAGE));
  try {
    const data = await getJSON(`${API}/attachments?${params}`);
    renderAttachments(data);
    renderNumbers(data.packing, data.packing_error);
    if (data.packing && (state.budget === null || state.rescale)) {
      setBudgetControl(data.packing);
      state.rescale = false;
    }
    if (data.packing && withPrompt) renderPrompt(await getJSON(`${API}/prompt?${budgetParams()}`));
    document.body.dataset.packed = params.toString();
  } catch (err) {
    showError("attachments", err);
  }
}

function budgetChanged(value) {
  const number = Number.parseInt(value, 10);
  if (!Number.isFinite(number) || number < 1) return;
  state.budget = number;
  document.getElementById("amount").value = String(number);
  document.getElementById("slider").value = String(number);
  clearTimeout(state.timer);
  state.timer = setTimeout(() => { state.offset = 0; refresh(true); }, 200);
}

async function loadCommits() {
  const data = await getJSON(`${API}/commits?limit=100`);
  const rows = data.items.map((c) => el("tr", {}, el("td", { class: "hash", text: c.commit.slice(0, 12) }),
    el("td", { text: c.when }), el("td", { text: c.who }), el("td", { text: c.subject }),
    el("td", { class: "hash", text: c.packet || "–" })));
  clear(document.getElementById("commits")).append(data.total
    ? el("table", {}, el("tr", {}, ["commit", "when", "who", "subject", "packet the worker saw"].map((h) => el("th", { text: h }))), rows)
    : el("p", { class: "muted", text: "no commit carries a Hydrate-Task trailer for this task" }));
}

async function loadAll() {
  try {
    renderFields(await getJSON(API));
  } catch (err) {
    showError("fields", err);
    return;
  }
  setStatus(`read at ${new Date().toLocaleTimeString()}`);
  await refresh(true);
  try { await loadCommits(); } catch (err) { showError("commits", err); }
}

function start() {
  document.getElementById("slider").addEventListener("input", (e) => budgetChanged(e.target.value));
  document.getElementById("amount").addEventListener("change", (e) => budgetChanged(e.target.value));
  document.getElementById("budget").addEventListener("submit", (e) => e.preventDefault());
  document.getElementById("outline").addEventListener("change", () => refresh(true));
  document.getElementById("encoding").addEventListener("change", () => refresh(true));
  document.getElementById("unit").addEventListener("change", (e) => {
    // about 4 bytes a token: a starting point the control then moves from
    const tokens = e.target.value === "tokens";
    if (state.budget !== null) state.budget = Math.max(1, tokens ? Math.round(state.budget / 4) : state.budget * 4);
    state.offset = 0;
    state.rescale = true;
    refresh(true);
  });
  const raw = document.getElementById("prompt-raw");
  const rendered = document.getElementById("prompt-rendered");
  const showRaw = (on) => {
    raw.hidden = !on; rendered.hidden = on;
    document.getElementById("show-raw").setAttribute("aria-pressed", String(on));
    document.getElementById("show-rendered").setAttribute("aria-pressed", String(!on));
  };
  document.getElementById("show-raw").addEventListener("click", () => showRaw(true));
  document.getElementById("show-rendered").addEventListener("click", () => showRaw(false));
  document.getElementById("copy").addEventListener("click", async () => {
    const note = document.getElementById("copied");
    try {
      await navigator.clipboard.writeText(state.prompt);
      note.textContent = `copied ${thousands(new TextEncoder().encode(state.prompt).length)} bytes`;
    } catch (err) {
      note.textContent = "copy refused by the browser: select the raw prompt instead";
    }
  });
  loadAll();
  pollVersion(loadAll);
}

start();
