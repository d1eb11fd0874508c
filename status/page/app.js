// Vigil status page: on a location, its verdicts as a matrix of checks by region, every
// location's verdicts side by side (the network view, paged), and one check's evidence and
// history when selected; on a checker, what it probes and what it reports; on every node its
// answer verification (when it runs one) and the members it sees. Each section is fetched and
// drawn on its own: a role the node does not run (404) hides its sections, and a failure of
// one is reported without stopping the others. Everything it shows comes from the status API
// of the node that served it; it builds the page with DOM methods and textContent only.
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

  // drawOverrides lists the maintenance overrides in force at this location, each with its
  // reason, author and expiry; hidden when there are none.
  function drawOverrides(list) {
    const items = (list.overrides || []).map((o) => el("li", {}, "Override: " + o.sentence));
    const ul = document.getElementById("overrides");
    ul.replaceChildren(...items);
    ul.hidden = items.length === 0;
  }

  function drawMatrix(list) {
    skew = Date.parse(list.generated_at) - Date.now();
    drawOverrides(list);
    const head = document.querySelector("#matrix thead tr");
    head.replaceChildren(el("th", { scope: "col" }, "check"), el("th", { scope: "col" }, "verdict"));
    for (const r of list.regions) head.append(el("th", { scope: "col" }, r));

    const body = document.querySelector("#matrix tbody");
    const rows = [];
    for (const c of list.checks) {
      // The state shown is the one DNS acts on: an override's while one forces the check.
      const served = c.served_state || c.state;
      const tr = el("tr", { "data-check": c.id, title: c.explanation, tabIndex: 0 });
      if (c.id === selected) tr.className = "selected";
      tr.append(el("td", {}, c.id));
      const v = el("td", { "data-state": served, className: "verdict" },
        marks[served] + " " + served + (c.override ? " (forced)" : ""));
      if (c.override) {
        v.dataset.forced = c.override.kind;
        v.append(el("span", { className: "forced" }, " by " + c.override.author + " until " +
          new Date(c.override.expires).toLocaleString() + "; verdict " + c.state));
      }
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
          cell.stale > 0 ? cell.stale + " stale" : "never heard";
        tr.append(el("td", { "data-region": r, "data-state": cell.state, title: r + ": " + cell.state },
          marks[cell.state] + " " + text));
      }
      tr.addEventListener("click", () => select(c.id));
      tr.addEventListener("keydown", (ev) => { if (ev.key === "Enter") select(c.id); });
      rows.push(tr);
    }
    body.replaceChildren(...rows);
    const tally = list.tally || { healthy: 0, unhealthy: 0, unknown: 0, forced_healthy: 0, forced_unhealthy: 0 };
    const forced = tally.forced_healthy + tally.forced_unhealthy;
    document.getElementById("summary").textContent = list.checks.length === 0 ? "No checks at this location." :
      list.checks.length + " checks: " + tally.healthy + " healthy, " + tally.unhealthy + " unhealthy, " +
      tally.unknown + " unknown" + (forced > 0 ? "; " + forced + " forced by an override (" +
        tally.forced_unhealthy + " unhealthy, " + tally.forced_healthy + " healthy)" : "") + ".";
  }

  function fact(dl, name, value) {
    dl.append(el("dt", {}, name), el("dd", {}, String(value)));
  }

  function drawEvidence(e) {
    const sec = document.getElementById("evidence");
    sec.hidden = false;
    sec.dataset.check = e.id;
    const served = e.served_state || e.state;
    sec.dataset.state = served;
    document.getElementById("evidence-title").textContent = e.id + ": " + served +
      (e.override ? " (forced " + e.override.kind + " by " + e.override.author + "; verdict " + e.state + ")" : "") +
      (e.held ? " (held)" : "");
    document.getElementById("evidence-sentence").textContent = e.explanation;
    const dl = document.getElementById("evidence-facts");
    dl.replaceChildren();
    fact(dl, "served", e.served_as_healthy ? "yes, records answered" : "no, records withheld");
    fact(dl, "since", new Date(e.since).toLocaleString() + " (" + ago(e.since) + ")");
    fact(dl, "rule", e.rule);
    const c = e.counts;
    fact(dl, "reports", c.healthy + " healthy, " + c.unhealthy + " unhealthy, " + c.stale + " stale, " +
      c.never_heard + " never heard");
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
        el("td", { "data-state": v.status }, v.status),
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

  // The network view: one page of checks by location, with a search, a filter and paging.
  const net = { cursors: [""], page: 0, limit: 50 };

  function networkQuery() {
    const q = new URLSearchParams({ limit: String(net.limit) });
    const search = document.getElementById("network-search").value.trim();
    const filter = document.getElementById("network-filter").value;
    if (search) q.set("q", search);
    if (filter !== "all") q.set("filter", filter);
    if (net.cursors[net.page]) q.set("cursor", net.cursors[net.page]);
    return "/v1/network?" + q.toString();
  }

  function drawNetwork(v) {
    const locs = v.locations || [];
    document.getElementById("network-locations").replaceChildren(...locs.map((l) => {
      const hears = (l.heard || []).map((h) => h.region + " " + h.fresh + "/" + h.total).join(", ");
      return el("li", { "data-location": l.id, "data-reachable": String(l.reachable) },
        l.id + " (" + l.region + "): " + (l.self ? "this location; " : "") +
        (l.reachable ? "hears " + (hears || "no checker") : "unreachable — " + l.error));
    }));
    const head = document.querySelector("#network-table thead tr");
    head.replaceChildren(el("th", { scope: "col" }, "check"));
    for (const l of locs) head.append(el("th", { scope: "col" }, l.id));
    head.append(el("th", { scope: "col" }, "why they differ"));
    const rows = (v.rows || []).map((r) => {
      const tr = el("tr", { "data-check": r.id, "data-disagree": String(r.disagree), tabIndex: 0 });
      tr.append(el("td", {}, r.id));
      for (const l of locs) {
        const c = (r.cells || {})[l.id];
        if (!l.reachable) tr.append(el("td", { "data-location": l.id, "data-state": "unknown" }, "unreachable"));
        else if (!c) tr.append(el("td", { "data-location": l.id }, "\u2014"));
        else tr.append(el("td", { "data-location": l.id, "data-state": c.state, title: l.id + ": " + c.state },
          marks[c.state] + " " + c.healthy + "/" + c.fresh + (c.held ? " held" : "") +
          (c.availability_24h !== undefined ? " \u00B7 " + share(c.availability_24h) + " of " +
            observed(c.observed_24h_ns) + " observed" : "")));
      }
      tr.append(el("td", { className: "why" }, r.reason || ""));
      tr.addEventListener("click", () => select(r.id));
      tr.addEventListener("keydown", (ev) => { if (ev.key === "Enter") select(r.id); });
      return tr;
    });
    document.querySelector("#network-table tbody").replaceChildren(...rows);
    const unreachable = locs.filter((l) => !l.reachable).length;
    document.getElementById("network-summary").textContent = locs.length + " locations" +
      (unreachable ? " (" + unreachable + " unreachable from here)" : "") + ", " + v.checks + " checks, " +
      v.disagreements + " where they disagree. Page " + (net.page + 1) + ": " + rows.length + " of " +
      v.matching + " matching.";
    net.next = v.next || "";
    document.getElementById("network-prev").disabled = net.page === 0;
    document.getElementById("network-next").disabled = !net.next;
  }

  function resetPages() {
    net.cursors = [""];
    net.page = 0;
    refresh();
  }
  let searchTimer = 0;
  document.getElementById("network-search").addEventListener("input", () => {
    clearTimeout(searchTimer);
    searchTimer = setTimeout(resetPages, 250);
  });
  document.getElementById("network-filter").addEventListener("change", resetPages);
  document.getElementById("network-prev").addEventListener("click", () => {
    if (net.page > 0) { net.page--; refresh(); }
  });
  document.getElementById("network-next").addEventListener("click", () => {
    if (net.next) { net.cursors[net.page + 1] = net.next; net.page++; refresh(); }
  });

  // share writes a 24-hour availability (0 to 1) as a percentage, never 100.00% when short of it.
  function share(r) {
    const s = (100 * r).toFixed(2);
    return (s === "100.00" && r < 1 ? "99.99" : s) + "%";
  }

  // observed writes how long an availability was observed, from nanoseconds: "45 seconds",
  // "2 minutes", "5.5 hours", "24 hours".
  function observed(ns) {
    const s = (ns || 0) / 1e9;
    if (!(s > 0)) return "an unknown time";
    if (s < 90) return Math.round(s) + (Math.round(s) === 1 ? " second" : " seconds");
    if (s < 5400) return Math.round(s / 60) + " minutes";
    const h = Math.round(s / 360) / 10;
    return h + (h === 1 ? " hour" : " hours");
  }

  function pct(a) {
    return a.observed_ns > 0 ? (100 * a.ratio).toFixed(2) + "% of the last " + a.window + " (" +
      observed(a.observed_ns) + " observed)" : "\u2014 of the last " + a.window + " (not observed)";
  }

  function drawHistory(h) {
    document.getElementById("history-availability").textContent = "Healthy " +
      (h.availability || []).map(pct).join(", ") + ".";
    document.getElementById("history-timeline").replaceChildren(...(h.changes || []).map((c) =>
      el("li", { "data-state": c.to || "unknown" }, new Date(c.at).toLocaleString() + " (" + ago(c.at) + "): " +
        (c.from || "no verdict") + " \u2192 " + (c.to || "no verdict") + ", " + c.healthy + " of " + c.fresh +
        " fresh reports healthy, " + c.stale + " stale")));
  }

  // drawVerification shows what this node's answer verifier found (a checker asking every
  // location's DNS and comparing with its verdicts), or hides the section when the node runs
  // none (null: the API answered 404).
  function drawVerification(r) {
    const sec = document.getElementById("verification");
    sec.hidden = !r;
    if (!r) return;
    if (r.generated_at && !Number.isNaN(Date.parse(r.generated_at))) skew = Date.parse(r.generated_at) - Date.now();
    const share = (100 * (r.disagreement_share || 0)).toFixed(2);
    document.getElementById("verification-summary").textContent = r.answers + " answers judged, " +
      r.disagreed + " (" + share + "%) disagreed with their location's verdicts; " +
      ((r.unanswering || []).length ? "not answering: " + r.unanswering.join(", ") : "every location answering") +
      (r.dropped ? "; " + r.dropped + " verdict changes never answered accordingly within the bound" : "") + ".";
    document.querySelector("#verification-locations tbody").replaceChildren(...(r.locations || []).map((l) => {
      const o = l.outcomes || {};
      const state = l.outcome === "agree" ? "healthy" : l.outcome === "disagree" || l.outcome === "no_answer" ? "unhealthy" : "unknown";
      const tr = el("tr", { "data-location": l.id });
      tr.append(el("td", {}, l.id), el("td", {}, ago(l.at)),
        el("td", { "data-state": state }, (l.outcome || "").replace("_", " ")),
        el("td", {}, l.record_set || ""), el("td", {}, (l.server ? l.server + ": " : "") + (l.reason || "")),
        el("td", {}, (o.agree || 0) + " / " + (o.disagree || 0) + " / " + (o.no_answer || 0)));
      return tr;
    }));
    document.getElementById("verification-failovers").replaceChildren(...(r.convergences || []).map((c) =>
      el("li", {}, c.record_set + ": every location answered accordingly " + c.seconds.toFixed(2) +
        " s after the first verdict change (seen within " + c.seen_seconds.toFixed(1) + " s; " + c.changed +
        " locations changed), " + ago(c.converged))));
    document.getElementById("verification-pending").replaceChildren(...(r.pending || []).map((p) =>
      el("li", { "data-state": "stale" }, p.record_set + ": changed " + ago(p.started) + ", waiting for " +
        (p.waiting || []).join(", "))));
  }

  // getOptional is getJSON that resolves to null when the API says 404 (a role not run).
  async function getOptional(path) {
    const res = await fetch(path, { cache: "no-store", headers: { Accept: "application/json" } });
    if (res.status === 404) return null;
    let body = null;
    try { body = await res.json(); } catch (_) { /* not JSON */ }
    if (!res.ok) throw new Error((body && body.error) || res.status + " " + res.statusText);
    return body;
  }

  // drawNode titles the page with the node's name, region and roles.
  function drawNode(n) {
    const roles = (n.roles || []).join(", ");
    document.getElementById("location").textContent = "\u2014 " + n.id + (n.region ? " (" + n.region + ")" : "") +
      (roles ? ": " + roles : "");
  }

  // drawProbes shows a checker's probes: each check's target, the status it reports, how many
  // probes in a row agree, and the last probe's outcome; null (not a checker) hides it.
  function drawProbes(l) {
    const sec = document.getElementById("probes");
    sec.hidden = !l;
    if (!l) return;
    const probes = l.probes || [];
    const failing = probes.filter((p) => p.status === "unhealthy").length;
    const self = l.self || {};
    document.getElementById("probes-summary").textContent = "Checker " + l.checker + (l.region ? " (" + l.region + ")" : "") +
      " probes " + probes.length + " checks, " + failing + " failing; its own health: " +
      (self.healthy ? "healthy" : "unhealthy" + (self.reason ? " (" + self.reason + "), its reports are withheld" : "")) + ".";
    document.querySelector("#probes-table tbody").replaceChildren(...probes.map((p) => {
      const last = p.last;
      const tr = el("tr", { "data-check": p.check });
      tr.append(el("td", {}, p.check), el("td", {}, (p.protocol ? p.protocol + " " : "") + (p.target || "")),
        el("td", { "data-state": p.status }, (marks[p.status] || "") + " " + p.status),
        el("td", {}, String(p.consecutive)),
        el("td", {}, last ? ago(last.at) + (last.timings && last.timings.total ? ", " + last.timings.total : "") : "not yet"),
        el("td", {}, last ? last.reason + (last.message ? ": " + last.message : "") : ""));
      return tr;
    }));
  }

  // drawAnswers draws the DNS view: each record set that consults a health check, what the
  // location answers for it now, the rule that chose it and whether last resort is in force
  // (no record healthy, so every one answered); null (no such view) hides it.
  function drawAnswers(l) {
    const sec = document.getElementById("dns");
    sec.hidden = !l;
    if (!l) return;
    const answers = l.answers || [];
    document.getElementById("dns-summary").textContent = l.sets + " record sets consult a health check" +
      (l.matching < l.sets ? ", " + l.matching + " shown" : "") + "; " +
      (l.last_resort ? l.last_resort + " answer in last resort (no record healthy, every record answered)" : "none answers in last resort") +
      (answers.length < l.matching ? "; the first " + answers.length + " listed" : "") + ".";
    document.querySelector("#dns-table tbody").replaceChildren(...answers.map((a) => {
      const tr = el("tr", { "data-set": a.name + " " + a.type, "data-last-resort": String(!!a.last_resort) });
      tr.append(el("td", {}, a.name + " " + a.type));
      if (a.error) {
        tr.append(el("td", { "data-state": "unknown", colSpan: 5 }, "no answer: " + a.error));
        return tr;
      }
      tr.append(el("td", {}, (a.values || []).join(", ") || "(none)"), el("td", {}, a.policy),
        el("td", {}, a.rule + (a.region ? " (" + a.region + ")" : "")),
        el("td", { "data-state": a.last_resort ? "unhealthy" : "healthy" }, a.last_resort ? "yes: every record answered" : "no"),
        el("td", {}, (a.candidates || []).map((c) => c.value + " " + (c.health_check ? c.health_check + " " : "") + c.health +
          (c.chosen ? " \u2190" : "")).join("; ")));
      if ((a.overrides || []).length) tr.title = a.overrides.map((o) => o.sentence).join("\n");
      return tr;
    }));
  }

  // drawMembers lists the members this node sees in the gossip pool.
  function drawMembers(l) {
    const ms = l.members || [];
    document.getElementById("members").hidden = false;
    const alive = ms.filter((m) => m.state === "alive").length;
    document.getElementById("members-summary").textContent = ms.length + " members, " + alive + " alive.";
    document.querySelector("#members-table tbody").replaceChildren(...ms.map((m) => {
      const tr = el("tr", { "data-member": m.id });
      tr.append(el("td", {}, m.id), el("td", {}, m.region), el("td", {}, (m.roles || []).join(", ")),
        el("td", { "data-state": m.state === "alive" ? "healthy" : m.state === "suspect" ? "stale" : "unhealthy" }, m.state));
      return tr;
    }));
  }

  function select(id) {
    selected = id;
    history.replaceState(null, "", "#check=" + encodeURIComponent(id));
    for (const tr of document.querySelectorAll("#matrix tbody tr")) {
      tr.className = tr.dataset.check === id ? "selected" : "";
    }
    refresh();
  }

  // part runs one section's fetch and draw, recording its failure rather than throwing: one
  // section that fails (or a role the node does not run) never stops the others.
  async function part(name, failures, fn) {
    try {
      await fn();
      return true;
    } catch (err) {
      failures.push(name + ": " + err.message);
      return false;
    }
  }

  async function refresh() {
    clearTimeout(timer);
    const failures = [];
    let isLocation = false;
    const done = await Promise.all([
      part("node", failures, async () => drawNode(await getJSON("/v1/node"))),
      part("verdicts", failures, async () => {
        const list = await getOptional("/v1/verdicts");
        isLocation = !!list;
        document.getElementById("checks").hidden = !list;
        document.getElementById("network").hidden = !list;
        if (!list) {
          document.getElementById("dns").hidden = true;
          document.getElementById("zones-failed").hidden = true;
          document.getElementById("evidence").hidden = true;
          return;
        }
        drawMatrix(list);
        await Promise.all([
          part("served zones", failures, async () => drawZones(await getJSON("/v1/served-zones"))),
          part("network", failures, async () => drawNetwork(await getJSON(networkQuery()))),
          part("DNS answers", failures, async () => drawAnswers(await getOptional("/v1/answers"))),
          selected ? part("check " + selected, failures, async () => {
            try {
              drawEvidence(await getJSON("/v1/verdicts/" + encodeURIComponent(selected)));
            } catch (err) {
              document.getElementById("evidence").hidden = true;
              throw err;
            }
            try {
              drawHistory(await getJSON("/v1/history/" + encodeURIComponent(selected)));
            } catch (_) {
              drawHistory({});
            }
          }) : true,
        ]);
      }),
      part("probes", failures, async () => drawProbes(await getOptional("/v1/probes"))),
      part("answer verification", failures, async () => drawVerification(await getOptional("/v1/verification"))),
      part("members", failures, async () => drawMembers(await getJSON("/v1/members"))),
    ]);
    const probes = !document.getElementById("probes").hidden;
    if (!isLocation && done[1]) {
      document.getElementById("summary").textContent = probes ? "This node is a checker, not a DNS location: " +
        "it shows what it probes" + (document.getElementById("verification").hidden ? "" : " and how locations answer") + "." :
        "This node runs neither a DNS location nor a checker.";
    }
    if (!done.includes(true)) {
      // Nothing answered: one message, not one a section; Updated keeps the last time that did.
      showError("Cannot reach the node: " + failures[0] + "; showing what it last said.");
    } else {
      showError(failures.length ? "Cannot load part of the status: " + failures.join("; ") : "");
      // Updated is the last refresh at which the node answered, by the node's clock.
      const t = document.getElementById("updated");
      const at = new Date(Date.now() + skew);
      t.dateTime = at.toISOString();
      t.textContent = at.toLocaleTimeString() + (failures.length ? " (in part)" : "");
    }
    timer = setTimeout(refresh, refreshMs);
  }

  refresh();
})();
