"""The reports in a real browser: headless Chromium at 1400 px opens the index and every report
from ``file://`` and checks there are no console errors, every image loads, every internal link
resolves (file and anchor), the Verdict column is on screen, the filters and the figure zoom
work; a tiny BERT's diagnose report reads at a glance (calls by number on the figure's axis, a
key naming them, the rank's sample cap marked). The index's screenshot is written as an
artefact to ``$RELULAB_ARTEFACTS/index.png`` (default ``build/test-artefacts``); with
``RELULAB_UPDATE_SCREENSHOT=1`` it also replaces the README's ``docs/images/index.png``, so an
ordinary test run leaves the checkout unchanged.

Needs Debian's ``chromium`` and ``chromium-driver`` (``.ci/run`` installs them) and Selenium;
skipped with the reason when they are missing.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest

from relulab import cli
from tests.report.report_samples import write_sample_site

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")
pytestmark = pytest.mark.skipif(
    not (CHROMIUM and CHROMEDRIVER),
    reason="headless Chromium is not installed (apt-get install chromium chromium-driver)",
)
webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed")

WIDTH, HEIGHT = 1400, 1000
REPOSITORY = Path(__file__).resolve().parents[2]
README_SCREENSHOT = REPOSITORY / "docs" / "images" / "index.png"
SCREENSHOT = (
    Path(os.environ.get("RELULAB_ARTEFACTS", REPOSITORY / "build" / "test-artefacts")) / "index.png"
)
TINY = {
    "prepost-ln": ["width=32", "hidden=64", "blocks=40", "n_samples=200"],
    "anisotropy": ["d=32", "D=128", "n_samples=2000", "slopes=11", "spectrum_points=20"],
    "single-neuron": [
        "steps=300",
        "silu_steps=300",
        "grid_size=3",
        "boundary_points=3",
        "n_points=20",
        "record_every=50",
        "grid_record_every=100",
    ],
}


@pytest.fixture(scope="module")
def browser():
    from selenium.webdriver.chrome.service import Service

    profile = tempfile.mkdtemp(prefix="relulab-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for argument in (
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--hide-scrollbars",
        f"--user-data-dir={profile}",
        f"--window-size={WIDTH},{HEIGHT}",
    ):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(options=options, service=Service(CHROMEDRIVER))
    yield driver
    driver.quit()
    shutil.rmtree(profile, ignore_errors=True)


@pytest.fixture(scope="module")
def reproduce_dir(tmp_path_factory):
    """Real runs at tiny sizes in folders named unlike their experiments, one diagnose report,
    and ``relulab report PARENT`` over them."""
    parent = tmp_path_factory.mktemp("reproduce")
    for name, settings in TINY.items():
        out = parent / f"{name}-tiny"
        overrides = [f"--set={setting}" for setting in settings]
        assert cli.main(["run", name, "--quiet", "--out", str(out), *overrides]) == 0
    assert cli.main(["report", str(parent)]) == 0
    diagnose = [
        "diagnose",
        "relulab.nn.examples:small_cnn",
        "--samples=16",
        "--input-shape=3,16,16",
        "--compare-inits=default,kaiming_normal,lecun_normal,scale_bias",
        f"--out={parent / 'diagnose'}",
    ]
    assert cli.main(diagnose) == 0
    return parent


@pytest.fixture(scope="module")
def sample_dir(tmp_path_factory):
    """Pages with hostile strings, an inconclusive claim, an old-style summary, an error."""
    out = tmp_path_factory.mktemp("samples")
    write_sample_site(out)
    return out


class _Ids(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.ids: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.ids.update(value for name, value in attrs if name == "id" and value)


def _ids(path: Path) -> set[str]:
    parser = _Ids()
    parser.feed(path.read_text(encoding="utf-8"))
    return parser.ids


def _open(driver, page: Path) -> list[dict]:
    """Load ``page``; the console's errors and warnings while loading."""
    driver.get_log("browser")  # drop what earlier pages left
    driver.get(page.as_uri())
    return [e for e in driver.get_log("browser") if e["level"] in ("SEVERE", "WARNING")]


def _check_page(driver, page: Path) -> None:
    assert _open(driver, page) == [], f"console messages on {page}"
    assert driver.execute_script("return typeof window.alert") == "function"
    images = driver.execute_script(
        "return Array.from(document.images).filter(i => i.getAttribute('src'))"
        ".map(i => [i.alt, i.complete, i.naturalWidth])"
    )
    for alt, complete, width in images:
        assert complete and width > 0, f"image {alt!r} did not load on {page}"
    hrefs = driver.execute_script(
        "return Array.from(document.querySelectorAll('a[href]')).map(a => a.href)"
    )
    for href in hrefs:
        url = urlparse(href)
        assert url.scheme == "file", f"{page} links outside: {href}"
        target = Path(unquote(url.path))
        assert target.is_file(), f"{page} links to a missing file: {href}"
        if url.fragment and target.suffix == ".html":
            assert unquote(url.fragment) in _ids(target), f"{page}: no anchor for {href}"
    overflow = driver.execute_script(
        "return document.documentElement.scrollWidth - window.innerWidth"
    )
    assert overflow <= 0, f"{page} is {overflow} px wider than the window"
    for right in driver.execute_script(
        "return Array.from(document.querySelectorAll('th'))"
        ".filter(th => th.textContent.trim() === 'Verdict')"
        ".map(th => th.getBoundingClientRect().right)"
    ):
        assert right <= WIDTH, f"the Verdict column of {page} ends at {right} px"


def _pages(directory: Path) -> list[Path]:
    return [directory / "index.html", *sorted(directory.glob("*/report.html"))]


def test_every_page_loads_cleanly_at_1400_px(browser, reproduce_dir, sample_dir):
    pages = _pages(reproduce_dir) + _pages(sample_dir)
    assert len(pages) == 2 + len(TINY) + 1 + 2  # two indexes, runs, diagnose, two samples
    for page in pages:
        _check_page(browser, page)


TINY_BERT = """
import torch
import transformers

def bert():
    torch.manual_seed(0)
    return transformers.BertModel(transformers.BertConfig(
        vocab_size=50, hidden_size=32, num_hidden_layers=4, num_attention_heads=2,
        intermediate_size=64, max_position_embeddings=64))
"""


@pytest.fixture(scope="module")
def transformer_report(tmp_path_factory):
    """``relulab diagnose`` of a 4-layer BERT built from a config (nothing downloaded)."""
    pytest.importorskip("transformers")
    work = tmp_path_factory.mktemp("transformer")
    (work / "r35_tiny_bert.py").write_text(TINY_BERT)
    out = work / "diagnose"
    args = ["diagnose", "r35_tiny_bert:bert", "--samples=16", "--input-shape=16", "--quiet"]
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(work)
        patch.setattr("sys.dont_write_bytecode", True)
        assert cli.main([*args, "--compare-inits=default,kaiming_normal", f"--out={out}"]) == 0
        patch.delitem(__import__("sys").modules, "r35_tiny_bert", raising=False)
    return out / "report.html"


def test_a_transformer_diagnose_report_reads_at_a_glance(browser, transformer_report):
    _check_page(browser, transformer_report)  # no console errors, images load, no overflow
    figure = browser.find_element("css selector", "#figure-probe img")
    size = browser.execute_script(
        "const r = arguments[0].getBoundingClientRect(); return [r.width, r.height]", figure
    )
    assert figure.is_displayed() and size[0] > 600 and size[1] > 300, size
    ticks = [e.text for e in browser.find_elements("css selector", "#figure-key .tick")]
    assert ticks == ["0", "1", "2", "3", "4"]  # 4 MLP GELUs and the pooler's tanh, by number
    assert all(len(tick) <= 3 for tick in ticks), "tick labels are call numbers, not names"
    keys = browser.find_elements("css selector", "#figure-key .key")
    titles = [key.get_attribute("title") for key in keys]
    assert titles[0].startswith("encoder.layer.0.intermediate.intermediate_act_fn#0")
    assert titles[-1] == "pooler.activation#0 (Tanh)"
    boxes = [browser.execute_script("return arguments[0].getBoundingClientRect()", k) for k in keys]
    for a, b in zip(boxes, boxes[1:], strict=False):  # the key's entries never overlap
        assert a["right"] <= b["left"] + 0.5 or a["bottom"] <= b["top"] + 0.5, (a, b)
    assert browser.find_element("id", "advice").is_displayed()
    flags = [e.text for e in browser.find_elements("css selector", "td .flag")]
    assert flags and set(flags) == {"cap"}  # 16 sequences: every MLP's centred rank at 15


def _visible(driver, selector: str) -> list:
    return [e for e in driver.find_elements("css selector", selector) if e.is_displayed()]


def _choose(driver, name: str, value: str) -> None:
    from selenium.webdriver.support.ui import Select

    Select(driver.find_element("css selector", f"select[data-filter='{name}']")).select_by_value(
        value
    )


def test_filters_show_only_the_matching_claims(browser, sample_dir):
    _open(browser, sample_dir / "index.html")
    rows = _visible(browser, "tr.claim")
    assert len(rows) == 7
    _choose(browser, "standing", "fails")
    shown = _visible(browser, "tr.claim")
    assert [r.get_attribute("data-standing") for r in shown] == ["fails", "fails"]
    assert browser.find_element("id", "shown").text == "2 of 7 claims shown"
    _choose(browser, "seed", "003")
    assert _visible(browser, "tr.claim") == [], "no failing claim of seed 003"
    assert _visible(browser, "section.experiment") == []
    _choose(browser, "standing", "")
    shown = _visible(browser, "tr.claim")
    assert [r.get_attribute("data-standing") for r in shown] == ["inconclusive", "holds"]
    _choose(browser, "kind", "beyond")
    shown = _visible(browser, "tr.claim")
    assert [r.get_attribute("data-kind") for r in shown] == ["beyond"]
    _choose(browser, "kind", "")
    _choose(browser, "seed", "")
    _choose(browser, "standing", "not tested")
    shown = _visible(browser, "tr.claim")
    assert [r.get_attribute("data-standing") for r in shown] == ["not tested"]
    assert "150 steps" in shown[0].text
    _choose(browser, "standing", "")
    _choose(browser, "preset", "quick")
    assert {r.get_attribute("data-preset") for r in _visible(browser, "tr.claim")} == {"quick"}
    assert len(_visible(browser, "tr.claim")) == 2
    browser.find_element("id", "reset-filters").click()
    assert len(_visible(browser, "tr.claim")) == 7


def test_figures_enlarge_on_click(browser, reproduce_dir):
    _open(browser, reproduce_dir / "prepost-ln-tiny" / "report.html")
    lightbox = browser.find_element("id", "lightbox")
    assert not lightbox.is_displayed()
    browser.find_element("css selector", "img.zoomable").click()
    assert lightbox.is_displayed()
    large = browser.execute_script(
        "const i = document.querySelector('#lightbox img'); return [i.naturalWidth, i.width]"
    )
    assert large[0] > 0 and large[1] > 0
    lightbox.click()
    assert not lightbox.is_displayed()


def test_index_screenshot(browser, reproduce_dir):
    _open(browser, reproduce_dir / "index.html")
    SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
    assert browser.save_screenshot(str(SCREENSHOT))
    assert SCREENSHOT.stat().st_size > 10_000
    if os.environ.get("RELULAB_UPDATE_SCREENSHOT") == "1":
        README_SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(SCREENSHOT, README_SCREENSHOT)
