// sopgym view: filter and sort the task table, keep filters in the address, follow a
// running run (new rows are added in place: the sort and the filters stay). No framework,
// nothing fetched from elsewhere.
(function () {
  "use strict";
  const table = document.getElementById("tasks");
  let refresh = null; // re-apply the filters and the sort after rows arrive
  if (table) {
    const params = new URLSearchParams(location.search);
    const controls = Array.from(document.querySelectorAll("[data-filter]"));
    const search = document.getElementById("f-search");
    const shown = document.getElementById("shown");
    const body = table.tBodies[0];
    for (const control of controls) {
      const wanted = params.get(control.dataset.filter);
      if (wanted !== null) control.value = wanted;
    }
    if (params.get("q")) search.value = params.get("q");
    const apply = function () {
      const rows = Array.from(body.rows);
      const want = {};
      for (const control of controls) want[control.dataset.filter] = control.value;
      const text = search.value.trim().toLowerCase();
      let count = 0;
      for (const row of rows) {
        const visible =
          (!want.domain || row.dataset.domain === want.domain) &&
          (!want.outcome || row.dataset.outcome === want.outcome) &&
          (!want.error || row.dataset.errors.split(" ").includes(want.error)) &&
          (!want.trials || row.dataset.trials === want.trials) &&
          (!text || row.dataset.search.includes(text));
        row.hidden = !visible;
        if (visible) count += 1;
      }
      shown.textContent = count + " of " + rows.length + " shown";
      const next = new URLSearchParams();
      for (const key in want) if (want[key]) next.set(key, want[key]);
      if (text) next.set("q", text);
      const query = next.toString();
      history.replaceState(null, "", location.pathname + (query ? "?" + query : "") + location.hash);
      // a task page links back to the table as filtered now, and to the previous and next
      // failed tasks with the same filters
      for (const link of table.querySelectorAll("a.task")) {
        const target = new URL(link.getAttribute("href"), location.href);
        if (query) target.searchParams.set("from", query);
        else target.searchParams.delete("from");
        link.setAttribute("href", target.pathname + target.search);
      }
    };
    for (const control of controls) control.addEventListener("change", apply);
    search.addEventListener("input", apply);
    apply();

    const headers = Array.from(table.tHead.rows[0].cells);
    let sorted = null; // {column, ascending}
    const sort = function () {
      if (!sorted) return;
      const numeric = headers[sorted.column].dataset.sort === "num";
      const key = function (row) {
        const text = row.cells[sorted.column].textContent.trim();
        if (!numeric) return text;
        const value = parseFloat(text);
        return isNaN(value) ? -Infinity : value;
      };
      const order = Array.from(body.rows).sort(function (a, b) {
        const ka = key(a), kb = key(b);
        const by = numeric ? ka - kb : String(ka).localeCompare(String(kb));
        return sorted.ascending ? by : -by;
      });
      for (const row of order) body.appendChild(row);
    };
    headers.forEach(function (header, column) {
      header.addEventListener("click", function () {
        const ascending = !header.classList.contains("asc");
        headers.forEach(function (h) { h.classList.remove("asc", "desc"); });
        header.classList.add(ascending ? "asc" : "desc");
        sorted = {column: column, ascending: ascending};
        sort();
      });
    });
    refresh = function (fresh) {
      // rows of the newly fetched page not yet here, added in place
      const known = new Set(Array.from(body.rows).map(function (r) { return r.dataset.key; }));
      for (const row of Array.from(fresh.querySelectorAll("#tasks tbody tr"))) {
        if (!known.has(row.dataset.key)) body.appendChild(document.importNode(row, true));
      }
      sort();
      apply();
    };
  }

  const changedOnly = document.getElementById("changed-only");
  if (changedOnly) {
    changedOnly.addEventListener("change", function () {
      for (const row of document.querySelectorAll("#pairs tbody tr")) {
        row.hidden = changedOnly.checked && row.dataset.change === "same";
      }
    });
  }

  const progress = document.getElementById("progress");
  if (progress && progress.dataset.run) {
    let known = Number(progress.dataset.count);
    const swap = function (fresh, id) { // a part of the page, replaced by the fresh page's
      const now = document.getElementById(id), next = fresh.getElementById(id);
      if (now && next) now.replaceWith(document.importNode(next, true));
    };
    const update = function () {
      return fetch(location.pathname)
        .then(function (response) { return response.text(); })
        .then(function (html) {
          const fresh = new DOMParser().parseFromString(html, "text/html");
          for (const id of ["figures", "coverage", "family"]) swap(fresh, id);
          const next = fresh.getElementById("progress");
          if (next) {
            progress.textContent = next.textContent;
            progress.className = next.className;
            progress.dataset.state = next.dataset.state;
          }
          if (refresh) refresh(fresh);
        });
    };
    const poll = function () {
      fetch("/api/runs/" + encodeURIComponent(progress.dataset.run) + "/progress")
        .then(function (response) { return response.json(); })
        .then(function (state) {
          if (state.recorded !== known || !state.running) {
            known = state.recorded;
            return update().then(function () { if (state.running) setTimeout(poll, 2000); });
          }
          setTimeout(poll, 2000);
        })
        .catch(function () { setTimeout(poll, 5000); });
    };
    setTimeout(poll, 2000);
  }
})();
