// Shared helpers of the git-hydrate pages. Task text is untrusted: it only ever
// enters the page through textContent and setAttribute on fixed attribute
// names, never as markup (no HTML parser is called from these scripts).
"use strict";

const SVG_NS = "http://www.w3.org/2000/svg";

function el(tag, props, ...children) {
  const node = document.createElement(tag);
  setProps(node, props);
  append(node, children);
  return node;
}

function svg(tag, attrs, ...children) {
  const node = document.createElementNS(SVG_NS, tag);
  setProps(node, attrs);
  append(node, children);
  return node;
}

function setProps(node, props) {
  for (const [name, value] of Object.entries(props || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (name === "text") node.textContent = String(value);
    else if (name === "onclick") node.addEventListener("click", value);
    else if (name === "onchange") node.addEventListener("change", value);
    else if (name === "oninput") node.addEventListener("input", value);
    else if (name === "href") node.setAttribute("href", safeHref(value));
    else node.setAttribute(name, value === true ? "" : String(value));
  }
}

function append(node, children) {
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

// Only links to this server's own pages are made.
function safeHref(value) {
  const text = String(value);
  return text.startsWith("/") && !text.startsWith("//") ? text : "#";
}

function taskHref(taskId) {
  return "/task/" + encodeURIComponent(taskId);
}

function clear(node) {
  while (node.firstChild) node.removeChild(node.firstChild);
  return node;
}

async function getJSON(url) {
  const response = await fetch(url, { headers: { Accept: "application/json" } });
  let data;
  try {
    data = await response.json();
  } catch (err) {
    throw new Error(`${response.status} ${response.statusText}`);
  }
  if (!response.ok) throw new Error(data && data.error ? data.error : String(response.status));
  return data;
}

function thousands(n) {
  return n === null || n === undefined ? "–" : Number(n).toLocaleString("en-US");
}

function age(seconds) {
  if (seconds === null || seconds === undefined) return "";
  if (seconds < 60) return `${seconds}s`;
  if (seconds < 3600) return `${Math.floor(seconds / 60)}m`;
  if (seconds < 86400) return `${Math.floor(seconds / 3600)}h`;
  return `${Math.floor(seconds / 86400)}d`;
}

function showError(where, err) {
  const node = document.getElementById(where);
  if (node) clear(node).append(el("p", { class: "error", text: String(err.message || err) }));
}

// Calls onChange() whenever a ref under refs/hydrate/ moves (every few seconds).
function pollVersion(onChange, every = 3000) {
  let known = null;
  const tick = async () => {
    try {
      const { version } = await getJSON("/api/version");
      if (known !== null && version !== known) onChange(version);
      known = version;
      document.body.dataset.version = version;
    } catch (err) {
      // the server stopped: keep what is shown
    }
  };
  tick();
  return setInterval(tick, every);
}

function setStatus(text) {
  const node = document.getElementById("status");
  if (node) node.textContent = text;
}
