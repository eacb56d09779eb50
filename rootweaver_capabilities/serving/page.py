"""``GET /``: the page that shows why an answer is what it is, and its files under ``/static/``.

The page (``static/index.html``, ``page.js``, ``page.css``: package data, no build step, nothing
fetched from elsewhere) asks ``POST /v1/ask/stream`` and shows each hop as it arrives (sub-query,
reason, the passages read), then the synth context with the budget used, the dropped lines with
their reasons and the answer with its cited lines. It is public, like ``/healthz``: with API
keys it asks for one once and keeps it in the tab's ``sessionStorage``, sent as
``Authorization: Bearer``. Its Content-Security-Policy allows this origin only, and no inline
script or style.
"""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI
from fastapi.responses import FileResponse
from starlette.staticfiles import StaticFiles

__all__ = ["PAGE_HEADERS", "STATIC_DIR", "add_page"]

STATIC_DIR = Path(__file__).with_name("static")
PAGE_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
                               "img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-cache",
}


def add_page(app: FastAPI) -> None:
    """Serve the page at ``GET``/``HEAD /`` and its files at ``/static/`` on ``app``."""
    app.mount("/static", StaticFiles(directory=STATIC_DIR), name="static")

    @app.api_route("/", methods=["GET", "HEAD"], include_in_schema=False)
    async def page() -> FileResponse:
        return FileResponse(STATIC_DIR / "index.html", media_type="text/html; charset=utf-8", headers=PAGE_HEADERS)
