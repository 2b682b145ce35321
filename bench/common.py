"""What every benchmark needs beside its own measurement."""

from __future__ import annotations

import signal


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def stop_on_sigterm() -> None:
    """SIGTERM unwinds like Ctrl-C, so the sandbox's brokers are stopped on the way out."""
    signal.signal(signal.SIGTERM, _interrupt)
