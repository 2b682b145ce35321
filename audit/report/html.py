"""The self-contained HTML report: one file, no scripts, no remote resources.

Jinja2 with autoescaping renders every topic and group name as text; charts are inline
SVG drawn from the bounded report data, so the page opens offline and in mail clients.
Markup in a name is escaped, and so are its control characters (``audit.display``): a group
id may hold ESC sequences or a C1 CSI, which a pager, ``grep`` or a terminal showing the
file would act on, so none reaches the page raw.
"""

from __future__ import annotations

import html
import json
import os
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from jinja2 import Environment, select_autoescape
from markupsafe import Markup, escape

from audit.display import visible
from audit.fsutil import atomic_write_text
from audit.report.data import ReportData
from audit.validate.figures import EXPECTED_LOSS, TOTAL_LAG, present, shown
from audit.validate.gaps import row_label
from audit.validate.invariants import ALL, named, with_details


def _resource(name: str) -> str:
    return resources.files("audit.report").joinpath("resources", name).read_text(encoding="utf-8")


_ORDER = {"fail": 0, "warn": 1, "pass": 2, "skipped": 3}


def _text(value: Any) -> str:
    """A value as SVG text: control characters shown as escapes, then markup escaped."""
    return html.escape(visible(str(value)))


def _finalize(value: Any) -> Any:
    """Every ``{{ }}`` of the template: text has its control characters shown as escapes
    (autoescaping then escapes its markup); the markup this module built passes as it is."""
    if isinstance(value, str) and not isinstance(value, Markup):
        return visible(value)
    return value


LABEL_CHARS = 48


def _label(value: Any) -> str:
    """A chart's row label, cut to what its margin holds; the whole name in its tooltip."""
    text = visible(str(value))
    if len(text) <= LABEL_CHARS:
        return html.escape(text)
    short = text[: LABEL_CHARS // 2 - 1] + "…" + text[-(LABEL_CHARS // 2) :]
    return f"<title>{html.escape(text)}</title>{html.escape(short)}"


def _svg_open(width: float, height: float, label: str = "") -> str:
    """An inline SVG that scales down with the page (its viewBox) and never past its size."""
    aria = f' aria-label="{_text(label)}"' if label else ""
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" width="{width}" '
        f'height="{height}" role="img"{aria}>'
    )


# A bar's colour is its row's verdict by the checks of the chart's invariants (report/data.py).
_VERDICT_COLOURS = {"fail": "#c62f2f", "warn": "#c98a00"}


def _svg_bars(
    rows: tuple[dict[str, Any], ...], value: str, label: Any, limit_line: float | None, color_fn: Any
) -> Markup:
    if not rows:
        return Markup('<p class="muted">No data.</p>')
    width, bar_h, left = 900, 16, 320
    values = [float(r[value] or 0) for r in rows]
    hi = max([*values, limit_line or 0, 1.0])
    lo = min([*values, 0.0])
    span = hi - lo or 1.0

    def x(v: float) -> float:
        return left + (v - lo) / span * (width - left - 60)

    parts = [_svg_open(width, len(rows) * bar_h + 10)]
    for i, (r, v) in enumerate(zip(rows, values, strict=True)):
        y = i * bar_h + 4
        x0, x1 = sorted((x(0), x(v)))
        parts.append(
            f'<text x="{left - 6}" y="{y + 11}" font-size="11" text-anchor="end">{_label(label(r))}</text>'
        )
        parts.append(
            f'<rect x="{x0:.1f}" y="{y}" width="{max(1.0, x1 - x0):.1f}" height="{bar_h - 4}" '
            f'fill="{color_fn(r)}"/>'
        )
        parts.append(f'<text x="{max(x0, x1) + 4:.1f}" y="{y + 11}" font-size="11">{_text(r[value])}</text>')
    if limit_line is not None:
        lx = x(limit_line)
        parts.append(
            f'<line x1="{lx:.1f}" x2="{lx:.1f}" y1="0" y2="{len(rows) * bar_h + 6}" stroke="#c62f2f" '
            'stroke-dasharray="4 3"/>'
        )
    parts.append("</svg>")
    return Markup("".join(parts))


def _svg_positions(rows: tuple[dict[str, Any], ...]) -> Markup:
    if not rows:
        return Markup('<p class="muted">No committed offsets in scope.</p>')
    width, bar_h, left = 900, 18, 380
    parts = [_svg_open(width, len(rows) * bar_h + 10)]
    for i, r in enumerate(rows):
        y = i * bar_h + 4
        start, end = int(r["log_start"] or 0), int(r["log_end"] or 0)
        committed, expected = r["committed"], r["expected_offset"]
        pts = [p for p in (start, end, committed, expected) if p is not None]
        lo, hi = min(pts), max(pts)
        span = (hi - lo) or 1

        def x(v: float, lo: int = lo, span: int = span) -> float:
            return left + (v - lo) / span * (width - left - 20)

        # A share group's dot is its start offset (KIP-932), synced by the same clamp.
        kind = " (share group)" if r.get("group_type") == "share" else ""
        label = f"{r['group_id']} {r['topic']}-{r['partition']}{kind}" + (" (active)" if r["active"] else "")
        parts.append(
            f'<text x="{left - 6}" y="{y + 12}" font-size="11" text-anchor="end">{_label(label)}</text>'
        )
        parts.append(
            f'<rect x="{x(start):.1f}" y="{y + 3}" width="{max(1.0, x(end) - x(start)):.1f}" height="{bar_h - 8}" '
            'fill="#cfd8e3"/>'
        )
        if expected is not None:
            parts.append(
                f'<line x1="{x(expected):.1f}" x2="{x(expected):.1f}" y1="{y}" y2="{y + bar_h - 2}" '
                'stroke="#1d2430" stroke-width="2"/>'
            )
        if committed is not None:
            inside = start <= committed <= end
            parts.append(
                f'<circle cx="{x(committed):.1f}" cy="{y + bar_h / 2 - 1:.1f}" r="4" '
                f'fill="{"#1f8a4c" if inside and committed == expected else ("#c98a00" if inside else "#c62f2f")}"/>'
            )
    parts.append("</svg>")
    return Markup("".join(parts))


_COVERAGE_COLORS = {
    "verified": "#1f8a4c",
    "mismatched": "#c62f2f",
    "unreadable": "#c98a00",
    "not_verified": "#cfd8e3",
}


def _svg_coverage(coverage: dict[str, Any] | None) -> Markup:
    """Per partition, its common offset range as a bar: verified (green), mismatched (red),
    unreadable (amber) and not yet verified (grey) stretches, from the record verification
    history."""
    rows = (coverage or {}).get("partitions") or []
    if not rows:
        return Markup("")
    width, bar_h, left = 900, 16, 320
    parts = [_svg_open(width, len(rows) * bar_h + 10)]
    for i, r in enumerate(rows):
        y = i * bar_h + 4
        ranges = r["ranges"]
        if not ranges:
            continue
        lo, hi = ranges[0]["start"], ranges[-1]["end"]
        span = (hi - lo) or 1
        label = f"{r['topic']}-{r['partition']} [{lo}, {hi})"
        parts.append(
            f'<text x="{left - 6}" y="{y + 11}" font-size="11" text-anchor="end">{_label(label)}</text>'
        )
        for g in ranges:
            x0 = left + (g["start"] - lo) / span * (width - left - 20)
            w = max(1.0, (g["end"] - g["start"]) / span * (width - left - 20))
            title = _text(f"{g['state']} [{g['start']}, {g['end']})")
            parts.append(
                f'<rect x="{x0:.1f}" y="{y}" width="{w:.1f}" height="{bar_h - 4}" '
                f'fill="{_COVERAGE_COLORS.get(g["state"], "#7d8796")}"><title>{title}</title></rect>'
            )
    parts.append("</svg>")
    return Markup("".join(parts))


def _history_rows(history: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for h in history:
        invs = (h.get("invariants") or {}).values()
        run = h.get("run") or {}
        out.append(
            {
                "dir": h.get("dir", ""),
                "started_at": str(run.get("started_at") or h.get("dir", "")),
                "verdict": h.get("verdict", "?"),
                "failed": sum(1 for i in invs if i.get("status") == "fail"),
                "warned": sum(1 for i in invs if i.get("status") == "warn"),
                "violations": sum(int(i.get("violations") or 0) for i in invs),
                "total_lag": run.get(TOTAL_LAG.name),
                "expected_loss": run.get(EXPECTED_LOSS.name, h.get(EXPECTED_LOSS.name)),
            }
        )
    return out


_TREND_W, _TREND_LEFT, _TREND_RIGHT = 1000, 90, 120


def _trend_x(i: int, n: int) -> float:
    span = _TREND_W - _TREND_LEFT - _TREND_RIGHT
    return _TREND_LEFT + (span * i / (n - 1) if n > 1 else span / 2)


def _polyline(values: list[float | None], top: float, height: float, hi: float, color: str) -> str:
    """The runs' values as a line, broken where a run has no value (not drawn as 0)."""
    n = len(values)
    parts: list[str] = []
    run: list[tuple[float, float]] = []

    def flush() -> None:
        if len(run) == 1:
            x, y = run[0]
            parts.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="2" fill="{color}"/>')
        elif run:
            pts = " ".join(f"{x:.1f},{y:.1f}" for x, y in run)
            parts.append(f'<polyline points="{pts}" fill="none" stroke="{color}" stroke-width="1.5"/>')
        run.clear()

    for i, v in enumerate(values):
        if v is None:
            flush()
            continue
        run.append((_trend_x(i, n), top + height - (v / hi if hi else 0) * height))
    flush()
    return "".join(parts)


def _svg_trend(rows: list[dict[str, Any]], key: str, title: str, color: str) -> Markup:
    """One figure across the runs, oldest left: the line, its largest value and the latest,
    the first and last run's dates (readable at 365 runs: no per-run labels)."""
    values = [None if r.get(key) is None else float(r[key]) for r in rows]
    known = [v for v in values if v is not None]
    if not known:
        return Markup(f'<p class="muted">{_text(title)}: not recorded by these runs.</p>')
    hi = max(*known, 1.0)
    height, top = 120, 28
    parts = [_svg_open(_TREND_W, height + top + 22, title)]
    parts.append(f'<text x="0" y="12" font-size="12" font-weight="600">{_text(title)}</text>')
    latest = "none" if values[-1] is None else _number(values[-1])
    parts.append(
        f'<text x="{_TREND_W}" y="{top + 4}" font-size="11" text-anchor="end">largest '
        f'{_text(_number(max(known)))}</text><text x="{_TREND_W}" y="{top + height}" font-size="11" '
        f'text-anchor="end">latest {_text(latest)}</text>'
    )
    for frac in (0.0, 0.5, 1.0):
        y = top + height - frac * height
        parts.append(
            f'<line x1="{_TREND_LEFT}" x2="{_TREND_W - _TREND_RIGHT}" y1="{y:.1f}" y2="{y:.1f}" stroke="#dde1e7"/>'
            f'<text x="{_TREND_LEFT - 6}" y="{y + 4:.1f}" font-size="10" text-anchor="end">'
            f"{_text(_number(hi * frac))}</text>"
        )
    parts.append(_polyline(values, top, height, hi, color))
    parts.append(_date_axis(rows, top + height + 16))
    parts.append("</svg>")
    return Markup("".join(parts))


def _date_axis(rows: list[dict[str, Any]], y: float) -> str:
    first, last = rows[0]["started_at"][:16], rows[-1]["started_at"][:16]
    return (
        f'<text x="{_TREND_LEFT}" y="{y:.1f}" font-size="10">{_text(first)}</text>'
        f'<text x="{_TREND_W - _TREND_RIGHT}" y="{y:.1f}" font-size="10" text-anchor="end">'
        f"{_text(last)} ({len(rows)} runs)</text>"
    )


def _svg_violation_trends(history: list[dict[str, Any]], rows: list[dict[str, Any]]) -> Markup:
    """Violations per invariant across the runs: one strip per invariant that had any,
    each scaled to its own largest count (a run that did not check it leaves a gap)."""
    ids = sorted({k for h in history for k, v in (h.get("invariants") or {}).items() if v.get("violations")})
    if not ids:
        return Markup('<p class="muted">No invariant had violations in these runs.</p>')
    strip, gap, top = 34, 8, 4
    height = top + len(ids) * (strip + gap) + 20
    parts = [_svg_open(_TREND_W, height, "violations per invariant across runs")]
    for row, inv_id in enumerate(ids):
        y0 = top + row * (strip + gap)
        values: list[float | None] = []
        for h in history:
            inv = (h.get("invariants") or {}).get(inv_id) or {}
            checked = inv.get("status") in ("pass", "warn", "fail")
            values.append(float(inv.get("violations") or 0) if checked else None)
        known = [v for v in values if v is not None]
        hi = max([*known, 1.0])
        color = "#c62f2f" if known and known[-1] else "#3b6fb6"
        parts.append(
            f'<text x="{_TREND_LEFT - 6}" y="{y0 + strip / 2 + 4:.1f}" font-size="11" text-anchor="end">'
            f"{_text(inv_id)}</text>"
            f'<line x1="{_TREND_LEFT}" x2="{_TREND_W - _TREND_RIGHT}" y1="{y0 + strip}" y2="{y0 + strip}" '
            'stroke="#dde1e7"/>'
        )
        parts.append(_polyline(values, y0, strip, hi, color))
        latest = "not checked" if not known or values[-1] is None else _number(values[-1] or 0)
        parts.append(
            f'<text x="{_TREND_W}" y="{y0 + strip / 2 + 4:.1f}" font-size="10" text-anchor="end">'
            f"now {_text(latest)}, max {_text(_number(max(known) if known else 0))}</text>"
        )
    parts.append(_date_axis(rows, height - 4))
    parts.append("</svg>")
    return Markup("".join(parts))


def _number(v: float) -> str:
    return f"{int(v):,}" if float(v).is_integer() else f"{v:,.1f}"


def _with_code(text: Any) -> Markup:
    """Advice text with its `commands` set as code (everything escaped first)."""
    pieces = str(text).split("`")
    return Markup("").join(
        Markup("<code>{}</code>").format(visible(p)) if i % 2 else escape(visible(p))
        for i, p in enumerate(pieces)
    )


def _ms_time(ms: int | None) -> str:
    """An epoch-milliseconds time as UTC to the second; empty where unknown."""
    from datetime import UTC, datetime

    if ms is None:
        return ""
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _seen(entry: dict[str, Any] | None) -> str:
    """ "since 2026-11-20, 4 runs" for an example row, from its ``examples_seen`` entry."""
    if not entry or entry.get("runs") is None:
        return "not tracked"
    if entry["runs"] == 1:
        return "new in this run"
    return f"since {str(entry.get('first_seen_at') or '')[:10]}, {entry['runs']} runs"


@dataclass(frozen=True)
class _Tile:
    label: str
    text: str


def _tiles(summary: dict[str, Any]) -> list[_Tile]:
    """The figures' tiles, as declared (audit.validate.figures): the run's total lag, then
    the job's summed figures (an unknown one says why)."""
    tiles = []
    run = summary.get("run") or {}
    if TOTAL_LAG.name in run:
        tiles.append(_Tile(f"{TOTAL_LAG.label} ({TOTAL_LAG.unit})", shown(run, TOTAL_LAG.name)))
    for s in present(summary):
        tiles.append(_Tile(f"{s.figure.label} ({s.figure.unit})", s.text))
    return tiles


def render_report(
    summary: dict[str, Any],
    data: ReportData,
    config: dict[str, Any],
    history: list[dict[str, Any]],
    out_path: Path,
    docs_index: Path | None,
) -> Path:
    env = Environment(autoescape=select_autoescape(default=True, default_for_string=True), finalize=_finalize)
    invariants = summary["invariants"]
    ordered = sorted(invariants.items(), key=lambda kv: (_ORDER.get(kv[1]["status"], 9), kv[0]))
    counts = {s: sum(1 for v in invariants.values() if v["status"] == s) for s in _ORDER}
    thresholds = config.get("thresholds", {})
    trend_rows = _history_rows(history)
    env.filters["with_code"] = _with_code
    env.filters["seen"] = _seen
    env.filters["ms_time"] = _ms_time
    env.filters["row_label"] = row_label
    template = env.from_string(_resource("report.html.j2"))
    text = template.render(
        css=Markup(_resource("report.css")),
        print_css=Markup(_resource("report-print.css")),
        summary=summary,
        tiles=_tiles(summary),
        run=summary.get("run", {}),
        ordered=ordered,
        counts=counts,
        data=data,
        lag_chart=_svg_bars(
            data.lag,
            "lag_records",
            lambda r: f"{r['topic']}-{r['partition']}",
            float(thresholds.get("max_lag_records", 0)) or None,
            lambda r: _VERDICT_COLOURS.get(r.get("verdict"), "#3b6fb6"),
        ),
        epoch_chart=_svg_bars(
            data.epochs,
            "headroom",
            lambda r: f"{r['topic']}-{r['partition']}",
            float(thresholds.get("epoch_headroom", 0)) or None,
            lambda r: _VERDICT_COLOURS.get(r.get("verdict"), "#1f8a4c"),
        ),
        group_chart=_svg_positions(data.group_positions),
        coverage_chart=_svg_coverage(
            next(
                (invariants[i].get("coverage") for i in with_details("record_divergence") if i in invariants),
                None,
            )
        ),
        # Which details each invariant shows (Invariant.details): the template renders by kind.
        shows={inv_id: inv.details for inv_id, inv in ALL.items()},
        epoch_ids=(named.CM_EPOCH_1, named.CM_EPOCH_2),  # the epoch chart's caption
        history=trend_rows,
        recent=trend_rows[-10:],
        changes=summary.get("changes") or {},
        lag_trend=_svg_trend(trend_rows, "total_lag", "total lag (records)", "#3b6fb6"),
        loss_trend=_svg_trend(
            trend_rows, "expected_loss", "expected loss at a failover (records)", "#c98a00"
        ),
        violation_trend=_svg_violation_trends(history, trend_rows),
        # JSON escapes every control character; its newlines lay the block out.
        config_json=escape(json.dumps(config, indent=2, default=str)),
        docs_link=None if docs_index is None else os.path.relpath(docs_index, out_path.parent),
    )
    return atomic_write_text(out_path, text)
