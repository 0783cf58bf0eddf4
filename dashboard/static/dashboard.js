// The page: one EventSource to the dashboard, and the DOM kept in step with it.
//
// The dashboard sends a "snapshot" when the page connects (everything it
// knows), then "changes": batches of the objects added, updated or deleted
// (at most ten a second), and a
// "trouble" when one of its watches cannot reach the API server or is
// refused. No polling and no reloads: when the stream breaks, EventSource
// connects again by itself and the next snapshot puts the page right.
//
// Every name, label and message from the cluster is set as textContent,
// never as HTML: a pod named or labelled "<script>..." shows those
// characters and runs nothing.
"use strict";

const KINDS = ["nodes", "pods", "services", "endpointslices", "events", "namespaces"];
const EVENTS_SHOWN = 40;
const LEAVE_MS = 450;                       // as long as the "leave" animation in dashboard.css
const FLOOD_PER_SECOND = 20;                // more pod changes a second than an eye can follow: no transitions

const store = Object.fromEntries(KINDS.map((kind) => [kind, new Map()]));
let troubles = {};
let synced = {};
let streamOpen = false;
let namespace = new URLSearchParams(location.hash.slice(1)).get("ns") || "";
// The element drawn for each pod and node, by key: found without searching
// the document, which a 1,000-pod snapshot would do a thousand times.
const cards = new Map();
const columns = new Map();

// ------------------------------------------------------------ small helpers

function el(tag, className, text) {
  const element = document.createElement(tag);
  if (className) element.className = className;
  if (text !== undefined) element.textContent = text;
  return element;
}

function cpuText(milli) {
  return milli % 1000 === 0 ? String(milli / 1000) : `${milli}m`;
}

function memoryText(bytes) {
  const units = [["Gi", 2 ** 30], ["Mi", 2 ** 20], ["Ki", 2 ** 10]];
  for (const [unit, size] of units) {
    if (bytes >= size) return `${Math.round((bytes / size) * 10) / 10}${unit}`;
  }
  return String(bytes);
}

function shown(obj) {
  return !namespace || obj.namespace === namespace;
}

// ------------------------------------------------------------ what needs drawing

// Changes arrive faster than a screen redraws (a rollout, a benchmark): they
// are noted here and drawn once per frame. In a flood, at most once every
// FLOOD_DRAW_MS: each redraw lays out and paints columns of hundreds of
// cards, and twenty tabs on one machine cannot do that ten times a second.
const dirty = { pods: new Set(), nodes: new Set(), services: false, events: false, namespaces: false, status: false };
const FLOOD_DRAW_MS = 200;
let drawScheduled = false;
let lastDraw = -Infinity;

function schedule() {
  if (drawScheduled) return;
  drawScheduled = true;
  const wait = flooded() ? lastDraw + FLOOD_DRAW_MS - performance.now() : 0;
  if (wait > 0) setTimeout(() => requestAnimationFrame(draw), wait);
  else requestAnimationFrame(draw);
}

function markAll() {
  for (const key of store.pods.keys()) dirty.pods.add(key);
  for (const key of document.querySelectorAll("[data-pod]")) dirty.pods.add(key.dataset.pod);
  for (const key of store.nodes.keys()) dirty.nodes.add(key);
  for (const column of document.querySelectorAll("[data-node]")) dirty.nodes.add(column.dataset.node);
  dirty.services = dirty.events = dirty.namespaces = dirty.status = true;
  schedule();
}

// [START flood]
// A card's transition lets an eye follow a pod that comes, moves or goes.
// In a flood (a Deployment scaled to 500, a benchmark) no eye follows a
// hundred a second, and the transitions would keep the page redrawing every
// frame, in every tab, for as long as the flood lasts: past FLOOD_PER_SECOND
// pod changes in the last second, cards (and new lines in the Events tail)
// come and go without one.
const recentPodChanges = [];                // when each of the last second's pod changes arrived

function notePodChanges(count) {
  const now = performance.now();
  for (let i = 0; i < Math.min(count, FLOOD_PER_SECOND + 1); i++) recentPodChanges.push(now);
}

function flooded() {
  const now = performance.now();
  while (recentPodChanges[0] < now - 1000) recentPodChanges.shift();
  return recentPodChanges.length > FLOOD_PER_SECOND;
}
// [END flood]

function noteChange(kind, key, before, after) {
  if (kind === "pods") {
    notePodChanges(1);
    dirty.pods.add(key);
    for (const pod of [before, after]) if (pod && pod.node) dirty.nodes.add(pod.node);
  } else if (kind === "nodes") {
    dirty.nodes.add(key);
  } else if (kind === "services" || kind === "endpointslices") {
    dirty.services = true;
  } else if (kind === "events") {
    dirty.events = true;
  } else if (kind === "namespaces") {
    dirty.namespaces = true;
  }
  dirty.status = true;
  schedule();
}

function draw() {
  drawScheduled = false;
  lastDraw = performance.now();
  for (const name of dirty.nodes) drawNode(name);
  for (const key of dirty.pods) drawPod(key);
  for (const name of dirty.nodes) drawUsage(name);
  dirty.nodes.clear();
  dirty.pods.clear();
  if (dirty.services) drawServices();
  if (dirty.events) drawEvents();
  if (dirty.namespaces) drawNamespaces();
  if (dirty.status) drawStatus();
  dirty.services = dirty.events = dirty.namespaces = dirty.status = false;
}

// ------------------------------------------------------------ node columns

function column(name) {
  let found = columns.get(name);
  if (found) return found;
  found = el("section", "column entering");
  found.dataset.node = name;
  columns.set(name, found);
  const head = el("header", "column-head");
  head.append(el("h2", "node-name", name), el("p", "node-status"), el("p", "node-flags"), el("div", "usage"));
  found.append(head, el("div", "pods"));
  const board = document.getElementById("board");
  const after = [...board.querySelectorAll("[data-node]")].find((c) => c.dataset.node > name);
  board.insertBefore(found, after || null);
  return found;
}

function podsOn(name) {
  return [...store.pods.values()].filter((pod) => pod.node === name);
}

// [START draw-node]
function drawNode(name) {
  const node = store.nodes.get(name);
  if (!node && podsOn(name).length === 0) {
    leave(columns.get(name), "node");
    return;
  }
  const col = column(name);
  // A pod may name a node that has no Node object (yet): its column says so.
  const ready = node ? node.ready : "Unknown";
  col.dataset.ready = ready;                 // True, False or Unknown: the colour
  col.dataset.state = node ? node.status : "Unknown";
  const words = node ? [node.status, node.cordoned ? "SchedulingDisabled" : ""] : ["no Node object"];
  col.querySelector(".node-status").textContent = words.filter(Boolean).join(", ");
  col.querySelector(".node-status").title = node ? node.reason : "";
  col.classList.toggle("cordoned", Boolean(node && node.cordoned));
  col.querySelector(".node-flags").textContent = node && node.taints.length ? `taints: ${node.taints.join(", ")}` : "";
}
// [END draw-node]

function drawUsage(name) {
  const node = store.nodes.get(name);
  const col = columns.get(name);
  if (!col) return;
  const usage = col.querySelector(".usage");
  usage.replaceChildren();
  if (!node) return;
  // Requests of the pods bound here (those that count for the scheduler:
  // not the finished ones), against what the node offers.
  const pods = podsOn(name).filter((pod) => pod.tone !== "done");
  const rows = [
    ["CPU", pods.reduce((sum, pod) => sum + pod.cpu, 0), node.cpu, cpuText],
    ["Memory", pods.reduce((sum, pod) => sum + pod.memory, 0), node.memory, memoryText],
    ["Pods", pods.length, node.pods, String],
  ];
  for (const [label, used, total, text] of rows) {
    if (!total) continue;
    const row = el("div", "usage-row");
    const meter = el("meter");
    meter.min = 0;
    meter.max = total;
    meter.value = Math.min(used, total);
    meter.high = total * 0.85;
    meter.setAttribute("aria-label", `${label} requested`);
    row.append(el("span", "usage-label", label), meter, el("span", "usage-text", `${text(used)} / ${text(total)}`));
    usage.append(row);
  }
}

// ------------------------------------------------------------ pod cards

function podCard(key) {
  return cards.get(key);
}

// Each column's pods, their keys in order: where a new card goes is a
// binary search, not a walk through every card (a column may hold hundreds).
const sortedKeys = new WeakMap();           // a column's .pods element -> its pods' keys, sorted

function keysIn(list) {
  if (!sortedKeys.has(list)) sortedKeys.set(list, []);
  return sortedKeys.get(list);
}

function firstAfter(keys, key) {
  let low = 0;
  let high = keys.length;
  while (low < high) {
    const middle = (low + high) >> 1;
    if (keys[middle] < key) low = middle + 1;
    else high = middle;
  }
  return low;
}

function placeCard(list, card, key) {
  const keys = keysIn(list);
  const at = firstAfter(keys, key);
  list.insertBefore(card, at < keys.length ? cards.get(keys[at]) : null);
  keys.splice(at, 0, key);
}

function unplaceCard(card, key) {
  const keys = card.parentElement ? keysIn(card.parentElement) : [];
  const at = firstAfter(keys, key);
  if (keys[at] === key) keys.splice(at, 1);
}

// [START draw-pod]
function drawPod(key) {
  const pod = store.pods.get(key);
  let card = podCard(key);
  if (!pod || !shown(pod)) {
    leave(card, "pod");
    return;
  }
  const home = pod.node ? column(pod.node) : document.querySelector('[data-column="pending"]');
  if (card && card.closest(".column") !== home) {
    leave(card, "pod");                      // it moved (bound to a node): leave here, enter there
    card = null;
  }
  if (!card) {
    card = el("article", flooded() ? "pod" : "pod entering");
    card.dataset.pod = key;
    card.append(el("h3", "pod-name"), el("p", "pod-status"), el("p", "pod-meta"), el("p", "pod-waiting"));
    placeCard(home.querySelector(".pods"), card, key);
    cards.set(key, card);
    if (card.classList.contains("entering")) {
      card.addEventListener("animationend", () => card.classList.remove("entering"), { once: true });
    }
  }
  card.dataset.tone = pod.tone;              // the colour; the words below say the same
  card.dataset.status = pod.status;
  card.querySelector(".pod-name").textContent = namespace ? pod.name : `${pod.namespace}/${pod.name}`;
  card.querySelector(".pod-status").textContent = `${pod.status} · ${pod.ready} ready` +
    (pod.restarts ? ` · ${pod.restarts} restart${pod.restarts === 1 ? "" : "s"}` : "");
  card.querySelector(".pod-meta").textContent = [pod.ip, pod.owner].filter(Boolean).join(" · ");
  card.querySelector(".pod-waiting").textContent = pod.node ? "" : pod.waiting;
  card.title = Object.entries(pod.labels).map(([k, v]) => `${k}=${v}`).join("\n");
}
// [END draw-pod]

// An element on its way out loses its key at once (so it is no longer "the"
// card of that pod) and fades for a moment, so an eye can follow it.
function leave(element, what) {
  if (!element || element.classList.contains("leaving")) return;
  if (what === "pod") unplaceCard(element, element.dataset.pod);
  (what === "pod" ? cards : columns).delete(element.dataset[what]);
  delete element.dataset[what];
  if (what === "pod" && flooded()) {
    element.remove();
    return;
  }
  element.dataset.leaving = what;
  element.classList.add("leaving");
  setTimeout(() => element.remove(), LEAVE_MS);
}

// ------------------------------------------------------------ services, events, namespaces

function drawServices() {
  const body = document.getElementById("services");
  const endpoints = new Map();
  for (const slice of store.endpointslices.values()) {
    const key = `${slice.namespace}/${slice.service}`;
    endpoints.set(key, (endpoints.get(key) || []).concat(slice.addresses));
  }
  const rows = [...store.services.values()].filter(shown).sort((a, b) => (a.key < b.key ? -1 : 1));
  body.replaceChildren(...rows.map((service) => {
    const row = el("tr");
    row.dataset.service = service.key;
    const addresses = endpoints.get(service.key) || [];
    const ready = addresses.filter((a) => a.ready).map((a) => a.ip);
    const waiting = addresses.filter((a) => !a.ready).map((a) => `${a.ip} (not ready)`);
    const cells = [namespace ? service.name : service.key, service.type, service.clusterIP || "None",
      service.ports.join(", "), ready.concat(waiting).join(", ") || "none"];
    row.append(...cells.map((text) => el("td", "", text)));
    row.lastChild.dataset.endpoints = ready.length;
    return row;
  }));
}

function drawEvents() {
  const list = document.getElementById("events");
  const seen = new Set([...list.children].map((item) => item.dataset.event));
  const latest = [...store.events.values()].filter(shown)
    .sort((a, b) => (a.time < b.time ? 1 : a.time > b.time ? -1 : 0)).slice(0, EVENTS_SHOWN);
  list.replaceChildren(...latest.map((event) => {
    const item = el("li", seen.has(event.key) || seen.size === 0 || flooded() ? "event" : "event entering");
    item.dataset.event = event.key;
    item.dataset.type = event.type;
    const when = event.time ? new Date(event.time).toLocaleTimeString() : "";
    item.append(el("span", "event-time", when), el("span", "event-type", event.type),
      el("span", "event-reason", event.reason), el("span", "event-object", event.object),
      el("span", "event-message", event.message + (event.count > 1 ? ` (×${event.count})` : "")));
    return item;
  }));
}

function drawNamespaces() {
  const select = document.getElementById("namespace");
  const names = [...store.namespaces.keys()];
  if (namespace && !names.includes(namespace)) names.push(namespace);
  const options = [el("option", "", "all namespaces")];
  options[0].value = "";
  for (const name of names.sort()) {
    const option = el("option", "", name);
    option.value = name;
    options.push(option);
  }
  select.replaceChildren(...options);
  select.value = namespace;
}

// ------------------------------------------------------------ the state of the connection

function drawStatus() {
  const connection = document.getElementById("connection");
  const unreachable = Object.values(troubles).some((t) => t && t.code === 0);
  const loading = KINDS.some((kind) => !synced[kind] && !troubles[kind]);
  let state = "live";
  let words = "live";
  if (!streamOpen) {
    state = "reconnecting";
    words = "reconnecting to the dashboard…";
  } else if (unreachable) {
    state = "reconnecting";
    words = "reconnecting to the API server…";
  } else if (loading) {
    state = "connecting";
    words = "loading…";
  }
  connection.dataset.state = state;
  connection.textContent = words;

  // A kind the server refuses to list gets a banner of its own, in the
  // server's words: the page shows what it may not see, not a blank.
  const banners = document.getElementById("banners");
  banners.replaceChildren(...KINDS.filter((kind) => troubles[kind] && troubles[kind].code).map((kind) => {
    const trouble = troubles[kind];
    const banner = el("p", "banner");
    banner.dataset.kind = kind;
    banner.dataset.code = trouble.code;
    banner.append(el("strong", "", `Cannot show ${kind}: ${trouble.reason} (${trouble.code}). `),
      el("span", "", trouble.message));
    return banner;
  }));

  const pods = [...store.pods.values()].filter(shown);
  const pending = pods.filter((pod) => !pod.node).length;
  document.getElementById("counts").textContent =
    `${store.nodes.size} node${store.nodes.size === 1 ? "" : "s"} · ${pods.length} pod${pods.length === 1 ? "" : "s"}` +
    (pending ? ` · ${pending} pending` : "");
}

// ------------------------------------------------------------ the stream

function connect() {
  // [START event-source]
  const source = new EventSource("/events");
  source.addEventListener("snapshot", (message) => {
    const snapshot = JSON.parse(message.data);
    markAll();                               // what was drawn before: redrawn, or removed
    for (const kind of KINDS) {
      store[kind] = new Map((snapshot.objects[kind] || []).map((obj) => [obj.key, obj]));
    }
    notePodChanges(store.pods.size);         // a big snapshot is a flood too
    troubles = snapshot.troubles;
    synced = snapshot.synced;
    streamOpen = true;
    markAll();                               // and what is there now
  });
  source.addEventListener("changes", (message) => {
    for (const change of JSON.parse(message.data)) {   // a batch: what changed since the last one
      const objects = store[change.kind];
      const key = change.op === "delete" ? change.key : change.object.key;
      const before = objects.get(key);
      if (change.op === "delete") objects.delete(key);
      else objects.set(key, change.object);
      synced[change.kind] = true;            // changes flow: its list is in
      noteChange(change.kind, key, before, change.object);
    }
  });
  // [END event-source]
  source.addEventListener("synced", (message) => {
    synced[JSON.parse(message.data).kind] = true;
    dirty.status = true;
    schedule();
  });
  source.addEventListener("trouble", (message) => {
    const { kind, trouble } = JSON.parse(message.data);
    troubles[kind] = trouble;
    if (!trouble) synced[kind] = true;
    dirty.status = true;
    schedule();
  });
  source.addEventListener("error", () => {   // EventSource retries by itself
    streamOpen = false;
    dirty.status = true;
    schedule();
  });
}

document.getElementById("namespace").addEventListener("change", (changed) => {
  namespace = changed.target.value;
  history.replaceState(null, "", namespace ? `#ns=${encodeURIComponent(namespace)}` : location.pathname);
  markAll();
});

drawNamespaces();
connect();
