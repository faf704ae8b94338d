// The board: columns by station, filters, pages of cards, refreshed when refs move.
"use strict";

const PAGE = 50;
const FILTERS = ["tag", "kind", "holder"];

// The holder of unclaimed tasks is "" (a claim's holder name is never empty), the
// value of "any" too: the option that asks for nobody is told apart by a mark.
function nobodyOption(count) {
  const text = count === undefined ? "(nobody)" : `(nobody) (${count})`;
  return el("option", { value: "", "data-nobody": "1", text });
}

function isNobody(option) {
  return Boolean(option && option.dataset.nobody);
}

// The address's filters are sent as they are until a control changes, so a value
// the server does not take (kind=nope, archived=yes) is its error on the page,
// not dropped on the way.
let fromAddress = addressFilters();

function addressFilters() {
  const given = new URLSearchParams(location.search);
  const params = new URLSearchParams();
  for (const name of [...FILTERS, "archived"]) {
    for (const value of given.getAll(name)) params.append(name, value);
  }
  return params;
}

function filterParams() {
  if (fromAddress) return new URLSearchParams(fromAddress);
  const params = new URLSearchParams();
  for (const name of FILTERS) {
    const select = document.getElementById(`f-${name}`);
    if (select.value || isNobody(select.selectedOptions[0])) params.set(name, select.value);
  }
  if (document.getElementById("f-archived").checked) params.set("archived", "1");
  return params;
}

function card(item) {
  const top = el("div", { class: "top" },
    el("a", { href: taskHref(item.task_id), class: "task-link", text: item.task_id }),
    item.priority ? el("span", { class: `badge p${item.priority}`, text: `P${item.priority}` }) : null,
    item.kind ? el("span", { class: "badge kind", text: item.kind }) : null,
    item.archived ? el("span", { class: "badge archived", text: "archived" }) : null);
  const body = [top];
  if (item.error) {
    body.push(el("div", { class: "error", text: item.error }));
    return el("div", { class: "card damaged", "data-task": item.task_id }, body);
  }
  body.push(el("div", { class: "title", text: item.title }));
  if (item.holder) {
    const since = item.claim_age === null ? "" : ` · claimed ${age(item.claim_age)} ago`;
    body.push(el("div", { class: "meta holder", text: `held by ${item.holder}${since}` }));
  }
  if (item.depends.length) {
    body.push(el("div", { class: "meta deps" }, "depends on ",
      item.depends.map((dep) => el("a", {
        href: taskHref(dep.task_id),
        class: dep.waiting ? "dep waiting" : "dep",
        title: dep.waiting ? `waiting: ${dep.station ?? "not here"}` : dep.station,
        text: dep.waiting ? `${dep.task_id} (waiting: ${dep.station ?? "not here"})` : dep.task_id,
      })),
      item.depends_more ? ` and ${thousands(item.depends_more)} more` : ""));
  }
  if (item.parent) {
    body.push(el("div", { class: "meta parent" }, "parent ",
      el("a", { href: taskHref(item.parent), text: item.parent })));
  }
  if (item.children.length) {
    // (a card lists its first parts only: the server counts them all)
    const open = item.parts_open;
    const parts = item.children.length + item.children_more;
    body.push(el("div", { class: open ? "meta parts waiting" : "meta parts",
      text: `${thousands(parts)} parts, ${thousands(open)} not done` }));
  }
  if (item.tags.length) {
    body.push(el("div", { class: "tags" }, item.tags.map((t) => el("span", { class: "tag", text: t }))));
  }
  body.push(el("div", { class: "meta", text: `${item.attachments} attachments` }));
  return el("div", { class: item.waiting ? "card waiting" : "card", "data-task": item.task_id }, body);
}

function column(col) {
  const list = el("div", { class: "cards" }, col.items.map(card));
  const node = el("section", { class: "column", "data-station": col.station },
    el("h2", { text: `${col.station} (${thousands(col.total)})` }), list);
  let loaded = col.items.length;
  if (loaded < col.total) {
    const more = el("button", { type: "button", class: "more", text: `show more (${thousands(col.total - loaded)} left)` });
    more.addEventListener("click", async () => {
      const params = filterParams();
      params.set("station", col.station);
      params.set("offset", String(loaded));
      params.set("limit", String(PAGE));
      try {
        const page = await getJSON(`/api/tasks?${params}`);
        page.items.forEach((item) => list.append(card(item)));
        loaded += page.items.length;
        if (loaded >= page.total || !page.items.length) more.remove();
        else more.textContent = `show more (${thousands(page.total - loaded)} left)`;
      } catch (err) {
        more.textContent = String(err.message || err);
      }
    });
    node.append(more);
  }
  return node;
}

function fillFacet(name, values) {
  const select = document.getElementById(`f-${name}`);
  const chosen = select.value;
  const nobody = isNobody(select.selectedOptions[0]);
  clear(select).append(el("option", { value: "", text: "any" }));
  for (const { value, count } of values) {
    select.append(name === "holder" && value === ""
      ? nobodyOption(count)
      : el("option", { value, text: `${value} (${count})` }));
  }
  if (nobody) {
    const option = [...select.options].find(isNobody) || select.appendChild(nobodyOption());
    option.selected = true;
    return;
  }
  if (chosen && !values.some((v) => v.value === chosen)) {
    select.append(el("option", { value: chosen, text: chosen }));
  }
  select.value = chosen;
}

async function load() {
  const params = filterParams();
  history.replaceState(null, "", params.toString() ? `/?${params}` : "/");
  params.set("limit", String(PAGE));
  try {
    const data = await getJSON(`/api/board?${params}`);
    fillFacet("tag", data.facets.tags);
    fillFacet("kind", data.facets.kinds);
    fillFacet("holder", data.facets.holders);
    clear(document.getElementById("board")).append(...data.columns.map(column));
    document.getElementById("counts").textContent =
      `${thousands(data.shown)} of ${thousands(data.total)} tasks`;
    setStatus(`read at ${new Date().toLocaleTimeString()}`);
    document.body.dataset.loaded = data.version;
  } catch (err) {
    showError("board", err);
  }
}

function start() {
  const given = new URLSearchParams(location.search);
  for (const name of FILTERS) {
    const value = given.get(name);
    const select = document.getElementById(`f-${name}`);
    if (name === "holder" && value === "") {
      const option = nobodyOption();
      select.append(option);
      option.selected = true;
    } else if (value) {
      select.append(el("option", { value, text: value }));
      select.value = value;
    }
  }
  document.getElementById("f-archived").checked = given.get("archived") === "1";
  document.getElementById("filters").addEventListener("change", () => {
    fromAddress = null;
    load();
  });
  document.getElementById("filters").addEventListener("submit", (e) => e.preventDefault());
  load();
  pollVersion(load);
}

start();
