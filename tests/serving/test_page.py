"""`GET /`: the page and its files are public, same-origin only, shipped as package data; the
page learns from `/healthz` whether to ask for a key. The browser itself is driven in
`tests/integration/test_page_browser.py`."""

from __future__ import annotations

import fnmatch
import re
import tomllib

import pytest
from fastapi.testclient import TestClient

from rootweaver_capabilities.config import MultiHopConfig
from rootweaver_capabilities.serving.http import create_app
from rootweaver_capabilities.serving.page import PAGE_HEADERS, STATIC_DIR
from servers import REPO

KEY = "page-key-0123456789abcdef"
CONFIG = MultiHopConfig.from_mapping({"llm": {"provider": "none"}}, source="test")
FILES = sorted(p.name for p in STATIC_DIR.iterdir())
TYPES = {".html": "text/html", ".js": "text/javascript", ".css": "text/css"}


@pytest.fixture(scope="module")
def client():
    with TestClient(create_app(CONFIG, [KEY])) as c:
        yield c


def test_the_page_is_public_and_sent_with_its_policy(client):
    page = client.get("/")
    assert page.status_code == 200 and page.headers["content-type"] == "text/html; charset=utf-8"
    assert {k: page.headers[k] for k in PAGE_HEADERS} == PAGE_HEADERS
    assert "default-src 'none'" in page.headers["content-security-policy"]
    assert '<script src="/static/page.js" defer></script>' in page.text
    assert client.head("/").status_code == 200
    assert "/" not in client.get("/openapi.json", headers={"Authorization": f"Bearer {KEY}"}).json()["paths"]


@pytest.mark.parametrize("name", FILES)
def test_each_static_file_is_public_with_its_type(client, name):
    r = client.get(f"/static/{name}")
    assert r.status_code == 200 and r.headers["content-type"].startswith(TYPES[name[name.rindex("."):]])
    assert r.content == (STATIC_DIR / name).read_bytes()


def test_the_page_loads_nothing_from_elsewhere_and_writes_text_only():
    assert FILES == ["index.html", "page.css", "page.js"]
    for name in FILES:
        text = (STATIC_DIR / name).read_text(encoding="utf-8")
        assert not re.search(r"https?:|//[\w.-]+\.\w|@import|url\(", text), name  # no CDN, no web font
    script = (STATIC_DIR / "page.js").read_text(encoding="utf-8")
    assert not re.search(r"innerHTML|outerHTML|insertAdjacentHTML|document\.write|eval\(", script)
    assert "sessionStorage" in script and "localStorage" not in script  # the key lives as long as the tab


def test_the_static_files_are_package_data():
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    patterns = pyproject["tool"]["setuptools"]["package-data"]["rootweaver_capabilities.serving"]
    assert all(any(fnmatch.fnmatch(f"static/{name}", p) for p in patterns) for name in FILES)


def test_healthz_tells_the_page_whether_to_ask_for_a_key(client):
    assert client.get("/healthz").json()["auth"] == "bearer"
    with TestClient(create_app(CONFIG)) as open_client:
        assert open_client.get("/healthz").json()["auth"] == "none"
        assert open_client.get("/").status_code == 200
