"""Stage the container image's build context (``make image``): the Containerfile, the
wheels and the Kafka client's jars, in one directory that ``podman build`` / ``docker
build`` reads.

Why a staged context rather than the checkout: the image must carry exactly what the test
suite ran. The wheels are built here, by this virtual environment's pip, for its Python,
with every dependency pinned to the version installed beside it (``pip freeze``), so the
image build needs no package index and cannot pick up a newer release than the one tested.
The compiled record reader needs Rust, which the image does not carry: it is built here
too (its Cargo target directory is reused, so this takes seconds after ``make venv``). The
Kafka client's jars come from the tool's jar cache, which Maven resolved from Maven
Central, as the sandbox's do. ``wheels/requirements.txt`` names every staged wheel by
version and sha256, and the Containerfile installs from it with ``--require-hashes``: the
image gets exactly the files staged here, a wheel swapped in the context afterwards (or one
more, that some dependency would pull in) stops the build.

Usage: ``python deploy/container/context.py build/image [--project-wheel WHEEL]``; with
``--project-wheel`` the image carries that wheel of the project (one already built, as the
packaging tests build one for both the wheel's test and the image's) instead of one built here.
"""

from __future__ import annotations

import argparse
import hashlib
import logging
import shutil
import subprocess
import sys
from pathlib import Path

from audit.collect.metadata.java_admin import classpath
from audit.sandbox.jars import ensure_kafka_jars

log = logging.getLogger("deploy.container")

REPO = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
# Debian bookworm's python3: the base's Python, which the wheels' binary parts are built for.
IMAGE_PYTHON = (3, 11)
OWN = ("kafka-mirror-audit", "mirror-audit-native")


class ContextError(Exception):
    """What stops the staging, said in one line."""


def pinned_requirements() -> str:
    """``pip freeze`` of this environment less the project's own packages: the versions
    the image's dependencies are held to."""
    frozen = subprocess.run(
        [sys.executable, "-m", "pip", "freeze", "--exclude-editable"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    keep = []
    for line in frozen.splitlines():
        name = line.split("==", 1)[0].split(" @ ", 1)[0].strip().lower().replace("_", "-")
        if line.strip() and not line.startswith("#") and name not in OWN:
            keep.append(line)
    return "\n".join(keep) + "\n"


def hashed_requirements(wheels: Path) -> str:
    """A requirements file pinning every wheel in ``wheels`` to its version and sha256 (what
    ``pip hash`` prints), for ``pip install --require-hashes``. The name and version are read
    from the file name (the wheel format's ``name-version(-build)?-python-abi-platform.whl``),
    which is what pip itself matches a pin against."""
    lines = []
    for wheel in sorted(wheels.glob("*.whl")):
        parts = wheel.name[: -len(".whl")].split("-")
        if len(parts) not in (5, 6):
            raise ContextError(f"{wheel.name}: not a wheel's name (name-version-python-abi-platform.whl)")
        digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
        lines.append(f"{parts[0].replace('_', '-')}=={parts[1]} --hash=sha256:{digest}")
    if not lines:
        raise ContextError(f"no wheels in {wheels}")
    return "\n".join(lines) + "\n"


def stage(out: Path, project_wheel: Path | None = None) -> None:
    out = out.resolve()
    if project_wheel is not None:
        project_wheel = project_wheel.resolve()
        if not project_wheel.is_file() or not project_wheel.name.startswith("kafka_mirror_audit-"):
            raise ContextError(f"--project-wheel {project_wheel}: not a kafka-mirror-audit wheel file")
    want = ".".join(map(str, IMAGE_PYTHON))
    if sys.version_info[:2] != IMAGE_PYTHON:
        raise ContextError(
            f"the image's Python is {want} (Debian bookworm) and this virtual environment's is "
            f"{sys.version_info[0]}.{sys.version_info[1]}: its wheels would not install there; make clean, "
            f"then make venv PYTHON=python{want}"
        )
    if out.exists():
        shutil.rmtree(out)
    wheels = out / "wheels"
    wheels.mkdir(parents=True)
    constraints = out / "constraints.txt"
    constraints.write_text(pinned_requirements())
    project = str(project_wheel) if project_wheel is not None else str(REPO)
    log.info(
        "building the wheels (the compiled reader, every dependency%s) into %s",
        "" if project_wheel is not None else ", the project",
        wheels,
    )
    built = subprocess.run(
        [
            *(sys.executable, "-m", "pip", "wheel", "--quiet", "--wheel-dir", str(wheels)),
            *("--constraint", str(constraints), project, str(REPO / "native")),
        ],
        cwd=out,
        capture_output=True,
        text=True,
        check=False,
    )
    if built.returncode != 0:
        said = (built.stderr or built.stdout).strip().splitlines()
        raise ContextError(f"pip wheel failed: {said[-1] if said else f'exit {built.returncode}'}")
    shutil.rmtree(REPO / "build" / "lib", ignore_errors=True)  # setuptools' scratch
    for name in ("kafka_mirror_audit-*.whl", "mirror_audit_native-*.whl"):
        if not list(wheels.glob(name)):
            raise ContextError(f"pip wheel made no {name}")
    (wheels / "requirements.txt").write_text(hashed_requirements(wheels))

    jars = classpath(str(ensure_kafka_jars()))
    if isinstance(jars, str):
        raise ContextError(jars)
    libs = out / "kafka-libs"
    libs.mkdir()
    for jar in jars:
        shutil.copy2(jar, libs)
    shutil.copy2(HERE / "Containerfile", out / "Containerfile")
    log.info("build context ready: %s (%d wheels, %d jars)", out, len(list(wheels.glob("*.whl"))), len(jars))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="the build context to write (replaced if present)")
    parser.add_argument(
        "--project-wheel", type=Path, help="the project's wheel to carry (default: built from the checkout)"
    )
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    try:
        stage(args.out, args.project_wheel)
    except ContextError as exc:
        log.error("make image: %s", exc)
        sys.exit(2)


if __name__ == "__main__":
    main()
