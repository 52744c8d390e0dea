// sopgym view: filter and sort the task table, keep filters in the address, follow a
// running run. No framework, nothing fetched from elsewhere.
(function () {
  "use strict";
  const table = document.getElementById("tasks");
  if (table) {
    const params = new URLSearchParams(location.search);
    const controls = Array.from(document.querySelectorAll("[data-filter]"));
    const search = document.getElementById("f-search");
    const shown = document.getElementById("shown");
    const rows = Array.from(table.tBodies[0].rows);
    for (const control of controls) {
      const wanted = params.get(control.dataset.filter);
      if (wanted !== null) control.value = wanted;
    }
    if (params.get("q")) search.value = params.get("q");
    const apply = function () {
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
    };
    for (const control of controls) control.addEventListener("change", apply);
    search.addEventListener("input", apply);
    apply();

    const headers = Array.from(table.tHead.rows[0].cells);
    headers.forEach(function (header, column) {
      header.addEventListener("click", function () {
        const ascending = !header.classList.contains("asc");
        headers.forEach(function (h) { h.classList.remove("asc", "desc"); });
        header.classList.add(ascending ? "asc" : "desc");
        const numeric = header.dataset.sort === "num";
        const key = function (row) {
          const text = row.cells[column].textContent.trim();
          if (!numeric) return text;
          const value = parseFloat(text);
          return isNaN(value) ? -Infinity : value;
        };
        const sorted = rows.slice().sort(function (a, b) {
          const ka = key(a), kb = key(b);
          const order = numeric ? ka - kb : String(ka).localeCompare(String(kb));
          return ascending ? order : -order;
        });
        for (const row of sorted) table.tBodies[0].appendChild(row);
      });
    });
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
    const known = Number(progress.dataset.count);
    const poll = function () {
      fetch("/api/runs/" + encodeURIComponent(progress.dataset.run) + "/progress")
        .then(function (response) { return response.json(); })
        .then(function (state) {
          if (state.recorded !== known || !state.running) location.reload();
          else setTimeout(poll, 2000);
        })
        .catch(function () { setTimeout(poll, 5000); });
    };
    setTimeout(poll, 2000);
  }
})();
