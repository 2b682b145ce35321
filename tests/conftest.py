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
# Every Spark JVM the suite starts, here or in a CLI run, with the client compiler and the
# serial collector (tests/spark_conf/spark-defaults.conf says why).
os.environ.setdefault("SPARK_CONF_DIR", str(Path(__file__).parent / "spark_conf"))

_FOLDER_MARKERS = {
    "unit": pytest.mark.unit,
    "spark": pytest.mark.spark,
    "integration": pytest.mark.integration,
    "packaging": pytest.mark.packaging,
}


# The live sandbox (the session fixture ``sandbox``: two real clusters whose tests share them)
# and the modules whose tests use it, in two groups of about equal length (the junit times of
# ``make test``, build/junit.xml). ``make test`` runs two pytest-xdist workers; each takes one
# group as its first unit of work and starts its own sandbox for it, so a sandbox starts once
# per worker and the two groups run side by side; every other module is a unit of its own
# (``pytest_xdist_make_scheduler`` below). The Spark standalone cluster (``standalone``) is
# started once too: its modules are in one group. The lists are checked against what the
# tests use at collection: a module missing from them would start a sandbox in a worker for
# its tests alone.
LIVE_GROUPS: dict[str, frozenset[str]] = {
    "live-a": frozenset(
        {
            "tests/integration/test_audit_live.py",
            "tests/integration/test_credentials_live.py",
            "tests/integration/test_hostile_live.py",
            "tests/integration/test_sandbox.py",
            "tests/integration/test_scale_smoke.py",
            "tests/integration/test_share_groups_live.py",
        }
    ),
    "live-b": frozenset(
        {
            "tests/integration/test_failover_live.py",
            "tests/integration/test_mm2_records_live.py",
            "tests/integration/test_mm2_sandbox.py",
            "tests/integration/test_records_live.py",
            "tests/integration/test_segments_live.py",
            "tests/spark/test_standalone_cluster.py",
        }
    ),
}
STANDALONE_MODULES = frozenset(
    {
        "tests/integration/test_mm2_records_live.py",
        "tests/integration/test_records_live.py",
        "tests/integration/test_segments_live.py",
        "tests/spark/test_standalone_cluster.py",
    }
)
assert any(modules >= STANDALONE_MODULES for modules in LIVE_GROUPS.values()), "one worker starts it"
# Units of work that take longest, started first in this order (two at a time); the rest
# follow, those with more tests first (pytest-xdist's own order).
LONGEST_FIRST = (
    "live-a",
    "live-b",
    "tests/integration/test_demo.py",
    "packaging",
    "tests/integration/test_versions_live.py",
    "tests/integration/test_faults_live.py",
    "tests/spark/test_engine_parity.py",
)


def _module_of(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def _unit_of(module: str) -> str:
    for group, modules in LIVE_GROUPS.items():
        if module in modules:
            return group
    # Both build the project's wheel (one build, shared: tests/packaging/conftest.py).
    return "packaging" if module.startswith("tests/packaging/") else module


def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object:
    """Work units for the workers: each live group as one, the packaging modules as one,
    every other module as its own (its module-scoped fixtures then run once); the longest
    first (``LONGEST_FIRST``). pytest-xdist's ``loadgroup`` would do the grouping, but its
    node-id rewriting has no effect under pytest 9.2."""
    from xdist.scheduler import LoadScopeScheduling

    class LiveGroupsTogether(LoadScopeScheduling):  # type: ignore[misc]
        _ordered = False

        def _split_scope(self, nodeid: str) -> str:
            return _unit_of(_module_of(nodeid))

        def _assign_work_unit(self, node: object) -> None:
            if not self._ordered:  # the queue is complete when the first unit is handed out
                self._ordered = True
                rank = {unit: i for i, unit in enumerate(LONGEST_FIRST)}
                queued = sorted(self.workqueue.items(), key=lambda kv: rank.get(kv[0], len(rank)))
                self.workqueue.clear()
                self.workqueue.update(queued)
            super()._assign_work_unit(node)

    return LiveGroupsTogether(config, log)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    using_sandbox: set[str] = set()
    using_standalone: set[str] = set()
    for item in items:
        folder = Path(str(item.fspath)).parent.name
        marker = _FOLDER_MARKERS.get(folder)
        if marker is not None:
            item.add_marker(marker)
        if folder == "spark" and _in_process_engine_only(item):
            # The invariant tests on DuckDB need no JVM: the fast tier (make unit) runs them,
            # so every metadata invariant is checked there.
            item.add_marker(pytest.mark.unit)
        fixtures = getattr(item, "fixturenames", ())
        if "sandbox" in fixtures:
            using_sandbox.add(_module_of(item.nodeid))
        if "standalone" in fixtures:
            using_standalone.add(_module_of(item.nodeid))
    live = frozenset().union(*LIVE_GROUPS.values())
    if using_sandbox - live:
        raise pytest.UsageError(
            f"tests/conftest.py: add {sorted(using_sandbox - live)} to one of LIVE_GROUPS (their tests use "
            "the live sandbox; elsewhere a worker would start one for them alone)"
        )
    if using_standalone - STANDALONE_MODULES:
        raise pytest.UsageError(
            f"tests/conftest.py: {sorted(using_standalone - STANDALONE_MODULES)} use the Spark standalone "
            "cluster: add them to STANDALONE_MODULES, in the live group of the others (one worker starts it)"
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
            conf={
                "spark.sql.shuffle.partitions": "2",
                "spark.ui.enabled": "false",
                # This JVM serves a worker's whole run: the server compiler repays its
                # warm-up here, unlike in a CLI run's JVM (tests/spark_conf).
                "spark.driver.extraJavaOptions": "-XX:+UseG1GC",
                # Spark is the subject of the tests on this session: it generates code,
                # as in production (the CLI runs' JVMs interpret: tests/spark_conf).
                "spark.sql.codegen.wholeStage": "true",
                "spark.sql.codegen.factoryMode": "FALLBACK",
            },
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

    explicit = os.environ.get("MIRROR_AUDIT_TEST_SANDBOX_DIR")
    # One sandbox per xdist worker ("gw0", "gw1"; "master" without xdist).
    worker = os.environ.get("PYTEST_XDIST_WORKER", "master")
    workdir = Path(explicit) / worker if explicit else tmp_path_factory.mktemp("sandbox")
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
