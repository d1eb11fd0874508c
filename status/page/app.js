// Vigil status page: draws the location's verdicts as a matrix of checks by region, and one
// check's evidence when selected. Everything it shows comes from the status API of the node
// that served it; it builds the page with DOM methods and textContent only.
"use strict";

(function () {
  const refreshMs = Math.max(500, parseInt(document.body.dataset.refreshMs, 10) || 2000);
  const marks = { healthy: "\u2714", unhealthy: "\u2716", stale: "\u25CC", unknown: "?" };
  let selected = decodeURIComponent((location.hash.match(/^#check=(.+)$/) || [])[1] || "");
  let timer = 0;
  // skew is the node's clock minus this browser's, from the latest response: ages are counted
  // by the node's clock, as the evidence's own sentences are.
  let skew = 0;

  function el(tag, attrs, text) {
    const e = document.createElement(tag);
    for (const k in attrs || {}) {
      if (k.startsWith("data-")) e.setAttribute(k, attrs[k]);
      else e[k] = attrs[k];
    }
    if (text !== undefined) e.textContent = text;
    return e;
  }

  async function getJSON(path) {
    const res = await fetch(path, { cache: "no-store", headers: { Accept: "application/json" } });
    let body = null;
    try { body = await res.json(); } catch (_) { /* not JSON */ }
    if (!res.ok) throw new Error((body && body.error) || res.status + " " + res.statusText);
    return body;
  }

  function ago(iso) {
    if (!iso) return "never";
    const s = Math.round((Date.now() + skew - Date.parse(iso)) / 1000);
    if (s < 0) return "just now";
    if (s < 120) return s + "s ago";
    if (s < 7200) return Math.round(s / 60) + "m ago";
    return Math.round(s / 3600) + "h ago";
  }

  function showError(msg) {
    const e = document.getElementById("error");
    e.hidden = !msg;
    e.textContent = msg || "";
  }

  // drawZones lists the zones this location could not install, each with what it serves
  // instead and why; the list is hidden while every zone is installed.
  function drawZones(list) {
    const items = (list.zones || []).filter((z) => z.error).map((z) =>
      el("li", {}, "Zone " + z.zone + " not installed, " +
        (z.served ? "serving its previous version (serial " + z.serial + ")" : "not served") + ": " + z.error));
    const ul = document.getElementById("zones-failed");
    ul.replaceChildren(...items);
    ul.hidden = items.length === 0;
  }

  function drawMatrix(list) {
    skew = Date.parse(list.generated_at) - Date.now();
    document.getElementById("location").textContent =
      list.location ? "\u2014 location " + list.location + (list.region ? " (" + list.region + ")" : "") : "";
    const head = document.querySelector("#matrix thead tr");
    head.replaceChildren(el("th", { scope: "col" }, "check"), el("th", { scope: "col" }, "verdict"));
    for (const r of list.regions) head.append(el("th", { scope: "col" }, r));

    const body = document.querySelector("#matrix tbody");
    const rows = [];
    const tally = { healthy: 0, unhealthy: 0, unknown: 0 };
    for (const c of list.checks) {
      tally[c.state] = (tally[c.state] || 0) + 1;
      const tr = el("tr", { "data-check": c.id, title: c.explanation, tabIndex: 0 });
      if (c.id === selected) tr.className = "selected";
      tr.append(el("td", {}, c.id));
      const v = el("td", { "data-state": c.state, className: "verdict" }, marks[c.state] + " " + c.state);
      if (c.held) v.append(el("span", { className: "held" }, " (held)"));
      if (c.calculated) v.append(el("span", { className: "held" }, " (calculated)"));
      tr.append(v);
      for (const r of list.regions) {
        const cell = (c.regions || {})[r];
        if (!cell) {
          tr.append(el("td", { "data-region": r }, c.calculated ? "" : "\u2014"));
          continue;
        }
        const fresh = cell.healthy + cell.unhealthy;
        const text = fresh > 0 ? cell.healthy + "/" + fresh :
          cell.stale > 0 ? cell.stale + " stale" :
          cell.withdrawn > 0 ? cell.withdrawn + " withdrawn" : "never heard";
        tr.append(el("td", { "data-region": r, "data-state": cell.state, title: r + ": " + cell.state },
          marks[cell.state] + " " + text));
      }
      tr.addEventListener("click", () => select(c.id));
      tr.addEventListener("keydown", (ev) => { if (ev.key === "Enter") select(c.id); });
      rows.push(tr);
    }
    body.replaceChildren(...rows);
    document.getElementById("summary").textContent = list.checks.length === 0 ? "No checks at this location." :
      list.checks.length + " checks: " + tally.healthy + " healthy, " + tally.unhealthy + " unhealthy, " +
      tally.unknown + " unknown.";
    const t = document.getElementById("updated");
    t.dateTime = list.generated_at;
    t.textContent = new Date(list.generated_at).toLocaleTimeString();
  }

  function fact(dl, name, value) {
    dl.append(el("dt", {}, name), el("dd", {}, String(value)));
  }

  function drawEvidence(e) {
    const sec = document.getElementById("evidence");
    sec.hidden = false;
    sec.dataset.check = e.id;
    sec.dataset.state = e.state;
    document.getElementById("evidence-title").textContent = e.id + ": " + e.state + (e.held ? " (held)" : "");
    document.getElementById("evidence-sentence").textContent = e.explanation;
    const dl = document.getElementById("evidence-facts");
    dl.replaceChildren();
    fact(dl, "served", e.served_as_healthy ? "yes, records answered" : "no, records withheld");
    fact(dl, "since", new Date(e.since).toLocaleString() + " (" + ago(e.since) + ")");
    fact(dl, "rule", e.rule);
    const c = e.counts;
    fact(dl, "reports", c.healthy + " healthy, " + c.unhealthy + " unhealthy, " + c.stale + " stale, " +
      c.withdrawn + " withdrawn, " + c.never_heard + " never heard");
    if (!e.calculated) {
      fact(dl, "rule applied", "healthy when more than " + (e.healthy_threshold * 100).toFixed(0) +
        "% of at least " + e.min_reporters + " fresh reports say healthy");
      if (e.freshness_window) fact(dl, "freshness window", e.freshness_window);
      fact(dl, "hold", e.hold);
    }
    if (e.inverted) fact(dl, "inverted", "yes");
    if (e.disabled) fact(dl, "disabled", "yes");

    const rows = (e.votes || []).map((v) => {
      const tr = el("tr", { "data-checker": v.checker });
      tr.append(el("td", {}, v.checker), el("td", {}, v.region),
        el("td", { "data-state": v.status === "withdrawn" ? "unknown" : v.status }, v.status),
        el("td", {}, v.reason || ""), el("td", {}, v.latency),
        el("td", {}, ago(v.last_progress)), el("td", {}, v.why));
      return tr;
    });
    document.querySelector("#votes tbody").replaceChildren(...rows);
    document.getElementById("votes").hidden = rows.length === 0;
    document.getElementById("never-heard").replaceChildren(...(e.never_heard || []).map((a) =>
      el("li", {}, a.checker + (a.region ? " (" + a.region + ")" : "") + ": " + a.why)));
    document.getElementById("children").replaceChildren(...(e.children || []).map((ch) =>
      el("li", { "data-state": ch.state }, ch.check + ": " + ch.state +
        (ch.counted_healthy ? ", counted healthy" : ", counted unhealthy"))));
  }

  function select(id) {
    selected = id;
    history.replaceState(null, "", "#check=" + encodeURIComponent(id));
    for (const tr of document.querySelectorAll("#matrix tbody tr")) {
      tr.className = tr.dataset.check === id ? "selected" : "";
    }
    refresh();
  }

  async function refresh() {
    clearTimeout(timer);
    try {
      drawMatrix(await getJSON("/v1/verdicts"));
      drawZones(await getJSON("/v1/served-zones"));
      if (selected) {
        try {
          drawEvidence(await getJSON("/v1/verdicts/" + encodeURIComponent(selected)));
        } catch (err) {
          document.getElementById("evidence").hidden = true;
          throw err;
        }
      }
      showError("");
    } catch (err) {
      showError("Cannot load the status: " + err.message);
    }
    timer = setTimeout(refresh, refreshMs);
  }

  refresh();
})();
