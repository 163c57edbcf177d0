// The timeline's new events, without a reload: every few seconds ask api/events (the same
// cookie authenticates it) and put the rows it has not shown on top.  Every value goes in
// through textContent or an attribute, never as HTML: a memory's text stays text.
(function () {
  const base = document.body.dataset.base;  // every path of the viewer is under it
  const body = document.querySelector("#events tbody");
  const shown = new Set(Array.from(body.rows, (row) => row.dataset.id));
  const when = (ts) => ts ? new Date(ts * 1000).toISOString().slice(0, 16).replace("T", " ") : "";
  function cell(text, cls) {
    const td = document.createElement("td");
    if (cls) td.className = cls;
    td.textContent = text;
    return td;
  }
  function link(href, text, cls) {
    const a = document.createElement("a");
    a.href = href; a.textContent = text; if (cls) a.className = cls;
    return a;
  }
  function row(e) {
    const tr = document.createElement("tr");
    tr.dataset.id = e.id; tr.className = "new";
    tr.append(cell(when(e.client_ts), "when"), cell((e.project || "").split("/").pop(), "project"), cell(e.kind, "kind"));
    const id = cell(""); id.append(link(base + "m/" + encodeURIComponent(e.cite || e.id), "mem:" + e.cite, "cite")); tr.append(id);
    tr.append(cell(e.title, "title"));
    const session = cell(""); if (e.session_id) session.append(link(base + "s/" + encodeURIComponent(e.session_id), "session"));
    tr.append(session);
    return tr;
  }
  async function poll() {
    try {
      const response = await fetch(base + "api/events", { credentials: "same-origin" });
      if (response.ok) {
        for (const e of await response.json()) {  // oldest first
          if (!shown.has(String(e.id))) { shown.add(String(e.id)); body.prepend(row(e)); }
        }
      }
    } finally { setTimeout(poll, 2000); }
  }
  setTimeout(poll, 2000);
})();
