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
from importlib import resources
from pathlib import Path
from typing import Any

from jinja2 import Environment, select_autoescape
from markupsafe import Markup, escape

from audit.display import visible
from audit.fsutil import atomic_write_text
from audit.report.data import ReportData


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

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{len(rows) * bar_h + 10}" role="img">'
    ]
    for i, (r, v) in enumerate(zip(rows, values, strict=True)):
        y = i * bar_h + 4
        x0, x1 = sorted((x(0), x(v)))
        parts.append(
            f'<text x="{left - 6}" y="{y + 11}" font-size="11" text-anchor="end">{_text(label(r))}</text>'
        )
        parts.append(
            f'<rect x="{x0:.1f}" y="{y}" width="{max(1.0, x1 - x0):.1f}" height="{bar_h - 4}" '
            f'fill="{color_fn(v)}"/>'
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
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{len(rows) * bar_h + 10}" role="img">'
    ]
    for i, r in enumerate(rows):
        y = i * bar_h + 4
        start, end = int(r["dst_log_start_offset"] or 0), int(r["dst_high_watermark"] or 0)
        committed, expected = r["dst_committed_offset"], r["expected_offset"]
        pts = [p for p in (start, end, committed, expected) if p is not None]
        lo, hi = min(pts), max(pts)
        span = (hi - lo) or 1

        def x(v: float, lo: int = lo, span: int = span) -> float:
            return left + (v - lo) / span * (width - left - 20)

        label = f"{r['group_id']} {r['topic']}-{r['partition']}" + (" (active)" if r["dst_active"] else "")
        parts.append(
            f'<text x="{left - 6}" y="{y + 12}" font-size="11" text-anchor="end">{_text(label)}</text>'
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


_COVERAGE_COLORS = {"verified": "#1f8a4c", "mismatched": "#c62f2f", "not_verified": "#cfd8e3"}


def _svg_coverage(coverage: dict[str, Any] | None) -> Markup:
    """Per partition, its common offset range as a bar: verified (green), mismatched (red)
    and not yet verified (grey) stretches, from the record verification history."""
    rows = (coverage or {}).get("partitions") or []
    if not rows:
        return Markup("")
    width, bar_h, left = 900, 16, 320
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{len(rows) * bar_h + 10}" role="img">'
    ]
    for i, r in enumerate(rows):
        y = i * bar_h + 4
        ranges = r["ranges"]
        if not ranges:
            continue
        lo, hi = ranges[0]["start"], ranges[-1]["end"]
        span = (hi - lo) or 1
        label = f"{r['topic']}-{r['partition']} [{lo}, {hi})"
        parts.append(
            f'<text x="{left - 6}" y="{y + 11}" font-size="11" text-anchor="end">{_text(label)}</text>'
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
        out.append(
            {
                "dir": h.get("dir", ""),
                "verdict": h.get("verdict", "?"),
                "failed": sum(1 for i in invs if i.get("status") == "fail"),
                "warned": sum(1 for i in invs if i.get("status") == "warn"),
                "violations": sum(int(i.get("violations") or 0) for i in invs),
                "total_lag": (h.get("run") or {}).get("total_lag_records", ""),
            }
        )
    return out


def render_report(
    summary: dict[str, Any],
    data: ReportData,
    config: dict[str, Any],
    history: list[dict[str, Any]],
    out_path: Path,
    docs_index: Path,
) -> Path:
    env = Environment(autoescape=select_autoescape(default=True, default_for_string=True), finalize=_finalize)
    template = env.from_string(_resource("report.html.j2"))
    invariants = summary["invariants"]
    ordered = sorted(invariants.items(), key=lambda kv: (_ORDER.get(kv[1]["status"], 9), kv[0]))
    counts = {s: sum(1 for v in invariants.values() if v["status"] == s) for s in _ORDER}
    thresholds = config.get("thresholds", {})
    text = template.render(
        css=Markup(_resource("report.css")),
        summary=summary,
        run=summary.get("run", {}),
        ordered=ordered,
        counts=counts,
        data=data,
        lag_chart=_svg_bars(
            data.lag,
            "lag_records",
            lambda r: f"{r['topic']}-{r['partition']}",
            float(thresholds.get("max_lag_records", 0)) or None,
            lambda v: "#c62f2f" if v > float(thresholds.get("max_lag_records", 1e18)) or v < 0 else "#3b6fb6",
        ),
        epoch_chart=_svg_bars(
            data.epochs,
            "epoch_headroom",
            lambda r: f"{r['topic']}-{r['partition']}",
            float(thresholds.get("epoch_headroom", 0)) or None,
            lambda v: (
                "#c62f2f"
                if v < 0
                else ("#c98a00" if v < float(thresholds.get("epoch_headroom", 0)) else "#1f8a4c")
            ),
        ),
        group_chart=_svg_positions(data.group_positions),
        coverage_chart=_svg_coverage((invariants.get("CM-DATA-1") or {}).get("coverage")),
        history=_history_rows(history),
        # JSON escapes every control character; its newlines lay the block out.
        config_json=escape(json.dumps(config, indent=2, default=str)),
        docs_link=os.path.relpath(docs_index, out_path.parent),
    )
    return atomic_write_text(out_path, text)
