"""What deploy/ ships: the Kubernetes manifests render (kubectl kustomize) and validate
against Kubernetes' own schemas, their configuration loads, the pods are confined (a volume
readiness can mount beside a running nightly, no API token, a NetworkPolicy, the image by
digest), the container image's base and wheels are pinned (by digest, by hash), and the
Grafana dashboard and the alerting rules query only metrics a real run writes."""

from __future__ import annotations

import copy
import hashlib
import importlib.util
import json
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from audit import api
from audit.config_file import load_config
from tests.snapshots import faulty_pair

REPO = Path(__file__).resolve().parents[2]
DEPLOY = REPO / "deploy"
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
    assert kinds == [
        "ConfigMap",
        "CronJob",
        "CronJob",
        "Namespace",
        "NetworkPolicy",
        "PersistentVolumeClaim",
        "Secret",
        "ServiceAccount",
    ]
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


def _pods(docs: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Each CronJob's pod template (metadata and spec), by the CronJob's name."""
    jobs = [d for d in docs if d["kind"] == "CronJob"]
    return {d["metadata"]["name"]: d["spec"]["jobTemplate"]["spec"]["template"] for d in jobs}


def test_readiness_never_waits_for_the_volume_a_nightly_holds(rendered: list[dict[str, Any]]) -> None:
    """Both jobs mount the one output root (readiness's nightly_data gate reads the nightly's
    history there); ReadWriteOnce attached it to one node at a time, so a readiness pod
    scheduled on another node stayed Pending for as long as a nightly ran."""
    claim = _by_kind(rendered, "PersistentVolumeClaim", "mirror-audit-reports")
    assert claim["spec"]["accessModes"] == ["ReadWriteMany"]
    for name, pod in _pods(rendered).items():
        volumes = {v["name"]: v for v in pod["spec"]["volumes"]}
        assert volumes["reports"]["persistentVolumeClaim"]["claimName"] == claim["metadata"]["name"], name


def test_the_pods_chown_only_a_new_volume_and_carry_no_api_token(rendered: list[dict[str, Any]]) -> None:
    """fsGroup alone walks the whole history at every start (fsGroupChangePolicy Always);
    neither job calls the Kubernetes API, so no token is mounted, by the pod nor by its
    ServiceAccount (the pod's setting wins; the ServiceAccount's covers a pod made from it
    elsewhere, an Airflow task's)."""
    pods = _pods(rendered)
    assert sorted(pods) == ["mirror-audit-nightly", "mirror-audit-readiness"]
    for name, pod in pods.items():
        spec = pod["spec"]
        assert spec["securityContext"]["fsGroup"] == 10001, name
        assert spec["securityContext"]["fsGroupChangePolicy"] == "OnRootMismatch", name
        assert spec["automountServiceAccountToken"] is False, name
        account = _by_kind(rendered, "ServiceAccount", spec["serviceAccountName"])
        assert account["automountServiceAccountToken"] is False


def _ports(rules: list[dict[str, Any]], protocol: str) -> set[int]:
    return {p["port"] for r in rules for p in r["ports"] if p.get("protocol", "TCP") == protocol}


def test_a_network_policy_lets_nothing_in_and_only_dns_the_brokers_and_the_pushgateway_out(
    rendered: list[dict[str, Any]], tmp_path: Path
) -> None:
    policy = _by_kind(rendered, "NetworkPolicy", "mirror-audit")["spec"]
    selector = policy["podSelector"]["matchLabels"]
    assert selector  # never {}: the base may share a namespace with other workloads
    for name, pod in _pods(rendered).items():
        assert selector.items() <= pod["metadata"]["labels"].items(), name  # the policy confines both jobs
    assert sorted(policy["policyTypes"]) == ["Egress", "Ingress"]
    assert policy.get("ingress", []) == []  # Ingress confined and no rule: nothing may connect
    egress = policy["egress"]
    for rule in egress:
        # A rule without `to` reaches every address, one without `ports` every port.
        assert rule.get("to") and rule.get("ports"), rule
        for peer in rule["to"]:
            assert peer.get("ipBlock", {}).get("cidr") not in ("0.0.0.0/0", "::/0"), rule
    # What the configuration in the ConfigMap reaches is allowed, and nothing else.
    config = _by_kind(rendered, "ConfigMap", "mirror-audit-config")["data"]["audit.yaml"]
    (tmp_path / "audit.yaml").write_text(config)
    secret = _by_kind(rendered, "Secret", "mirror-audit-credentials")["stringData"]
    cfg = load_config(tmp_path / "audit.yaml", env=dict(secret))
    brokers = {
        int(server.rpartition(":")[2])
        for side in ("source", "destination")
        for server in cfg.cluster(side).bootstrap_servers.split(",")
    }
    assert cfg.output.pushgateway_url is not None
    pushgateway = int(cfg.output.pushgateway_url.rpartition(":")[2].split("/")[0])
    assert _ports(egress, "UDP") == {53}
    assert _ports(egress, "TCP") == {53, pushgateway, *brokers}


def test_the_pods_run_the_image_by_digest(rendered: list[dict[str, Any]]) -> None:
    """A tag can be moved by a later push; a digest names one image. The kustomization's
    digest is a placeholder a deployment replaces (docs/operations.md, "Running on Kubernetes")."""
    for name, pod in _pods(rendered).items():
        for container in pod["spec"]["containers"]:
            repository, at, digest = container["image"].partition("@")
            assert at and re.fullmatch(r"sha256:[0-9a-f]{64}", digest), (name, container["image"])
            assert ":" not in repository.rpartition("/")[2], container["image"]  # no tag beside it


def test_the_image_base_is_pinned_by_digest_and_the_wheels_installed_by_hash() -> None:
    """The Containerfile's default base is a digest, and `make image` keeps it unless told
    otherwise; pip installs the staged wheels only from the hashed requirements."""
    containerfile = (DEPLOY / "container" / "Containerfile").read_text()
    (base,) = re.findall(r"^ARG BASE=(\S+)$", containerfile, re.MULTILINE)
    assert re.fullmatch(r"docker\.io/library/debian@sha256:[0-9a-f]{64}", base), base
    (default,) = re.findall(r"^IMAGE_BASE \?=(.*)$", (REPO / "Makefile").read_text(), re.MULTILINE)
    assert default.strip() == ""  # unset: no --build-arg, the Containerfile's pinned BASE
    lines = containerfile.splitlines(True)
    instructions = "".join(line for line in lines if not line.lstrip().startswith("#"))
    (install,) = re.findall(r"bin/pip install ([^;]*);", instructions)
    assert "--require-hashes --requirement /tmp/wheels/requirements.txt" in install
    assert ".whl" not in install  # no wheel named beside the hashed list


def _context_module() -> Any:
    path = DEPLOY / "container" / "context.py"
    spec = importlib.util.spec_from_file_location("deploy_container_context", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _wheel(directory: Path, name: str, requires: str = "") -> Path:
    """A minimal pure-Python wheel ``name`` 1.0, requiring ``requires`` (a requirement) if given."""
    path = directory / f"{name}-1.0-py3-none-any.whl"
    info = f"{name}-1.0.dist-info"
    files = {
        f"{name}/__init__.py": "",
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n"
        + (f"Requires-Dist: {requires}\n" if requires else ""),
        f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    with zipfile.ZipFile(path, "w") as archive:
        for member, text in files.items():
            archive.writestr(member, text)
        archive.writestr(f"{info}/RECORD", "".join(f"{m},,\n" for m in files) + f"{info}/RECORD,,\n")
    return path


def test_the_staged_wheels_install_only_as_hashed(tmp_path: Path) -> None:
    """context.py's requirements.txt names each staged wheel by version and sha256; pip, as
    the Containerfile runs it, takes them, and refuses a wheel changed after staging or a
    dependency the file does not name."""
    context = _context_module()
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    top = _wheel(wheels, "probe_top", requires="probe-dep==1.0")
    dep = _wheel(wheels, "probe_dep")
    requirements = context.hashed_requirements(wheels)
    assert requirements.splitlines() == [
        f"probe-dep==1.0 --hash=sha256:{hashlib.sha256(dep.read_bytes()).hexdigest()}",
        f"probe-top==1.0 --hash=sha256:{hashlib.sha256(top.read_bytes()).hexdigest()}",
    ]

    def pip(text: str) -> subprocess.CompletedProcess[str]:
        (wheels / "requirements.txt").write_text(text)
        return subprocess.run(
            [
                *(sys.executable, "-m", "pip", "download", "--quiet", "--disable-pip-version-check"),
                *("--no-index", "--find-links", str(wheels), "--dest", str(tmp_path / "got")),
                *("--require-hashes", "--requirement", str(wheels / "requirements.txt")),
            ],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )

    took = pip(requirements)
    assert took.returncode == 0, took.stderr
    assert sorted(p.name for p in (tmp_path / "got").iterdir()) == sorted([top.name, dep.name])
    unlisted = pip(requirements.splitlines()[1] + "\n")  # probe-dep left out: its hash unknown
    assert unlisted.returncode != 0 and "probe-dep" in unlisted.stderr, unlisted.stderr
    shutil.rmtree(tmp_path / "got")
    with zipfile.ZipFile(dep, "a") as archive:
        archive.writestr("probe_dep/planted.py", "")  # changed after staging
    changed = pip(requirements)
    assert changed.returncode != 0 and "DO NOT MATCH THE HASHES" in changed.stderr, changed.stderr


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
    """A readiness check and an audit of the faulty pair (the in-process engine), and a
    readiness check in mode mm2: every metric the dashboard and the rules name is among
    theirs."""
    from tests.invariant_scenarios import SCENARIOS, write_scenario

    src, dst = faulty_pair(tmp_path / "snaps")
    mm2 = next(sc for sc in SCENARIOS if sc.name == "mm2")  # mode mm2 has figures of its own
    mm2_src, mm2_dst = write_scenario(tmp_path / "mm2", mm2.tables)
    written: set[str] = set()
    for result in (
        api.readiness(None, source=src, destination=dst, out=tmp_path / "ready"),
        api.audit(src, dst, None, out=tmp_path / "audit", engine="local"),
        api.readiness(mm2.cfg, source=mm2_src, destination=mm2_dst, out=tmp_path / "ready-mm2"),
    ):
        text = (result.run_dir / "metrics.prom").read_text()
        written |= {family.name for family in text_string_to_metric_families(text)}
    queried = _queried_metrics()
    assert len(queried["rules"]) >= 8 and len(queried["dashboard"]) >= 12
    for where, names in queried.items():
        assert names <= written, (where, sorted(names - written))
