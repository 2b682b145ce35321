"""Shared fixtures: one local Spark session and one real two-cluster Kafka sandbox per run.

Markers follow the folders (tests/unit, tests/spark, tests/integration), so ``-m unit``
(``make unit``, the fast tier) runs in a few minutes: the unit tests, every metadata
invariant on the in-process engine, and every data-level check on one Spark compare
(tests/spark/test_data_level_outcomes.py); ``make test`` runs everything.
"""

from __future__ import annotations

import os
import secrets
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

# Every summary.json the suite writes, in this process or in the CLI processes it starts
# (they inherit the environment), is held to the schema shipped in the package.
os.environ.setdefault("MIRROR_AUDIT_CHECK_SUMMARY", "1")

_FOLDER_MARKERS = {
    "unit": pytest.mark.unit,
    "spark": pytest.mark.spark,
    "integration": pytest.mark.integration,
    "packaging": pytest.mark.packaging,
}


# The session fixtures that start real services, and the modules whose tests use them.
# ``make test`` runs two pytest-xdist workers; every one of these modules runs in the same
# worker (``pytest_xdist_make_scheduler`` below), so the run starts each service once, while
# the other worker runs the rest, a module at a time (the demos and the other Kafka
# releases with sandboxes of their own, the wheel, the Spark and unit tests). The list is
# checked against what the tests use at collection: a module missing from it would start a
# second sandbox in the other worker.
_SHARED_SERVICES = ("sandbox", "standalone")
SHARED_SERVICE_MODULES = frozenset(
    {
        "tests/integration/test_audit_live.py",
        "tests/integration/test_credentials_live.py",
        "tests/integration/test_failover_live.py",
        "tests/integration/test_hostile_live.py",
        "tests/integration/test_mm2_records_live.py",
        "tests/integration/test_mm2_sandbox.py",
        "tests/integration/test_records_live.py",
        "tests/integration/test_sandbox.py",
        "tests/integration/test_scale_smoke.py",
        "tests/integration/test_share_groups_live.py",
        "tests/integration/test_segments_live.py",
        "tests/spark/test_standalone_cluster.py",
    }
)


def _module_of(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object:
    """Work units for the workers: the shared-service modules as one, the packaging modules
    as one, every other module as its own (its module-scoped fixtures then run once).
    pytest-xdist's ``loadgroup`` would do the first two, but its node-id rewriting has no
    effect under pytest 9.2."""
    from xdist.scheduler import LoadScopeScheduling

    class SharedServicesTogether(LoadScopeScheduling):  # type: ignore[misc]
        def _split_scope(self, nodeid: str) -> str:
            module = _module_of(nodeid)
            if module in SHARED_SERVICE_MODULES:
                return "shared-services"
            # Both build the project's wheel in the checkout (setuptools' build/ and
            # egg-info there): one after the other.
            return "packaging" if module.startswith("tests/packaging/") else module

    return SharedServicesTogether(config, log)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    using: set[str] = set()
    for item in items:
        folder = Path(str(item.fspath)).parent.name
        marker = _FOLDER_MARKERS.get(folder)
        if marker is not None:
            item.add_marker(marker)
        if folder == "spark" and _in_process_engine_only(item):
            # The invariant tests on DuckDB need no JVM: the fast tier (make unit) runs them,
            # so every metadata invariant is checked there.
            item.add_marker(pytest.mark.unit)
        if any(f in getattr(item, "fixturenames", ()) for f in _SHARED_SERVICES):
            using.add(_module_of(item.nodeid))
    unlisted = using - SHARED_SERVICE_MODULES
    if unlisted:
        raise pytest.UsageError(
            f"tests/conftest.py: add {sorted(unlisted)} to SHARED_SERVICE_MODULES (their tests use "
            f"{' or '.join(_SHARED_SERVICES)}; elsewhere they would start a second one in the other worker)"
        )


def _in_process_engine_only(item: pytest.Item) -> bool:
    """A test of tests/spark parametrized onto the in-process engine, not asking for Spark."""
    callspec = getattr(item, "callspec", None)
    if callspec is None or "spark" in getattr(item, "fixturenames", ()):
        return False
    return "local" in callspec.params.values()


def _sigterm_to_interrupt(signum: int, frame: object) -> None:
    # CI or a user stopping the run with SIGTERM: unwind like Ctrl-C so fixtures tear down.
    raise KeyboardInterrupt


signal.signal(signal.SIGTERM, _sigterm_to_interrupt)


@pytest.fixture(scope="session")
def spark() -> Iterator[object]:
    from audit.config import SparkConfig
    from audit.spark_session import build_spark

    session = build_spark(
        SparkConfig(
            master="local[2]",
            app_name="kafka-mirror-audit-tests",
            conf={"spark.sql.shuffle.partitions": "2", "spark.ui.enabled": "false"},
        )
    )
    yield session
    session.stop()


@pytest.fixture(scope="session")
def sasl_login() -> tuple[str, str]:
    """The SASL/PLAIN user and password the sandbox's brokers accept, a new password per run
    (so a test can look for it in whatever the auditor wrote)."""
    return "auditor", "pw-" + secrets.token_hex(12)


@pytest.fixture(scope="session")
def standalone(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    """A Spark standalone master and two workers on loopback (one core and 1 GiB each),
    started from pyspark's own spark-class, for the tests that submit jobs to a cluster."""
    from audit.sandbox import spark_cluster

    with spark_cluster.running(tmp_path_factory.mktemp("spark-cluster")) as cluster:
        yield cluster


@pytest.fixture(scope="session")
def sandbox(tmp_path_factory: pytest.TempPathFactory, sasl_login: tuple[str, str]) -> Iterator[object]:
    """Real source and destination clusters, two brokers each (so leadership can move), each
    broker also listening with SASL_SSL (a self-signed certificate: ``tls_ca``) for
    ``sasl_login``, ``stranger`` and ``describer`` (same password), under Kafka's authorizer: PLAINTEXT
    clients may do anything, a SASL user only what a test grants it."""
    from audit.sandbox.cluster import SandboxOptions, running

    workdir = Path(os.environ.get("MIRROR_AUDIT_TEST_SANDBOX_DIR") or tmp_path_factory.mktemp("sandbox"))
    user, password = sasl_login
    opts = SandboxOptions(
        workdir=workdir,
        brokers_per_cluster=2,
        heap_mb=512,
        sasl_users={user: password, "stranger": password, "describer": password},
        authorizer=True,
        tls=True,
    )
    with running(opts) as state:
        yield state
