"""Waiting for the Spark standalone master's workers (audit/sandbox/spark_cluster.py): a
status page that answers with an empty body while the master's web server starts (seen on a
busy machine: the suite's three standalone tests errored on it) is "not up yet", never the
cluster's failure; a master that never lists its workers is an error naming the logs."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from audit.errors import SandboxError
from audit.sandbox import spark_cluster
from audit.sandbox.spark_cluster import SparkCluster

pytestmark = pytest.mark.unit

ALIVE = json.dumps({"workers": [{"state": "ALIVE"}, {"state": "ALIVE"}]}).encode()


def _serving(bodies: list[bytes]) -> Iterator[str]:
    """A status page answering ``bodies`` in turn, the last one from then on."""
    answers = iter(bodies)
    last = [bodies[-1]]

    class Page(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = next(answers, last[0])
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Page)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def _cluster(ui_url: str) -> SparkCluster:
    return SparkCluster("spark://127.0.0.1:1", ui_url, (), "/work/spark-cluster")


def test_an_empty_answer_while_the_master_starts_is_waited_past() -> None:
    for url in _serving([b"", b"<html>starting</html>", ALIVE]):
        spark_cluster._wait_workers(_cluster(url), workers=2, timeout=30)


def test_a_master_that_never_lists_its_workers_is_an_error_naming_the_logs() -> None:
    for url in _serving([b""]):
        with pytest.raises(
            SandboxError, match=r"saw 0 of 2 workers within 2s; see the logs in /work/spark-cluster"
        ):
            spark_cluster._wait_workers(_cluster(url), workers=2, timeout=2)
