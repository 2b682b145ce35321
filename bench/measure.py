"""Measuring a benchmark's side: wall time, the peak resident set and the CPU time of a
process tree (sampled from /proc every 50 ms), for commands run at once or work done in this
process's running Spark session."""

from __future__ import annotations

import argparse
import logging
import os
import subprocess
import threading
import time
from collections.abc import Callable

log = logging.getLogger("bench")


def process_tree(pids: list[int], roots: bool = True) -> list[int]:
    """These processes (unless not ``roots``) and all their live descendants (from /proc)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(int(entry))
    out, todo, seen = [], list(pids), set()
    while todo:
        pid = todo.pop()
        if pid in seen:
            continue
        seen.add(pid)
        if roots or pid not in pids:
            out.append(pid)
        todo.extend(children.get(pid, []))
    return out


def _tree_rss(tree: list[int]) -> int:
    """Resident bytes of these processes."""
    total = 0
    for pid in tree:
        try:
            with open(f"/proc/{pid}/statm") as f:
                total += int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
        except (OSError, ValueError):
            pass
    return total


def _cpu_ticks(tree: list[int]) -> dict[int, int]:
    """User and system clock ticks each of these processes has used so far."""
    out = {}
    for pid in tree:
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            out[pid] = int(fields[11]) + int(fields[12])
        except (OSError, ValueError, IndexError):
            pass
    return out


class Peak:
    """The peak resident set and the CPU time of some process trees while a block runs,
    sampled every 50 ms from /proc: each process's CPU as last seen, less what it had used
    when the block began, so processes that end before the block does count too (to their
    last sample) and the session's long-lived ones count only what they used meanwhile."""

    def __init__(self, pids: Callable[[], list[int]], roots: bool = True) -> None:
        self.pids, self.roots, self.peak = pids, roots, 0
        self._start = _cpu_ticks(process_tree(pids(), roots))
        self._last = dict(self._start)
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _once(self) -> None:
        tree = process_tree(self.pids(), self.roots)
        self.peak = max(self.peak, _tree_rss(tree))
        self._last.update(_cpu_ticks(tree))

    def _sample(self) -> None:
        while not self._done.is_set():
            self._once()
            time.sleep(0.05)

    def cpu(self) -> float:
        """CPU seconds the trees used while the block ran."""
        ticks = sum(t - self._start.get(pid, 0) for pid, t in self._last.items())
        return ticks / os.sysconf("SC_CLK_TCK")

    def __enter__(self) -> Peak:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._done.set()
        self._thread.join()
        self._once()


Measured = tuple[float, int, float]  # wall seconds, peak resident bytes, CPU seconds


def run_commands(cmds: list[list[str]]) -> Measured:
    """Wall time of running ``cmds`` at once, the peak resident set of their trees and
    their CPU time."""
    procs: list[subprocess.Popen[bytes]] = []
    with Peak(lambda: [p.pid for p in procs]) as peak:
        started = time.perf_counter()
        procs.extend(subprocess.Popen(c, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE) for c in cmds)
        errors = [p.communicate()[1] for p in procs]
        elapsed = time.perf_counter() - started
    for cmd, p, err in zip(cmds, procs, errors, strict=True):
        if p.returncode != 0:
            raise SystemExit(f"{cmd[:4]} failed ({p.returncode}): {err[-800:]!r}")
    return elapsed, peak.peak, peak.cpu()


def in_session(work: Callable[[], None]) -> Measured:
    """Wall time of ``work`` in this process's running Spark session, the peak resident set
    of the session (this process's descendants: its JVM and the Python workers; not this
    process, which also holds what producing the topics left behind) and their CPU time."""
    with Peak(lambda: [os.getpid()], roots=False) as peak:
        started = time.perf_counter()
        work()
        elapsed = time.perf_counter() - started
    return elapsed, peak.peak, peak.cpu()


def best_of(sides: dict[str, Callable[[], Measured]], rounds: int, what: str) -> dict[str, Measured]:
    """Each side measured ``rounds`` times, interleaved: the fastest round's time and CPU,
    the largest peak of any round. ``what`` names the setup in the log lines."""
    best: dict[str, Measured] = {}
    for i in range(rounds):
        for name, measure in sides.items():
            elapsed, peak, cpu = measure()
            log.info(
                "%s, round %d, %s: %.2fs, peak %.0f MB, CPU %.2fs",
                what,
                i + 1,
                name,
                elapsed,
                peak / 1e6,
                cpu,
            )
            before = best.get(name)
            if before is None or elapsed < before[0]:
                best[name] = (elapsed, max(peak, before[1] if before else 0), cpu)
            else:
                best[name] = (before[0], max(peak, before[1]), before[2])
    return best


def print_rates(
    results: dict[int, dict[str, Measured]], labels: dict[str, str], small: int, large: int
) -> dict[str, float]:
    """The table of both sizes (records per cluster; rates over both clusters) and each
    side's marginal rate between them, 2 x (large - small) / (t_large - t_small); returns
    the marginal rates by side."""
    width = max(len(label) for label in labels.values()) + 2
    for n, best in results.items():
        total = 2 * n
        for name, label in labels.items():
            elapsed, peak, cpu = best[name]
            rate = total / elapsed
            print(
                f"{n:>10,} records/cluster  {label:{width}s} {elapsed:7.2f}s  {rate:>10,.0f} records/s"
                f"  CPU {cpu / total * 1e9:5.0f} ns/record  peak {peak / 1e6:6.0f} MB"
            )
    lo, hi = results[small], results[large]
    extra = 2 * (large - small)
    margin = {
        name: extra / (hi[name][0] - lo[name][0]) if hi[name][0] > lo[name][0] else float("inf")
        for name in labels
    }
    print(f"marginal rates between {small:,} and {large:,} records per cluster:")
    for name, label in labels.items():
        cpu = (hi[name][2] - lo[name][2]) / extra * 1e9
        print(f"  {label:{width}s} {margin[name]:>10,.0f} records/s  CPU {cpu:5.0f} ns/record")
    return margin


def size_arguments(description: str, records: int, large: int) -> argparse.Namespace:
    """--records, --large (for the marginal rates; must exceed --records) and --rounds."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument(
        "--records", type=int, default=records, help=f"records per cluster (default {records:,})"
    )
    parser.add_argument(
        "--large",
        type=int,
        default=large,
        help=f"records per cluster of the second size, for the marginal rates (default {large:,})",
    )
    parser.add_argument("--rounds", type=int, default=2, help="timed rounds per side; the best is reported")
    args = parser.parse_args()
    if args.large <= args.records:
        parser.error("--large must exceed --records")
    return args


def print_results(
    name: str, margin: dict[str, float], results: dict[int, dict[str, Measured]], records: int
) -> None:
    """RESULT <name>-marginal (ours "scan" against "kcat" at the margin) and RESULT <name>
    (both at ``records`` per cluster), records per second over both clusters."""
    print(
        f"RESULT {name}-marginal ours={margin['scan']:.0f} baseline={margin['kcat']:.0f} "
        f"ratio={margin['scan'] / margin['kcat']:.2f}"
    )
    ours, base = results[records]["scan"][0], results[records]["kcat"][0]
    total = 2 * records
    print(f"RESULT {name} ours={total / ours:.0f} baseline={total / base:.0f} ratio={base / ours:.2f}")
