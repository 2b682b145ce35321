"""What deploy/ ships: the Kubernetes manifests render (kubectl kustomize) and validate
against Kubernetes' own schemas, their configuration loads, and the Grafana dashboard and
the alerting rules query only metrics a real run writes."""

from __future__ import annotations

import copy
import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from audit import api
from audit.config_file import load_config
from tests.snapshots import faulty_pair

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
KUBERNETES_VERSION = "1.32"


@pytest.fixture(scope="module")
def rendered() -> list[dict[str, Any]]:
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        pytest.skip("kubectl is not installed: deploy/kubernetes was not rendered (kubectl kustomize)")
    proc = subprocess.run(
        [kubectl, "kustomize", str(DEPLOY / "kubernetes")],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    return [d for d in yaml.safe_load_all(proc.stdout) if d]


def _by_kind(docs: list[dict[str, Any]], kind: str, name: str) -> dict[str, Any]:
    (doc,) = [d for d in docs if d["kind"] == kind and d["metadata"]["name"].startswith(name)]
    return doc


def test_the_manifests_render_and_validate_against_kubernetes_schemas(rendered: list[dict[str, Any]]) -> None:
    kinds = sorted(d["kind"] for d in rendered)
    assert kinds == ["ConfigMap", "CronJob", "CronJob", "Namespace", "PersistentVolumeClaim", "Secret"]
    for doc in rendered:
        kubernetes_validate.validate(doc, KUBERNETES_VERSION, strict=True)
    # The validator is strict: a misspelt field is refused (this test can fail).
    broken = copy.deepcopy(_by_kind(rendered, "CronJob", "mirror-audit-nightly"))
    broken["spec"]["concurencyPolicy"] = broken["spec"].pop("concurrencyPolicy")
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(broken, KUBERNETES_VERSION, strict=True)


def test_the_jobs_never_overlap_never_retry_a_verdict_and_run_as_non_root(
    rendered: list[dict[str, Any]],
) -> None:
    config = _by_kind(rendered, "ConfigMap", "mirror-audit-config")["metadata"]["name"]
    for name, command, suspended in (
        ("mirror-audit-nightly", "nightly", False),
        ("mirror-audit-readiness", "readiness", True),
    ):
        cron = _by_kind(rendered, "CronJob", name)["spec"]
        assert cron["concurrencyPolicy"] == "Forbid" and cron.get("suspend", False) is suspended
        assert cron["successfulJobsHistoryLimit"] >= 1 and cron["failedJobsHistoryLimit"] >= 1
        job = cron["jobTemplate"]["spec"]
        assert job["backoffLimit"] == 0  # exit 1 is a verdict: never retried
        pod = job["template"]["spec"]
        assert pod["securityContext"]["runAsNonRoot"] is True
        (container,) = pod["containers"]
        assert container["args"][0] == command
        assert container["envFrom"] == [{"secretRef": {"name": "mirror-audit-credentials"}}]
        volumes = {v["name"]: v for v in pod["volumes"]}
        assert volumes["config"]["configMap"]["name"] == config  # the generated name, hash included
        assert volumes["reports"]["persistentVolumeClaim"]["claimName"] == "mirror-audit-reports"
        mounts = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
        assert (
            mounts["config"] == "/etc/mirror-audit" and container["args"][2] == "/etc/mirror-audit/audit.yaml"
        )


def test_the_configuration_in_the_configmap_loads_with_the_secrets_env(
    rendered: list[dict[str, Any]], tmp_path: Path
) -> None:
    config = _by_kind(rendered, "ConfigMap", "mirror-audit-config")["data"]["audit.yaml"]
    secret = _by_kind(rendered, "Secret", "mirror-audit-credentials")["stringData"]
    (tmp_path / "audit.yaml").write_text(config)
    cfg = load_config(tmp_path / "audit.yaml", env=dict(secret))
    cron = _by_kind(rendered, "CronJob", "mirror-audit-nightly")["spec"]["jobTemplate"]["spec"]["template"][
        "spec"
    ]
    mounts = {m["name"]: m["mountPath"] for m in cron["containers"][0]["volumeMounts"]}
    assert str(cfg.output.root) == mounts["reports"]  # runs land on the volume


def _queried_metrics() -> dict[str, set[str]]:
    rules = yaml.safe_load((DEPLOY / "prometheus" / "mirror-audit-rules.yaml").read_text())
    assert (rules["apiVersion"], rules["kind"]) == ("monitoring.coreos.com/v1", "PrometheusRule")
    exprs = {"rules": [r["expr"] for g in rules["spec"]["groups"] for r in g["rules"]]}
    for group in rules["spec"]["groups"]:
        for rule in group["rules"]:
            assert (
                rule["alert"]
                and rule["labels"]["severity"] in ("critical", "warning")
                and rule["annotations"]
            )
    dashboard = json.loads((DEPLOY / "grafana" / "mirror-audit-dashboard.json").read_text())
    exprs["dashboard"] = [t["expr"] for p in dashboard["panels"] for t in p["targets"]]
    exprs["dashboard"] += [v["definition"] for v in dashboard["templating"]["list"] if "definition" in v]
    return {
        where: {m for e in found for m in re.findall(r"mirror_audit_[a-z_]+", e)}
        for where, found in exprs.items()
    }


def test_the_dashboard_and_the_rules_query_only_metrics_a_real_run_writes(tmp_path: Path) -> None:
    """A readiness check and an audit of the faulty pair (the in-process engine): every
    metric the dashboard and the rules name is among theirs."""
    src, dst = faulty_pair(tmp_path / "snaps")
    written: set[str] = set()
    for result in (
        api.readiness(None, source=src, destination=dst, out=tmp_path / "ready"),
        api.audit(src, dst, None, out=tmp_path / "audit", engine="local"),
    ):
        text = (result.run_dir / "metrics.prom").read_text()
        written |= {family.name for family in text_string_to_metric_families(text)}
    queried = _queried_metrics()
    assert len(queried["rules"]) >= 8 and len(queried["dashboard"]) >= 12
    for where, names in queried.items():
        assert names <= written, (where, sorted(names - written))
