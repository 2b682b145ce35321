"""The HTML report in a real browser (Debian's Chromium driven by Playwright): no horizontal
scroll at 1280 px however wide its tables and long its names, no request beyond the file
itself, no script, and a print stylesheet that fits the page; on a small faulty report and
on one of 50,000 partitions.

Playwright's own browser download is not used: the system ``chromium`` package is (``make
test`` installs it where missing). A machine without it fails here, saying how to install it.
"""

from __future__ import annotations

import logging
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, Request, Route, sync_playwright

from audit.snapshot import GroupOffsetRecord, GroupRecord, PartitionRecord, write_table
from tests.cli import run_in_process
from tests.output_roots import audit_argv
from tests.snapshots import faulty_pair, group, offset, part, write_pair

log = logging.getLogger(__name__)

# Kafka allows 249 characters in a topic name; these have no break opportunity in them (dots
# and underscores only), the worst case for a table cell.
LONG_TOPIC = ("payments.settlement.eu_west_1.reconciled_" * 6)[:200]
LONG_GROUP = ("billing_reconciliation.consumer.eu_west_1_" * 6)[:200]
WIDTH = 1280
NARROW = 1024
# A4's width at 96 px per inch (210 mm) less report-print.css's page margins (10 mm each side).
PAPER_WIDTH = 718
NO_CHROMIUM = (
    "Chromium is not installed: these tests drive Debian's system browser, not Playwright's download. "
    "Install it with `apt-get install -y chromium` (as root; `make test` does it where it is missing)."
)


def _chromium() -> str | None:
    found = shutil.which("chromium") or "/usr/bin/chromium"
    return found if Path(found).is_file() else None


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser | None]:
    """Chromium, or None where it is missing (each test then fails saying how to install it)."""
    executable = _chromium()
    if executable is None:
        yield None
        return
    with sync_playwright() as pw:
        launched = pw.chromium.launch(executable_path=executable, args=["--no-sandbox"])
        try:
            yield launched
        finally:
            launched.close()


def _audit(src: Path, dst: Path, run: Path) -> Path:
    proc = run_in_process(*audit_argv(src, dst, run))
    assert proc.returncode == 1, proc.stdout[-2000:] + proc.stderr[-3000:]  # FAIL: the pairs are faulty
    report = run / "report" / "index.html"
    assert report.is_file(), proc.stderr[-3000:]
    return report


def _append(snapshot: Path, table: str, record_type: type[Any], rows: list[Any]) -> None:
    """Rows added to a table of a written snapshot."""
    import pyarrow.parquet as pq

    old = [record_type(**r) for r in pq.read_table(snapshot / f"{table}.parquet").to_pylist()]
    write_table(snapshot, table, tuple(old + rows))


@pytest.fixture(scope="module")
def faulty_report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The faulty pair plus a 200-character topic and group id, each with failing rows: the
    worst-offenders tables at their widest and names with nowhere to break."""
    root = tmp_path_factory.mktemp("faulty-report")
    src, dst = faulty_pair(root / "snaps")
    _append(
        src,
        "partitions",
        PartitionRecord,
        [
            *(part(LONG_TOPIC, p, high_watermark=50_000) for p in range(3)),
            part(LONG_TOPIC + "-gone"),
        ],
    )
    _append(
        dst,
        "partitions",
        PartitionRecord,
        [
            part(LONG_TOPIC, 0, high_watermark=100, leader_epoch=8),  # lags
            part(LONG_TOPIC, 1, high_watermark=50_000, leader_epoch=4),  # DLE below SLE
            part(LONG_TOPIC, 2, high_watermark=50_000, leader_epoch=8),
        ],
    )
    _append(src, "groups", GroupRecord, [group(LONG_GROUP)])
    _append(dst, "groups", GroupRecord, [group(LONG_GROUP)])
    _append(
        src,
        "group_offsets",
        GroupOffsetRecord,
        [offset(LONG_GROUP, 40), offset(LONG_GROUP, 900, LONG_TOPIC, 2)],
    )
    _append(
        dst,
        "group_offsets",
        GroupOffsetRecord,
        [offset(LONG_GROUP, 70), offset(LONG_GROUP, 60_000, LONG_TOPIC, 2)],  # ahead; past the LEO
    )
    return _audit(src, dst, root / "run")


@pytest.fixture(scope="module")
def large_report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """50,000 partitions (500 topics of 100), with some lag everywhere, a lagging partition
    past max_lag_records in every topic and a few epoch faults."""
    root = tmp_path_factory.mktemp("large-report")
    topics, partitions = 500, 100
    src, dst = [], []
    for t in range(topics):
        name = f"events.tenant-{t:03d}.v1"
        for p in range(partitions):
            hw = 100_000 + p
            src.append(part(name, p, high_watermark=hw, last_stable_offset=hw))
            lag = 20_000 if p == 0 else p % 7
            dst.append(
                part(
                    name,
                    p,
                    high_watermark=hw - lag,
                    last_stable_offset=hw - lag,
                    leader_epoch=4 if (t % 50 == 0 and p == 1) else 8,
                )
            )
    groups = [group(f"consumer-{t:03d}") for t in range(0, topics, 25)]
    offsets = [offset(g.group_id, 90_000, f"events.tenant-{i * 25:03d}.v1", 3) for i, g in enumerate(groups)]
    started = time.monotonic()
    src_dir, dst_dir = write_pair(root / "snaps", src, dst, groups, groups, offsets, offsets)
    log.info("snapshot pair of %d partitions written in %.1fs", len(src), time.monotonic() - started)
    started = time.monotonic()
    report = _audit(src_dir, dst_dir, root / "run")
    log.info("audit of %d partitions (--engine local): %.1fs", len(src), time.monotonic() - started)
    return report


def _open(browser: Browser, report: Path) -> tuple[Page, list[str], float]:
    """The report in a new page: every request it made, and its load time in seconds. Every
    request but the file itself is aborted (the page must need none)."""
    url = report.resolve().as_uri()
    page = browser.new_page(viewport={"width": WIDTH, "height": 900})
    requests: list[str] = []

    def only_the_file(route: Route) -> None:
        if route.request.url == url:
            route.continue_()
        else:
            route.abort()

    def record(request: Request) -> None:
        requests.append(request.url)

    page.on("request", record)
    page.route("**/*", only_the_file)
    started = time.monotonic()
    response = page.goto(url, wait_until="load")
    took = time.monotonic() - started
    assert response is None or response.ok, f"{url} did not load: {response.status if response else ''}"
    return page, requests, took


def _scroll_width(page: Page) -> int:
    return int(page.evaluate("document.documentElement.scrollWidth"))


def _wide_elements(page: Page, limit: int) -> list[str]:
    """What sticks out past ``limit`` px, for the failure message."""
    found: list[str] = page.evaluate(
        """limit => [...document.querySelectorAll('body *')]
            .filter(e => e.getBoundingClientRect().right > limit + 0.5)
            .slice(0, 8)
            .map(e => e.tagName + ' ' + Math.round(e.getBoundingClientRect().right) + 'px: '
                 + (e.textContent || '').slice(0, 60))""",
        limit,
    )
    return found


def _check(browser: Browser | None, report: Path, tmp_path: Path, name: str) -> float:
    """Every assertion the report must pass in the browser; returns its load time."""
    if browser is None:
        pytest.fail(NO_CHROMIUM)
    page, requests, took = _open(browser, report)
    try:
        page.screenshot(path=str(tmp_path / f"{name}-{WIDTH}.png"), full_page=True)  # for debugging

        heading = page.locator("h1").inner_text()
        assert heading == "Kafka mirror audit", f"the report did not render: its heading is {heading!r}"

        width = _scroll_width(page)
        assert width <= WIDTH, (
            f"the page scrolls sideways at {WIDTH} px: scrollWidth {width}; {_wide_elements(page, WIDTH)}"
        )

        assert requests == [report.resolve().as_uri()], f"the report requested more than itself: {requests}"

        assert page.locator("script").count() == 0, "the report holds a <script> element"

        print_styles = page.evaluate(
            """() => document.querySelectorAll(
                    'style[media="print"], link[rel=stylesheet][media="print"]').length
                + [...document.styleSheets].flatMap(s => [...s.cssRules])
                    .filter(r => r instanceof CSSMediaRule && r.media.mediaText.includes('print')).length"""
        )
        assert print_styles > 0, "the report has no print stylesheet"

        page.set_viewport_size({"width": NARROW, "height": 900})
        narrow = _scroll_width(page)
        assert narrow <= NARROW, (
            f"the page scrolls sideways at {NARROW} px: scrollWidth {narrow}; {_wide_elements(page, NARROW)}"
        )

        page.emulate_media(media="print")
        page.set_viewport_size({"width": PAPER_WIDTH, "height": 1123})
        page.screenshot(path=str(tmp_path / f"{name}-print.png"), full_page=True)  # for debugging
        printed = _scroll_width(page)
        assert printed <= PAPER_WIDTH, (
            f"printed, the page is wider than A4's {PAPER_WIDTH} px: scrollWidth {printed}; "
            f"{_wide_elements(page, PAPER_WIDTH)}"
        )
    finally:
        page.close()
    return took


def test_faulty_report_fits_the_window_and_the_page(
    browser: Browser | None, faulty_report: Path, tmp_path: Path
) -> None:
    html = faulty_report.read_text(encoding="utf-8")
    assert LONG_TOPIC in html and LONG_GROUP in html, "the long names did not reach the report"
    took = _check(browser, faulty_report, tmp_path, "faulty")
    log.info("faulty report (%d bytes) loaded in %.2fs", len(html), took)


def test_report_of_50000_partitions_renders_and_fits(
    browser: Browser | None, large_report: Path, tmp_path: Path
) -> None:
    assert "partitions in scope<b>50000</b>" in large_report.read_text(encoding="utf-8")
    took = _check(browser, large_report, tmp_path, "large")
    # Measured, never asserted: the machine's speed is not the report's.
    log.info("report of 50,000 partitions (%d bytes) loaded in %.2fs", large_report.stat().st_size, took)
