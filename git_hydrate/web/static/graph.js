// The dependency graph of the open tasks, drawn as SVG from the server's layout.
"use strict";

function clip(text, size) {
  return text.length > size ? `${text.slice(0, size - 1)}…` : text;
}

function draw(data) {
  const w = data.node_w;
  const h = data.node_h;
  const place = new Map(data.nodes.map((n) => [n.task_id, n]));
  const root = svg("svg", { width: data.width + 20, height: data.height + 20, id: "graph-svg",
    viewBox: `-10 -10 ${data.width + 20} ${data.height + 20}`, role: "img", "aria-label": "dependency graph" });
  root.append(svg("defs", {}, svg("marker", { id: "arrow", viewBox: "0 0 10 10", refX: "10", refY: "5",
    markerWidth: "7", markerHeight: "7", orient: "auto-start-reverse" }, svg("path", { d: "M 0 0 L 10 5 L 0 10 z", fill: "#8a94a8" }))));
  for (const edge of data.edges) {
    const a = place.get(edge.from);
    const b = place.get(edge.to);
    if (!a || !b) continue;
    const x1 = a.x + w; const y1 = a.y + h / 2; const x2 = b.x; const y2 = b.y + h / 2;
    const bend = Math.max(30, (x2 - x1) / 2);
    root.append(svg("path", { class: edge.kind === "part" ? "edge part" : "edge", "data-from": edge.from, "data-to": edge.to,
      d: `M ${x1} ${y1} C ${x1 + bend} ${y1}, ${x2 - bend} ${y2}, ${x2} ${y2}`, "marker-end": "url(#arrow)" }));
  }
  for (const n of data.nodes) {
    const classes = ["node", n.status, n.cycle ? "cycle" : ""].join(" ").trim();
    const status = n.status === "not-here" ? "not here" : n.status;
    const label = n.holder ? `${status} · ${n.holder}` : status;
    root.append(svg("a", { href: taskHref(n.task_id), class: classes, "data-task": n.task_id },
      svg("title", { text: `${n.task_id}: ${n.title} (${label}${n.cycle ? ", on a cycle" : ""})` }),
      svg("rect", { x: n.x, y: n.y, width: w, height: h }),
      svg("text", { x: n.x + 8, y: n.y + 17, class: "id", text: clip(`${n.task_id} · ${label}`, 28) }),
      svg("text", { x: n.x + 8, y: n.y + 34, text: clip(n.title, 25) })));
  }
  return root;
}

async function load() {
  try {
    const data = await getJSON("/api/graph");
    const parts = [`${thousands(data.open)} open tasks; ${thousands(data.nodes.length)} drawn`];
    if (data.lone) parts.push(`${thousands(data.lone)} with no open dependency or dependent not drawn`);
    if (data.left_out && data.cut) parts.push(`the largest group is drawn from its start, ${thousands(data.left_out)} later tasks (and smaller groups) left out`);
    else if (data.left_out) parts.push(`${thousands(data.left_out)} in smaller groups left out`);
    document.getElementById("graph-note").textContent =
      `${parts.join("; ")}. An arrow runs from a dependency to the task waiting for it; a dashed one from a part to its parent.`;
    clear(document.getElementById("graph")).append(data.nodes.length ? draw(data)
      : el("p", { class: "muted", text: "no open task waits for another" }));
    setStatus(`read at ${new Date().toLocaleTimeString()}`);
    document.body.dataset.loaded = data.version;
  } catch (err) {
    showError("graph", err);
  }
}

load();
pollVersion(load);
