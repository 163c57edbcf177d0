// The timeline's new rows, without a reload: every few seconds ask api/rows (the same cookie
// authenticates it) with this page's filters, and put the rows not shown yet on top.  The
// server renders each row with the template the page used, its text escaped there; a row is
// parsed as an inert <template> (no script in it runs, and the policy allows none inline).
(function () {
  const base = document.body.dataset.base;  // every path of the viewer is under it
  const body = document.querySelector("#events tbody");
  const shown = new Set(Array.from(body.rows, (row) => row.dataset.id));
  const filters = new URLSearchParams(location.search);
  filters.delete("t");
  async function poll() {
    try {
      const response = await fetch(base + "api/rows?" + filters, { credentials: "same-origin" });
      if (response.ok) {
        let added = false;
        for (const row of await response.json()) {  // oldest first
          if (shown.has(String(row.id))) continue;
          shown.add(String(row.id));
          const template = document.createElement("template");
          template.innerHTML = row.html.trim();
          const tr = template.content.firstElementChild;
          tr.classList.add("new");
          body.prepend(tr);
          added = true;
        }
        if (added) document.querySelector("p.empty")?.remove();
      }
    } finally { setTimeout(poll, 2000); }
  }
  setTimeout(poll, 2000);
})();
