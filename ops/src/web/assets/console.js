// The rocemend console: follows the daemon's events, swaps in fresh
// sections when something changes, and sends approve and reject with the
// token the visitor typed (kept for this tab only, sent as a header).
"use strict";

const KINDS = ["transition", "decision", "note", "reload", "mode", "sensor", "stale", "error", "lagged"];
const KEPT_EVENTS = 200;
let refreshing = null;

function $(id) { return document.getElementById(id); }

function notice(text, bad) {
  let n = $("notice");
  if (!n) {
    n = document.createElement("p");
    n.id = "notice";
    document.querySelector("header").appendChild(n);
  }
  n.textContent = text;
  n.className = bad ? "bad" : "good";
}

// Several events in a burst cause one refresh.
function refreshSoon() {
  if (refreshing) return;
  refreshing = setTimeout(async () => {
    refreshing = null;
    try {
      const r = await fetch("/sections", { cache: "no-store" });
      if (r.ok) $("sections").innerHTML = await r.text();
    } catch (e) { /* the stream's own error handler reports the daemon gone */ }
  }, 250);
}

function logEvent(kind, data) {
  const li = document.createElement("li");
  li.className = "event " + kind;
  const at = data.at_ns ? new Date(data.at_ns / 1e6).toISOString() : "";
  li.textContent = at + "  " + kind + "  " + (data.text || "");
  const list = $("events");
  list.insertBefore(li, list.firstChild);
  while (list.children.length > KEPT_EVENTS) list.removeChild(list.lastChild);
}

function follow() {
  const live = $("live");
  const source = new EventSource("/events");
  source.onopen = () => { live.textContent = "live"; live.className = "live on"; };
  source.onerror = () => { live.textContent = "reconnecting…"; live.className = "live off"; };
  for (const kind of KINDS) {
    source.addEventListener(kind, (e) => {
      let data = {};
      try { data = JSON.parse(e.data); } catch (err) { data = { text: e.data }; }
      logEvent(kind, data);
      refreshSoon();
    });
  }
}

async function decide(button, verb) {
  const id = button.dataset.id;
  const token = ($("token") && $("token").value.trim()) || sessionStorage.getItem("rocemend-token") || "";
  const by = ($("by") && $("by").value.trim()) || "";
  if (token) sessionStorage.setItem("rocemend-token", token);
  button.disabled = true;
  try {
    const r = await fetch("/decisions/" + encodeURIComponent(id) + "/" + verb, {
      method: "POST",
      headers: { "Authorization": "Bearer " + token, "X-Rocemend-By": by },
    });
    const text = await r.text();
    if (r.ok) {
      const d = JSON.parse(text);
      notice(id + ": " + (d.verdict && d.verdict.verdict ? d.verdict.verdict : verb + "d"), false);
    } else {
      notice(id + ": " + text.trim(), true);
    }
  } catch (e) {
    notice(id + ": " + e, true);
  }
  button.disabled = false;
  refreshSoon();
}

async function explain(link) {
  const r = await fetch(link.getAttribute("href"), { cache: "no-store" });
  const box = $("explain");
  box.querySelector("pre").innerHTML = r.ok ? (await r.text()).replace(/^<pre>|<\/pre>$/g, "") : "not found";
  box.showModal();
}

document.addEventListener("click", (e) => {
  const t = e.target;
  if (t.matches("button.approve")) decide(t, "approve");
  else if (t.matches("button.reject")) decide(t, "reject");
  else if (t.matches("button.undo") && confirm("Undo " + t.dataset.id + "?")) decide(t, "undo");
  else if (t.matches("a.explain")) { e.preventDefault(); explain(t); }
});

document.addEventListener("DOMContentLoaded", () => {
  const saved = sessionStorage.getItem("rocemend-token");
  if (saved && $("token")) $("token").value = saved;
  follow();
});
