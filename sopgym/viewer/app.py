"""The viewer's web app: server-rendered pages over a :class:`RunCatalog`, a small JSON
endpoint for a running run's progress, and the one stylesheet and script (served from the
package, so nothing is fetched from the network)."""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI, Query
from fastapi.responses import FileResponse, HTMLResponse, JSONResponse
from fastapi.staticfiles import StaticFiles

from sopgym.core.jsonio import CorruptRow
from sopgym.core.outcomes import SUCCESS
from sopgym.orchestration.runs import RUNNING, RunReader, outcome
from sopgym.viewer import live, pages
from sopgym.viewer.catalog import RunCatalog
from sopgym.viewer.traces import episode_traces

STATIC = Path(__file__).parent / "static"


def _missing(what: str) -> HTMLResponse:
    return HTMLResponse(pages.error_page("not found", what), status_code=404)


def create_app(catalog: RunCatalog, jaeger_ui: str | None = None) -> FastAPI:
    app = FastAPI(title="sopgym view", docs_url=None, redoc_url=None, openapi_url=None)
    app.mount("/static", StaticFiles(directory=STATIC), name="static")

    @app.exception_handler(CorruptRow)
    async def corrupt(_: object, error: CorruptRow) -> HTMLResponse:
        # a results row that is not JSON: say where, as the CLI does (never a traceback)
        return HTMLResponse(pages.error_page("unreadable run", str(error)), status_code=422)

    def run_or_none(run_id: str) -> RunReader | None:
        return catalog.get(run_id)

    @app.get("/favicon.ico", include_in_schema=False)
    def favicon() -> FileResponse:  # browsers ask for it: an icon, not a 404 in the log
        return FileResponse(STATIC / "favicon.svg", media_type="image/svg+xml")

    @app.get("/", response_class=HTMLResponse)
    def runs() -> str:
        return pages.runs_page(catalog.runs(), catalog.sources)

    @app.get("/runs/{run_id}", response_class=HTMLResponse)
    def run(run_id: str) -> HTMLResponse:
        found = run_or_none(run_id)
        if found is None:
            return _missing(f"no run {run_id!r} among the folders served")
        return HTMLResponse(pages.run_page(found))

    @app.get("/runs/{run_id}/task", response_class=HTMLResponse)
    def task(
        run_id: str,
        domain: str = Query(),
        task: str = Query(),
        trial: int = Query(0, ge=0),
        back: str = Query("", alias="from"),  # the run page's filters, kept for the way back
    ) -> HTMLResponse:
        found = run_or_none(run_id)
        if found is None:
            return _missing(f"no run {run_id!r} among the folders served")
        row = found.row(domain, task, trial)
        if row is None:
            return _missing(f"run {run_id} has no episode of {domain}/{task} trial {trial}")
        trace = episode_traces(found).get(str(row.get("episode_id")))
        return HTMLResponse(pages.task_page(found, row, trace, jaeger_ui, back))

    @app.get("/compare", response_class=HTMLResponse)
    def compare(a: str = Query(), b: str = Query()) -> HTMLResponse:
        run_a, run_b = run_or_none(a), run_or_none(b)
        if run_a is None or run_b is None:
            return _missing(f"no run {a if run_a is None else b!r} among the folders served")
        return HTMLResponse(pages.compare_page(run_a, run_b))

    @app.get("/api/runs/{run_id}/progress")
    def progress(run_id: str) -> JSONResponse:
        found = run_or_none(run_id)
        if found is None:
            return JSONResponse(
                {
                    "error": {
                        "code": "not_found",
                        "message": f"no run {run_id!r}",
                        "field": "run_id",
                    }
                },
                status_code=404,
            )
        rows, state = found.rows(), found.state()
        return JSONResponse(
            {
                "run_id": found.id,
                "state": state,
                "running": state == RUNNING,
                "recorded": len(rows),
                "success": sum(outcome(r) == SUCCESS for r in rows),
                **live.progress(found, len(rows)),  # planned total, seconds left at this pace
            }
        )

    return app
