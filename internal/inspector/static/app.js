// agentmem inspector: a single page over the inspector's JSON API (relative URLs, so it works
// under any mount point). Every piece of data is put into the page as text (textContent), never
// as markup.
"use strict";

(() => {
  const POLL_MS = 2000;

  // scoreLegend says what the columns of a ranked entry are (internal/retrieve/fusion.go).
  const scoreLegend = "score = relevance × decay × weight. relevance: the keyword relevance fused with the " +
    "vector relevance, whose share shrinks as the query's best keyword match improves; further archived " +
    "turns of a session already ranked are discounted. Without vectors (no embedder, or none near the " +
    "query) it is the keyword relevance.";

  const state = {
    token: sessionStorage.getItem("agentmem.inspector.token") || "",
    route: null,
    feedTenant: null,
    es: null,
    poll: null,
    sidebarPoll: null,
    lastDetail: "",
    lastFacts: "",
    lastGraph: "",
    graphHistory: false,
    expanded: new Set(),
    refreshTimer: null,
  };

  // ---- small DOM helpers ---------------------------------------------------------------

  function h(tag, attrs, ...children) {
    const el = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k === "class") el.className = v;
      else if (k === "text") el.textContent = v;
      else if (k === "style") Object.assign(el.style, v);
      else if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
      else el.setAttribute(k, v === true ? "" : String(v));
    }
    for (const c of children.flat(Infinity)) {
      if (c === undefined || c === null || c === false) continue;
      el.append(c instanceof Node ? c : document.createTextNode(String(c)));
    }
    return el;
  }

  const $ = (sel) => document.querySelector(sel);
  const enc = encodeURIComponent;
  const fmtInt = (n) => (n || 0).toLocaleString("en-US");
  const fmtPct = (r) => (100 * (r || 0)).toFixed(1) + " %";
  const fmtScore = (x) => (x === undefined || x === null ? "–" : Number(x).toFixed(3));

  function fmtTime(s) {
    if (!s || s.startsWith("0001-")) return "";
    const d = new Date(s);
    if (isNaN(d)) return s;
    return d.toISOString().replace("T", " ").replace(/\.\d+Z$/, " UTC").replace(/Z$/, " UTC");
  }

  function badge(text, cls) {
    return h("span", { class: "badge " + (cls || text) }, text);
  }

  function shortID(id) {
    return id && id.length > 16 ? id.slice(0, 14) + "…" : id || "";
  }

  function table(cls, headers, rows, emptyText) {
    if (!rows.length) return h("p", { class: "empty " + cls + "-empty" }, emptyText || "none");
    return h("table", { class: cls },
      h("thead", {}, h("tr", {}, headers.map((x) => (typeof x === "string" ? h("th", {}, x) : h("th", x[1], x[0]))))),
      h("tbody", {}, rows));
  }

  // ---- API -------------------------------------------------------------------------------

  async function api(path) {
    const headers = { Accept: "application/json" };
    if (state.token) headers.Authorization = "Bearer " + state.token;
    const res = await fetch("api/" + path, { headers });
    if (res.status === 401) {
      showTokenForm();
      throw new Error("a bearer token is required");
    }
    let body;
    try {
      body = await res.json();
    } catch (e) {
      throw new Error(res.status + " " + res.statusText);
    }
    if (!res.ok) {
      const err = body && body.error ? body.error : {};
      throw new Error((err.field ? err.field + ": " : "") + (err.message || res.statusText));
    }
    return body;
  }

  function showTokenForm() {
    const form = $("#token-form");
    form.hidden = false;
    form.onsubmit = (ev) => {
      ev.preventDefault();
      state.token = $("#token-input").value.trim();
      sessionStorage.setItem("agentmem.inspector.token", state.token);
      form.hidden = true;
      state.feedTenant = null;
      route();
    };
  }

  // ---- routing ---------------------------------------------------------------------------

  function parseRoute() {
    const raw = location.hash.replace(/^#/, "") || "/";
    const [path, query] = raw.split("?");
    const parts = path.split("/").filter(Boolean).map(decodeURIComponent);
    const params = new URLSearchParams(query || "");
    const r = { view: "overview", params };
    if (parts[0] === "t" && parts[1]) {
      r.tenant = parts[1];
      r.view = "tenant";
      if (parts[2] === "s" && parts[3]) {
        r.view = "session";
        r.session = parts[3];
      } else if (parts[2] === "u" && parts[3]) {
        r.view = "user";
        r.user = parts[3];
      }
    }
    return r;
  }

  const link = {
    tenant: (t) => "#/t/" + enc(t),
    session: (t, s, turn) => "#/t/" + enc(t) + "/s/" + enc(s) + (turn ? "?turn=" + enc(turn) : ""),
    user: (t, u) => "#/t/" + enc(t) + "/u/" + enc(u),
  };

  function setMain(view, ...children) {
    const main = $("#main");
    main.replaceChildren(...children);
    main.dataset.view = view;
    main.dataset.loaded = "true";
  }

  function crumbs(r) {
    const parts = [h("a", { href: "#/" }, "tenants")];
    if (r.tenant) parts.push(h("span", { class: "sep" }, "›"), h("a", { href: link.tenant(r.tenant) }, r.tenant));
    if (r.session) parts.push(h("span", { class: "sep" }, "›"), h("span", {}, "session " + r.session));
    if (r.user) parts.push(h("span", { class: "sep" }, "›"), h("span", {}, "user " + r.user));
    $("#crumbs").replaceChildren(...parts);
  }

  async function route() {
    const r = parseRoute();
    state.route = r;
    state.lastDetail = "";
    state.lastFacts = "";
    state.lastGraph = "";
    clearInterval(state.poll);
    state.poll = null;
    crumbs(r);
    $("#main").dataset.loaded = "false";
    connectFeed(r.tenant || null);
    refreshSidebar();
    try {
      if (r.view === "overview") await showOverview();
      else if (r.view === "tenant") await showTenant(r);
      else if (r.view === "session") await showSession(r);
      else if (r.view === "user") await showUser(r);
    } catch (e) {
      setMain("error", h("h1", {}, "Error"), h("p", { class: "error", id: "error" }, String(e.message || e)));
    }
  }

  // ---- sidebar ---------------------------------------------------------------------------

  async function refreshSidebar() {
    const r = state.route;
    let tenants;
    try {
      tenants = (await api("tenants")).tenants;
    } catch (e) {
      $("#tenants").replaceChildren(h("li", { class: "error" }, String(e.message || e)));
      return;
    }
    let sessions = null;
    if (r && r.tenant) {
      try {
        sessions = await api("tenants/" + enc(r.tenant) + "/sessions");
      } catch (e) {
        sessions = null;
      }
    }
    const items = tenants.map((t) => {
      const li = h("li", { "data-tenant": t.tenant },
        h("a", { class: "tenant" + (r && r.tenant === t.tenant ? " current" : ""), href: link.tenant(t.tenant) },
          t.tenant, " ", h("span", { class: "muted small" }, "(" + t.sessions + ")")));
      if (sessions && r.tenant === t.tenant) {
        li.append(h("div", { class: "group" }, "sessions"));
        li.append(h("ul", { class: "sessions" }, sessions.sessions.map((s) =>
          h("li", {}, h("a", {
            href: link.session(t.tenant, s.session),
            class: r.session === s.session ? "current" : "",
            "data-session": s.session,
            title: fmtPct(s.ratio) + " of " + fmtInt(s.budget) + " tokens",
          }, h("span", {}, s.session), h("span", { class: "minibar" + (s.above ? " hot" : "") },
            h("i", { style: { width: Math.min(100, 100 * s.ratio).toFixed(1) + "%" } })))))));
        if (sessions.users.length) {
          li.append(h("div", { class: "group" }, "users"));
          li.append(h("ul", { class: "users" }, sessions.users.map((u) =>
            h("li", {}, h("a", { href: link.user(t.tenant, u), class: r.user === u ? "current" : "", "data-user": u }, u)))));
        }
      }
      return li;
    });
    $("#tenants").replaceChildren(...(items.length ? items : [h("li", { class: "muted" }, "no tenants yet")]));
  }

  // ---- overview --------------------------------------------------------------------------

  async function showOverview() {
    // The process's memory is shown to an operator of every tenant only (404 or 403 otherwise).
    const [tenants, usage, memory] = await Promise.all([api("tenants"), api("usage"), api("memory").catch(() => null)]);
    setMain("overview",
      h("h1", {}, "Tenants"),
      table("tenants-table", ["tenant", ["sessions", { class: "num" }], ["turns", { class: "num" }], ["kept tokens", { class: "num" }], "users"],
        tenants.tenants.map((t) => h("tr", { "data-tenant": t.tenant },
          h("td", {}, h("a", { href: link.tenant(t.tenant) }, t.tenant)),
          h("td", { class: "num" }, fmtInt(t.sessions)),
          h("td", { class: "num" }, fmtInt(t.turns)),
          h("td", { class: "num" }, fmtInt(t.tokens)),
          h("td", {}, t.users.map((u, i) => [i ? ", " : "", h("a", { href: link.user(t.tenant, u) }, u)])))),
        "No tenant has published a turn yet."),
      usagePanel(usage),
      memory ? memoryPanel(memory) : null);
  }

  const fmtMB = (b) => (b >= 1048576 ? (b / 1048576).toFixed(1) + " MB" : b >= 1024 ? (b / 1024).toFixed(1) + " KB" : b > 0 ? b + " B" : "0");

  // memoryPanel shows where the process's memory sits: the kernel's and the Go runtime's
  // figures, the structures that count what they hold, and the heap by the component that
  // allocated it (docs/operations.md, "Memory").
  function memoryPanel(rep) {
    const p = rep.process;
    const limit = p.limit > 0 && p.limit < 9e18 ? fmtMB(p.limit) : "none";
    const proc = [
      ["resident", p.resident, "the kernel's resident set (VmRSS)"],
      ["anonymous", p.anon, "its anonymous part: the Go heap, stacks and the runtime's own"],
      ["heap live", p.heap_live, "what the last garbage collection found reachable"],
      ["heap objects", p.heap_objects, "live objects and garbage not yet collected"],
      ["heap free", p.heap_free, "held by the runtime, not returned to the system"],
      ["heap released", p.heap_released, "returned to the system"],
    ];
    return h("section", { id: "memory" },
      h("h2", {}, "Memory"),
      h("p", { class: "muted small" }, "Where this process's memory sits. Soft limit: ", h("span", { id: "memory-limit" }, limit), "; GOGC ", String(p.gogc), "."),
      table("memory-process", ["", ["bytes", { class: "num" }], ""],
        proc.map(([k, v, help]) => h("tr", { "data-kind": k.replace(" ", "_") },
          h("td", {}, k), h("td", { class: "num" }, fmtMB(v)), h("td", { class: "muted small" }, help)))),
      h("h3", {}, "Structures"),
      table("memory-structures", ["structure", ["bytes", { class: "num" }], ["items", { class: "num" }], ""],
        rep.structures.map((s) => h("tr", { "data-structure": s.name },
          h("td", {}, s.name), h("td", { class: "num" }, s.bytes ? fmtMB(s.bytes) : "–"),
          h("td", { class: "num" }, s.unit ? fmtInt(s.items) + " " + s.unit : "–"),
          h("td", { class: "muted small" }, s.help))),
        "No structure reports its memory in this process."),
      h("h3", {}, "Go heap by component"),
      table("memory-heap", ["component", ["bytes", { class: "num" }]],
        rep.heap.map((c) => h("tr", { "data-component": c.name },
          h("td", {}, c.name), h("td", { class: "num" }, fmtMB(c.bytes)))),
        "No heap profile yet."));
  }

  function usagePanel(rep) {
    const rows = [];
    for (const t of rep.tenants) {
      rows.push(h("tr", { class: "usage-tenant", "data-tenant": t.tenant },
        h("td", {}, h("b", {}, t.tenant)), h("td", {}, h("i", { class: "muted" }, "all sessions")),
        h("td", { class: "num" }, fmtInt(t.usage.calls)), h("td", { class: "num" }, fmtInt(t.usage.input_tokens)),
        h("td", { class: "num" }, fmtInt(t.usage.output_tokens))));
      for (const s of t.sessions) {
        rows.push(h("tr", { class: "usage-session", "data-session": s.session },
          h("td", {}, ""), h("td", {}, h("a", { href: link.session(t.tenant, s.session) }, s.session)),
          h("td", { class: "num" }, fmtInt(s.usage.calls)), h("td", { class: "num" }, fmtInt(s.usage.input_tokens)),
          h("td", { class: "num" }, fmtInt(s.usage.output_tokens))));
      }
    }
    return h("section", { id: "usage" },
      h("h2", {}, "LLM usage"),
      h("p", { class: "muted small" }, "Calls made by the compressor (summaries) and the extractor (facts), per session and tenant. Total: ",
        fmtInt(rep.total.calls), " calls, ", fmtInt(rep.total.input_tokens), " input and ", fmtInt(rep.total.output_tokens), " output tokens."),
      table("usage-table", ["tenant", "session", ["calls", { class: "num" }], ["input tokens", { class: "num" }], ["output tokens", { class: "num" }]],
        rows, "No LLM calls recorded (offline summaries and facts cost none)."));
  }

  // ---- tenant ----------------------------------------------------------------------------

  async function showTenant(r) {
    const [sessions, usage] = await Promise.all([
      api("tenants/" + enc(r.tenant) + "/sessions"),
      api("tenants/" + enc(r.tenant) + "/usage"),
    ]);
    setMain("tenant",
      h("h1", {}, "Tenant " + r.tenant),
      searchPanel(r.tenant, {}),
      h("h2", {}, "Sessions"),
      table("sessions-table", ["session", "user", ["turns", { class: "num" }], ["tokens / budget", { class: "num" }], ["ratio", { class: "num" }],
        ["pending", { class: "num" }], ["pressure", { class: "num" }], ["summaries", { class: "num" }], "ended", "last turn"],
      sessions.sessions.map((s) => h("tr", { "data-session": s.session },
        h("td", {}, h("a", { href: link.session(r.tenant, s.session) }, s.session)),
        h("td", {}, s.user ? h("a", { href: link.user(r.tenant, s.user) }, s.user) : ""),
        h("td", { class: "num" }, fmtInt(s.turns)),
        h("td", { class: "num" }, fmtInt(s.tokens) + " / " + fmtInt(s.budget)),
        h("td", { class: "num" }, fmtPct(s.ratio)),
        h("td", { class: "num" }, fmtInt(s.pending)),
        h("td", { class: "num" }, fmtInt(s.pressures)),
        h("td", { class: "num" }, fmtInt(s.summaries)),
        h("td", {}, s.forgotten ? "forgotten" : s.ended ? "yes" : ""),
        h("td", { class: "time" }, fmtTime(s.last_turn_at)))),
      "No session in this tenant."),
      h("h2", {}, "Users"),
      sessions.users.length
        ? h("ul", { class: "users-list" }, sessions.users.map((u) => h("li", {}, h("a", { href: link.user(r.tenant, u) }, u))))
        : h("p", { class: "empty" }, "none"),
      usagePanel(usage));
  }

  // ---- session ---------------------------------------------------------------------------

  async function showSession(r) {
    const detail = await api("tenants/" + enc(r.tenant) + "/sessions/" + enc(r.session));
    const body = h("div", { id: "session-body" });
    const search = searchPanel(r.tenant, { session: r.session, user: detail.session.user || "" });
    setMain("session",
      h("h1", {}, "Session " + r.session),
      h("div", { id: "session-head" }),
      h("div", { id: "gauge-slot" }),
      search,
      body);
    renderSession(r, detail);
    const turn = r.params.get("turn");
    if (turn) highlightTurn(turn);
    state.poll = setInterval(() => refreshSession(r), POLL_MS);
  }

  async function refreshSession(r) {
    if (state.route !== r) return;
    try {
      const detail = await api("tenants/" + enc(r.tenant) + "/sessions/" + enc(r.session));
      if (state.route === r) renderSession(r, detail);
    } catch (e) {
      // Keep what is shown; the next poll tries again.
    }
  }

  function renderSession(r, d) {
    const key = JSON.stringify(d);
    if (key === state.lastDetail) return;
    state.lastDetail = key;
    const s = d.session;
    $("#session-head").replaceChildren(h("div", { class: "kv" },
      h("span", {}, "user ", s.user ? h("a", { href: link.user(r.tenant, s.user), id: "session-user" }, h("b", {}, s.user)) : h("b", {}, "—")),
      h("span", {}, "turns ", h("b", {}, fmtInt(s.turns))),
      h("span", {}, "kept ", h("b", {}, fmtInt(s.kept))),
      h("span", {}, "pending ", h("b", {}, fmtInt(s.pending))),
      h("span", {}, "rejected ", h("b", {}, fmtInt(s.rejected))),
      h("span", {}, "ended ", h("b", {}, s.ended ? "yes" : "no")),
      h("span", {}, "first turn ", h("b", {}, fmtTime(s.first_turn_at) || "—")),
      h("span", {}, "last turn ", h("b", {}, fmtTime(s.last_turn_at) || "—")),
      h("span", {}, "LLM ", h("b", { id: "session-usage" }, fmtInt(d.usage.calls) + " calls, " +
        fmtInt(d.usage.input_tokens) + " in / " + fmtInt(d.usage.output_tokens) + " out tokens"))));
    $("#gauge-slot").replaceChildren(gauge(d.gauge, d.pressure));
    const body = $("#session-body");
    const open = new Set([...body.querySelectorAll("details[open]")].map((x) => x.dataset.key));
    body.replaceChildren(
      h("h2", {}, "Short-term entries ", h("span", { class: "muted small" }, "(" + d.entries.length + " kept, oldest first)")),
      entriesTable("entries", d.entries, "No entry kept."),
      h("h2", {}, "Pending ", h("span", { class: "muted small" }, "(evicted over the budget, waiting to be named for compression)")),
      entriesTable("pending", d.pending, "Nothing pending."),
      h("h2", {}, "Summaries ", h("span", { class: "muted small" }, "(each with the entries it replaced)")),
      d.summaries.length ? h("div", { id: "summaries" }, d.summaries.map((x) => summaryCard(x, open))) : h("p", { class: "empty", id: "summaries" }, "No summary yet."),
      h("h2", {}, "Pressure events"),
      table("pressure-table", [["#", { class: "num" }], "time", ["tokens / budget", { class: "num" }], ["ratio", { class: "num" }], ["named", { class: "num" }], "summary"],
        d.pressure.map((p) => h("tr", { "data-number": p.number },
          h("td", { class: "num" }, p.number),
          h("td", { class: "time" }, fmtTime(p.time)),
          h("td", { class: "num" }, fmtInt(p.tokens) + " / " + fmtInt(p.budget)),
          h("td", { class: "num" }, fmtPct(p.ratio)),
          h("td", { class: "num" }, (p.entry_ids || []).length),
          h("td", { class: "id", title: p.summary_id }, p.summary_id))),
        "The session never reached its pressure threshold."));
    const turn = r.params.get("turn");
    if (turn) highlightTurn(turn, true);
  }

  function gauge(g, pressures) {
    const pct = (x) => Math.max(0, Math.min(100, 100 * x)).toFixed(2) + "%";
    const last = pressures.length ? pressures[pressures.length - 1] : null;
    const bar = h("div", { class: "gauge-bar", role: "meter", "aria-valuemin": 0, "aria-valuemax": g.budget, "aria-valuenow": g.tokens },
      h("div", { class: "gauge-fill", style: { width: pct(g.ratio) } }),
      h("div", { class: "gauge-threshold", style: { left: pct(g.threshold_ratio) } },
        h("span", {}, "pressure at " + fmtPct(g.threshold_ratio).replace(".0 ", " "))));
    if (last) {
      bar.append(h("div", { class: "gauge-peak", id: "gauge-peak", style: { left: pct(last.ratio) },
        title: "pressure #" + last.number + " at " + fmtPct(last.ratio) }));
    }
    const stateTitle = {
      ok: "below the pressure threshold",
      compressing: "a named range waits for its summary",
      pressure: "at or above the pressure threshold",
    }[g.state];
    return h("section", { class: "panel gauge", id: "gauge", "data-state": g.state, "data-ratio": g.ratio.toFixed(4) },
      h("div", { class: "gauge-head" },
        h("span", { class: "gauge-ratio", id: "gauge-ratio" }, fmtPct(g.ratio)),
        h("span", { class: "gauge-tokens", id: "gauge-tokens" }, fmtInt(g.tokens) + " / " + fmtInt(g.budget) + " tokens"),
        h("span", { class: "badge " + g.state, id: "gauge-state", title: stateTitle }, g.state)),
      bar,
      h("div", { class: "gauge-note", id: "gauge-note" },
        "threshold " + fmtInt(g.threshold) + " tokens (" + fmtPct(g.threshold_ratio) + ") · pending " + fmtInt(g.pending_tokens) +
        " tokens · " + g.pressures + " pressure event" + (g.pressures === 1 ? "" : "s") + ", " + g.summaries + " summar" +
        (g.summaries === 1 ? "y" : "ies") + " applied",
        last ? h("span", { id: "gauge-last" }, " · last crossing #" + last.number + " at " + fmtPct(last.ratio) +
          " (" + fmtInt(last.tokens) + " / " + fmtInt(last.budget) + " tokens)") : ""));
  }

  function entriesTable(id, entries, emptyText) {
    const t = table("entries-table", [["#", { class: "num" }], "id", "type", "role", ["tokens", { class: "num" }], "time", "text"],
      entries.map((e, i) => entryRow(e, i + 1)), emptyText);
    t.id = id;
    return t;
  }

  // clamp shows a long text on a few lines; a click shows it whole.
  function clamp(text) {
    if (!text || text.length < 240) return text;
    const el = h("div", { class: "clamp", title: "click to show all" }, text);
    el.addEventListener("click", () => el.classList.toggle("open"));
    return el;
  }

  function entryRow(e, n) {
    const text = e.type === "SUMMARY" && e.status === "pending"
      ? h("i", { class: "muted" }, "summary pending: stands for the entries listed under Summaries")
      : clamp(e.content);
    return h("tr", { "data-id": e.id, "data-type": e.type, class: "entry" },
      h("td", { class: "num" }, n === undefined ? "" : n),
      h("td", { class: "id", title: e.id }, shortID(e.id)),
      h("td", {}, badge(e.type, e.type), e.status ? [" ", badge(e.status)] : ""),
      h("td", {}, e.role || (e.tool ? "tool" : "")),
      h("td", { class: "num" }, fmtInt(e.tokens)),
      h("td", { class: "time" }, fmtTime(e.timestamp)),
      h("td", { class: "text" }, text));
  }

  function summaryCard(s, open) {
    const det = h("details", { "data-key": s.id, open: s.status === "pending" || open.has(s.id) },
      h("summary", {}, (s.status === "pending" ? "Stands for " : "Replaced ") + s.replaced.length + " entr" + (s.replaced.length === 1 ? "y" : "ies") +
        " (" + (s.provenance || []).length + " turns in all)"),
      table("replaced-table", [["#", { class: "num" }], "id", "type", "role", ["tokens", { class: "num" }], "time", "text"],
        s.replaced.map((e, i) => entryRow(e, i + 1)), "nothing recorded"));
    return h("div", { class: "panel summary " + s.status, "data-id": s.id, "data-status": s.status },
      h("div", {}, badge(s.status), " ", h("code", { title: s.id }, shortID(s.id)),
        s.pressure ? h("span", { class: "muted small" }, " · pressure #" + s.pressure) : "",
        h("span", { class: "muted small" }, " · " + fmtInt(s.tokens) + " tokens · " + fmtTime(s.timestamp)),
        s.summarizer ? h("span", { class: "muted small" }, " · " + s.summarizer) : ""),
      h("div", { class: "content" }, s.status === "pending" && !s.content
        ? h("i", { class: "muted" }, "The compressor has not answered yet; until it does, readers see the entries below.")
        : s.content),
      det);
  }

  function highlightTurn(id, quiet) {
    let found = null;
    for (const tr of document.querySelectorAll("#main tr[data-id]")) {
      if (tr.dataset.id === id) {
        tr.classList.add("highlight");
        const d = tr.closest("details");
        if (d) d.open = true;
        found = found || tr;
      }
    }
    if (found && !quiet) found.scrollIntoView({ block: "center" });
  }

  // ---- user: facts with history ------------------------------------------------------------

  async function showUser(r) {
    const at = r.params.get("at") || "";
    const [facts, graph] = await Promise.all([
      api("tenants/" + enc(r.tenant) + "/users/" + enc(r.user) + "/facts"),
      api("tenants/" + enc(r.tenant) + "/users/" + enc(r.user) + "/graph" + (at ? "?at=" + enc(at) : "")),
    ]);
    setMain("user",
      h("h1", {}, "User " + r.user),
      searchPanel(r.tenant, { user: r.user }),
      h("div", { id: "graph-body" }),
      h("div", { id: "facts-body" }));
    renderGraph(r, graph);
    renderFacts(r, facts);
  }

  // ---- user: the graph of entities and relations -------------------------------------------

  const SVG = "http://www.w3.org/2000/svg";

  // sv makes an SVG element; text goes in as text nodes, never as markup.
  function sv(tag, attrs, ...children) {
    const el = document.createElementNS(SVG, tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k === "class") el.setAttribute("class", v);
      else if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
      else el.setAttribute(k, String(v));
    }
    for (const c of children.flat(Infinity)) {
      if (c === undefined || c === null || c === false) continue;
      el.append(c instanceof Node ? c : document.createTextNode(String(c)));
    }
    return el;
  }

  // layout places the user's node in the middle and the others on a circle, by name: the same
  // graph is always drawn the same way.
  function layout(nodes, w, hgt) {
    const pos = new Map();
    const others = nodes.filter((n) => !n.user);
    const cx = w / 2, cy = hgt / 2, rad = Math.min(w, hgt) / 2 - 70;
    for (const n of nodes) if (n.user) pos.set(n.id, { x: cx, y: cy });
    others.forEach((n, i) => {
      const a = -Math.PI / 2 + (2 * Math.PI * i) / Math.max(others.length, 1);
      pos.set(n.id, { x: cx + rad * Math.cos(a), y: cy + rad * Math.sin(a) });
    });
    return pos;
  }

  function renderGraph(r, g) {
    state.lastGraph = JSON.stringify({ ...g, at: "" });
    const body = $("#graph-body");
    const showHistory = state.graphHistory === true;
    const live = new Set(g.relations.map((e) => e.id));
    // An edge that ended (in the history with an object, no longer a relation) is drawn dashed.
    const drawn = g.history.filter((e) => e.object && (live.has(e.id) || showHistory));
    const W = 760, H = 440;
    const pos = layout(g.entities, W, H);
    const nodeOf = new Map(g.entities.map((n) => [n.id, n]));
    const edges = drawn.filter((e) => pos.has(e.subject) && pos.has(e.object)).map((e) => {
      const a = pos.get(e.subject), b = pos.get(e.object);
      const ended = !live.has(e.id);
      return sv("g", { class: "edge" + (ended ? " edge-ended" : ""), "data-id": e.id, "data-relation": e.relation,
        "data-subject": e.subject_name, "data-object": e.object_name, "data-state": ended ? "ended" : "live" },
        sv("line", { x1: a.x, y1: a.y, x2: b.x, y2: b.y }),
        sv("text", { x: (a.x + b.x) / 2, y: (a.y + b.y) / 2 - 4, "text-anchor": "middle", class: "edge-label" }, e.relation),
        sv("title", {}, e.subject_name + " " + e.relation + " " + e.object_name +
          (ended ? " (ended " + fmtTime(e.valid_to) + ")" : " (since " + fmtTime(e.valid_from) + ")")));
    });
    const nodes = g.entities.map((n) => {
      const p = pos.get(n.id);
      const label = n.user ? "user " + r.user : n.name;
      return sv("g", { class: "node node-" + (n.type || "unknown") + (n.user ? " node-user" : ""), "data-id": n.id,
        "data-name": n.name, "data-type": n.type || "", transform: "translate(" + p.x.toFixed(1) + "," + p.y.toFixed(1) + ")" },
        sv("circle", { r: n.user ? 16 : 11 }),
        sv("text", { y: n.user ? 30 : 24, "text-anchor": "middle", class: "node-label" }, label),
        sv("title", {}, label + (n.type ? " (" + n.type + ")" : "") + (n.aliases && n.aliases.length ? ", also " + n.aliases.join(", ") : "") +
          " · " + (n.provenance || []).length + " turns · first seen " + fmtTime(n.first_seen)));
    });
    const toggle = h("label", { class: "small" },
      h("input", { type: "checkbox", id: "graph-history", checked: showHistory, onchange: (ev) => {
        state.graphHistory = ev.target.checked;
        renderGraph(r, g);
      } }), " show relations that ended");
    const atForm = h("form", { id: "graph-at-form", class: "small", onsubmit: (ev) => {
      ev.preventDefault();
      const v = $("#graph-at").value.trim();
      location.hash = link.user(r.tenant, r.user) + (v ? "?at=" + enc(v) : "");
    } }, "at ", h("input", { id: "graph-at", type: "text", size: 24, placeholder: "now (RFC 3339)", value: r.params.get("at") || "" }),
      " ", h("button", { type: "submit", id: "graph-at-go" }, "show"));
    const rows = g.history.map((e) => h("tr", { class: "rel rel-" + (live.has(e.id) ? "live" : "ended"), "data-id": e.id,
      "data-relation": e.relation, "data-state": live.has(e.id) ? "live" : "ended" },
      h("td", {}, badge(live.has(e.id) ? "live" : "ended")),
      h("td", { class: "rel-text" }, (e.subject_name || "") + " " + e.relation + " " + (e.object ? e.object_name : "(ended)")),
      h("td", { class: "time valid-from" }, fmtTime(e.valid_from)),
      h("td", { class: "time valid-to" }, fmtTime(e.valid_to) || "—"),
      h("td", { class: "small" }, e.extractor || ""),
      h("td", { class: "prov" }, (e.provenance || []).map((id) => h("code", { class: "turn-ref" }, id)), " ")));
    body.replaceChildren(
      h("h2", {}, "Graph ", h("span", { class: "muted small", id: "graph-count" },
        "(" + g.entities.length + " entities, " + g.relations.length + " relations at " + fmtTime(g.at) + ")")),
      h("div", { class: "panel graph-panel" },
        h("div", { class: "graph-tools" }, toggle, " ", atForm),
        g.entities.length
          ? sv("svg", { id: "graph-svg", viewBox: "0 0 " + W + " " + H, width: W, height: H, role: "img",
            "aria-label": "the user's entities and relations" }, sv("g", { class: "edges" }, edges), sv("g", { class: "nodes" }, nodes))
          : h("p", { class: "empty", id: "graph-empty" }, "No entity yet (entities and relations are extracted with the facts)."),
        h("h3", {}, "Relations and their history"),
        table("relations-table", ["state", "relation", "valid from", "valid to", "extractor", "turns"], rows, "No relation."),
        h("h3", {}, "Entities"),
        table("entities-table", ["name", "type", "also", ["turns", { class: "num" }], "first seen", "last seen"],
          g.entities.map((n) => h("tr", { "data-id": n.id, "data-name": n.name },
            h("td", {}, n.user ? "user " + r.user : n.name),
            h("td", {}, n.type || "—"),
            h("td", { class: "aliases" }, (n.aliases || []).join(", ")),
            h("td", { class: "num" }, (n.provenance || []).length),
            h("td", { class: "time" }, fmtTime(n.first_seen)),
            h("td", { class: "time" }, fmtTime(n.last_seen)))), "No entity.")));
  }

  async function refreshFacts(r) {
    try {
      const at = r.params.get("at") || "";
      const [facts, graph] = await Promise.all([
        api("tenants/" + enc(r.tenant) + "/users/" + enc(r.user) + "/facts"),
        api("tenants/" + enc(r.tenant) + "/users/" + enc(r.user) + "/graph" + (at ? "?at=" + enc(at) : "")),
      ]);
      if (state.route !== r) return;
      renderFacts(r, facts);
      // The graph is drawn again only when it changed (its time aside, which moves with now).
      const key = JSON.stringify({ ...graph, at: "" });
      if (key !== state.lastGraph) renderGraph(r, graph);
    } catch (e) {
      // Keep what is shown.
    }
  }

  function renderFacts(r, f) {
    const key = JSON.stringify(f);
    if (key === state.lastFacts) return;
    state.lastFacts = key;
    const byID = new Map(f.facts.map((x) => [x.id, x]));
    const live = f.facts.filter((x) => x.status === "live").length;
    $("#facts-body").replaceChildren(
      h("h2", {}, "Facts ", h("span", { class: "muted small" }, "(" + live + " live, " + (f.facts.length - live) + " in the history)")),
      f.histories.length ? h("div", { id: "facts" }, f.histories.map((hist) => factCard(r, hist, byID, f.turns)))
        : h("p", { class: "empty", id: "facts" }, "No fact extracted yet (facts are extracted when a session ends or is summarised)."),
      h("h2", {}, "Summaries"),
      table("user-summaries", ["session", "time", "summary", ["turns", { class: "num" }]],
        f.summaries.map((s) => h("tr", { "data-id": s.id },
          h("td", {}, h("a", { href: link.session(r.tenant, s.session) }, s.session)),
          h("td", { class: "time" }, fmtTime(s.timestamp)),
          h("td", { class: "text" }, s.content),
          h("td", { class: "num" }, (s.provenance || []).length))), "No summary."),
      h("h2", {}, "Sessions"),
      table("user-sessions", ["session", "first turn", "last turn"],
        f.sessions.map((s) => h("tr", { "data-session": s.session },
          h("td", {}, h("a", { href: link.session(r.tenant, s.session) }, s.session)),
          h("td", { class: "time" }, fmtTime(s.first)),
          h("td", { class: "time" }, fmtTime(s.last)))), "No session indexed."));
  }

  function factCard(r, hist, byID, turns) {
    const liveFact = hist.live ? byID.get(hist.live) : null;
    const head = liveFact || hist.versions[0];
    const expanded = state.expanded.has(hist.key);
    const history = h("div", { class: "history", hidden: !expanded },
      table("history-table", ["status", "fact", "valid from", "valid to", "superseded by", "provenance"],
        hist.versions.map((v) => h("tr", { class: "version version-" + v.status, "data-id": v.id, "data-status": v.status },
          h("td", {}, badge(v.status)),
          h("td", { class: "text" }, v.content),
          h("td", { class: "time valid-from" }, fmtTime(v.valid_from)),
          h("td", { class: "time valid-to" }, fmtTime(v.valid_to) || "—"),
          h("td", { class: "superseded-by" }, v.superseded_by
            ? h("span", { title: v.superseded_by }, (byID.get(v.superseded_by) || {}).content || shortID(v.superseded_by))
            : "—"),
          h("td", { class: "prov" }, (v.provenance || []).map((id) => provenance(r, id, turns[id])))))));
    const toggle = h("button", {
      class: "history-toggle", type: "button", "aria-expanded": expanded ? "true" : "false",
      onclick: () => {
        const open = history.hidden;
        history.hidden = !open;
        toggle.setAttribute("aria-expanded", open ? "true" : "false");
        if (open) state.expanded.add(hist.key);
        else state.expanded.delete(hist.key);
      },
    }, "History (" + hist.versions.length + " version" + (hist.versions.length === 1 ? "" : "s") + ")");
    return h("div", { class: "panel fact-card" + (liveFact ? "" : " nolive"), "data-key": hist.key, "data-live": hist.live || "" },
      h("div", { class: "fact-live" }, liveFact ? liveFact.content : h("span", { class: "muted" }, "no live version: " + head.content)),
      h("div", { class: "fact-meta" },
        hist.key.startsWith("fact:") ? "" : [h("code", {}, hist.key), " · "],
        head.category, " · valid from ", fmtTime(head.valid_from),
        " · confidence ", Number(head.confidence || 0).toFixed(2), " · ", head.extractor || ""),
      toggle, history);
  }

  function provenance(r, id, refs) {
    if (!refs || !refs.length) return h("span", { class: "turn-ref" }, h("code", {}, id));
    return refs.map((t) => h("span", { class: "turn-ref", "data-turn": id },
      h("a", { href: link.session(r.tenant, t.session, id), title: "session " + t.session }, id),
      h("span", { class: "quote" }, "“" + t.content + "” (" + t.session + ", " + fmtTime(t.timestamp) + ")")));
  }

  // ---- search ----------------------------------------------------------------------------

  function searchPanel(tenant, defaults) {
    const results = h("div", { id: "search-results" });
    const q = h("input", { type: "search", id: "search-q", name: "q", placeholder: "search memory (retrieve), e.g. 我最喜欢的编程语言", required: true });
    const sess = h("input", { class: "tok", id: "search-session", name: "session", placeholder: "session", value: defaults.session || "" });
    const user = h("input", { class: "tok", id: "search-user", name: "user", placeholder: "user", value: defaults.user || "" });
    const limit = h("input", { class: "num", id: "search-limit", name: "limit", type: "number", min: 1, max: 200, value: 10 });
    const form = h("form", {
      class: "search-form", id: "search-form",
      onsubmit: async (ev) => {
        ev.preventDefault();
        const p = new URLSearchParams({ q: q.value });
        if (sess.value.trim()) p.set("session", sess.value.trim());
        if (user.value.trim()) p.set("user", user.value.trim());
        if (limit.value) p.set("limit", limit.value);
        results.dataset.state = "loading";
        results.replaceChildren(h("p", { class: "muted" }, "searching…"));
        try {
          const res = await api("tenants/" + enc(tenant) + "/search?" + p.toString());
          renderResults(results, res);
          results.dataset.state = "done";
        } catch (e) {
          results.replaceChildren(h("p", { class: "error", id: "search-error" }, String(e.message || e)));
          results.dataset.state = "error";
        }
      },
    }, q, sess, user, limit, h("button", { type: "submit", id: "search-go" }, "Search"));
    return h("section", { class: "panel", id: "search" }, h("h2", { style: { marginTop: "0" } }, "Search"), form, results);
  }

  function renderResults(el, res) {
    const rows = res.entries.map((e, i) => h("tr", { class: "result", "data-id": e.id, "data-rank": i + 1 },
      h("td", { class: "num" }, i + 1),
      h("td", { class: "entry" },
        h("div", { class: "content" }, clamp(e.content)),
        h("div", { class: "meta" }, badge(e.type, e.type), " ", badge(e.source, e.source), " ",
          h("code", { title: e.id }, shortID(e.id)),
          e.session && e.session !== (state.route || {}).session ? " · session " + e.session : "",
          " · " + fmtTime(e.timestamp))),
      h("td", { class: "num score" }, fmtScore(e.score)),
      h("td", { class: "num keyword" }, fmtScore(e.scores.keyword)),
      h("td", { class: "num vector" }, fmtScore(e.scores.vector)),
      h("td", { class: "num decay" }, fmtScore(e.scores.decay)),
      h("td", { class: "num weight" }, fmtScore(e.scores.weight)),
      h("td", { class: "num relevance" }, fmtScore(relevance(e.scores)))));
    el.replaceChildren(
      h("h3", {}, "Ranked entries ", h("span", { class: "muted small", id: "results-count" }, "(" + res.entries.length + ")")),
      h("p", { class: "muted small", id: "score-legend" }, scoreLegend),
      table("results-table", [["#", { class: "num" }], "entry", ["score", { class: "num" }], ["keyword", { class: "num" }], ["vector", { class: "num" }],
        ["decay", { class: "num" }], ["weight", { class: "num" }], ["relevance", { class: "num" }]],
        rows, "Nothing relevant found."),
      h("h3", {}, "Built context ", h("span", { class: "muted small" }, "(" + fmtInt(res.context_tokens) + " tokens)")),
      res.context ? h("pre", { class: "context", id: "search-context" }, res.context) : h("p", { class: "empty", id: "search-context" }, "(empty)"));
    const rs = el.querySelector("table.results-table");
    if (rs) rs.id = "results";
  }

  // relevance is the one the score used: the retriever sends it when it differs from the keyword
  // relevance, so without it the keyword relevance is the relevance, vector or not.
  function relevance(sc) {
    return sc.relevance !== undefined ? sc.relevance : sc.keyword;
  }

  // ---- live feed -------------------------------------------------------------------------

  function connectFeed(tenant) {
    if (state.feedTenant === tenant && state.es) return;
    if (state.es) state.es.close();
    state.es = null;
    state.feedTenant = tenant;
    $("#feed").replaceChildren();
    const status = $("#feed-status");
    $("#feed-tenant").textContent = tenant ? "· " + tenant : "";
    if (!tenant) {
      status.dataset.state = "off";
      status.textContent = "feed: pick a tenant";
      return;
    }
    let url = "api/tenants/" + enc(tenant) + "/events";
    if (state.token) url += "?access_token=" + enc(state.token);
    const es = new EventSource(url);
    state.es = es;
    status.dataset.state = "connecting";
    status.textContent = "feed: connecting";
    es.addEventListener("ready", () => {
      status.dataset.state = "live";
      status.textContent = "feed: live";
    });
    es.onerror = () => {
      status.dataset.state = "error";
      status.textContent = "feed: reconnecting";
    };
    for (const kind of ["pressure", "summary", "fact"]) {
      es.addEventListener(kind, (m) => {
        let ev;
        try {
          ev = JSON.parse(m.data);
        } catch (e) {
          return;
        }
        addFeedItem(ev);
        refreshOn(ev);
      });
    }
  }

  function describe(ev) {
    const d = ev.data || {};
    if (ev.kind === "pressure") {
      return ev.session + ": pressure #" + d.number + " at " + fmtPct(d.ratio) + " (" + fmtInt(d.tokens) + " / " + fmtInt(d.budget) +
        " tokens), names " + (d.entry_ids || []).length + " entries";
    }
    if (ev.kind === "summary") {
      return ev.session + ": summary of " + (d.replaces || []).length + " entries — " + (d.content || "").slice(0, 160);
    }
    const f = d.fact || {};
    return ev.user + ": " + d.op + " — " + (f.content || f.id || "");
  }

  function addFeedItem(ev) {
    const r = state.route || {};
    const current = (ev.session && ev.session === r.session) || (ev.user && ev.user === r.user);
    const li = h("li", { class: "feed-item" + (current ? " current" : ""), "data-kind": ev.kind, "data-id": ev.id },
      badge(ev.kind, "kind-" + ev.kind), " ",
      ev.session ? h("a", { href: link.session(ev.tenant, ev.session) }, ev.session)
        : h("a", { href: link.user(ev.tenant, ev.user) }, ev.user),
      " ", h("span", { class: "time" }, fmtTime(ev.time)),
      h("span", { class: "line" }, describe(ev)));
    const feed = $("#feed");
    feed.prepend(li);
    while (feed.children.length > 200) feed.lastElementChild.remove();
  }

  function refreshOn(ev) {
    const r = state.route;
    if (!r) return;
    clearTimeout(state.refreshTimer);
    state.refreshTimer = setTimeout(() => {
      if (state.route !== r) return;
      if (r.view === "session" && ev.session === r.session) refreshSession(r);
      else if (r.view === "user" && (ev.user === r.user || ev.kind === "summary")) refreshFacts(r);
      refreshSidebar();
    }, 250);
  }

  // ---- start -----------------------------------------------------------------------------

  window.addEventListener("hashchange", route);
  state.sidebarPoll = setInterval(refreshSidebar, 5000);
  route();
})();
