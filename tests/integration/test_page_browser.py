"""Integration: the page of `rootweaver serve --http` in a real headless browser.

Starts `rootweaver serve --http 127.0.0.1:PORT` on the demo corpus with an API key, drives
Debian's chromium (`apt-get install chromium`; `.ci/run` installs it) through Playwright for
Python (extra `page-test`), and stops the server by its PID. Skipped only when
`/usr/bin/chromium` is absent.
"""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from rootweaver_capabilities.serving.auth import API_KEY_ENV
from rootweaver_innovations.documents.demo import load_questions
from servers import DEMO, free_port, start, stop, write_config

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
KEY = "page-browser-key/0123456789"
QUESTIONS = [DEMO, *(q.question for q in load_questions()[:2])]  # a bridge question and two comparisons

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(not CHROMIUM.exists(), reason=f"no browser at {CHROMIUM}: apt-get install -y chromium"),
]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    port = free_port()
    proc = start(["serve", "--http", f"127.0.0.1:{port}"], write_config(tmp_path_factory.mktemp("page")), port,
                 env={API_KEY_ENV: KEY})
    yield f"http://127.0.0.1:{port}"
    err = stop(proc)  # SIGTERM to its PID, then SIGKILL after 10 s
    assert KEY not in err


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True)
        yield chromium
        chromium.close()


@pytest.fixture()
def page(browser, server):
    context = browser.new_context()
    tab = context.new_page()
    tab.set_default_timeout(30_000)
    tab.goto(f"{server}/")
    yield tab
    context.close()


def use_key(tab, key: str) -> None:
    from playwright.sync_api import expect

    expect(tab.locator("#key-form")).to_be_visible()
    tab.fill("#key", key)
    tab.click("#key-form button[type=submit]")
    expect(tab.locator("#key-form")).to_be_hidden()


def ask(tab, question: str) -> None:
    tab.fill("#question", question)
    tab.click("#ask")


@pytest.mark.parametrize("question", QUESTIONS)
def test_the_page_shows_every_hop_the_context_and_the_answer(page, server, question):
    from playwright.sync_api import expect

    record = httpx.post(f"{server}/v1/ask", json={"question": question}, timeout=30,
                        headers={"Authorization": f"Bearer {KEY}"}).json()
    expect(page.locator("#status")).to_have_text("ready: reader none, API key required")
    use_key(page, KEY)
    ask(page, question)
    expect(page.locator("#answer-text")).to_have_text(record["answer"]["text"])
    hops = page.locator("#hops > li")
    expect(hops).to_have_count(record["hop_count"])
    for i, hop in enumerate(record["hops"]):
        expect(hops.nth(i).locator(".hop-number")).to_have_text(f"hop {i + 1}")
        expect(hops.nth(i).locator(".sub-query")).to_have_text(hop["sub_query"])
        expect(hops.nth(i).locator(".reason")).to_have_text(hop["reason"])
        expect(hops.nth(i).locator(".passage-id")).to_have_text(hop["retrieved_ids"])
    expect(page.locator("#hop-state")).to_have_text(f"({record['hop_count']} taken, stopped: {record['stop_reason']})")
    expect(page.locator("#cited > li")).to_have_text(record["answer"]["cited_lines"])
    budget = record["budget"]
    expect(page.locator("#budget")).to_contain_text(f"{budget['used']} of {budget['limit']} {budget['unit']} used")
    expect(page.locator("#context > li")).to_have_text([line for line in record["synth_context"].split("\n") if line])
    expect(page.locator("#context > li.cited")).to_have_count(len(set(record["answer"]["cited_lines"])))
    rows = page.locator("#dropped tbody tr")
    expect(rows).to_have_count(len(record["dropped"]))
    first = record["dropped"][0]
    expect(rows.first.locator("td")).to_have_text([str(first["line"]), first["reason"], first["text"]])
    expect(page.locator("#error")).to_be_hidden()

    page.reload()  # the key is asked once per tab: it is in sessionStorage, not in the page
    expect(page.locator("#status")).to_have_text("ready: reader none, API key required")
    expect(page.locator("#key-form")).to_be_hidden()
    assert KEY not in page.content()


def test_a_wrong_key_shows_the_servers_one_line_error(page):
    from playwright.sync_api import expect

    use_key(page, "wrong-key-0123456789abcdef")
    ask(page, DEMO)
    expect(page.locator("#error")).to_have_text("401: missing or invalid API key")
    expect(page.locator("#key-form")).to_be_visible()  # asked again, the wrong key forgotten
    assert page.evaluate("sessionStorage.getItem('rootweaver.apiKey')") is None
    expect(page.locator("#hops > li")).to_have_count(0)
    use_key(page, KEY)
    ask(page, DEMO)
    expect(page.locator("#hops > li").first).to_be_visible()
    expect(page.locator("#error")).to_be_hidden()
    expect(page.locator("#answer-text")).not_to_be_empty()
