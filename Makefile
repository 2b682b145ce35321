# kafka-mirror-audit: the two commands a newcomer needs are `make demo` and `make test`.
# Both build the virtual environment from nothing (Python packages from PyPI, the Kafka
# jars from Maven Central on first use) and reuse it afterwards.

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
NATIVE_STAMP := $(VENV)/.native-installed
# rustup installs cargo here; a non-login shell (CI) may not have it on PATH.
export PATH := $(HOME)/.cargo/bin:$(PATH)
# The compiled reader's build (librdkafka from source: a minute and a half on two cores) is
# kept beside the Kafka jars, in the same cache ($MIRROR_AUDIT_CACHE, else
# $XDG_CACHE_HOME/kafka-mirror-audit, as audit/java_runtime.py's cache_root finds it; the
# package is not installed yet when this builds): a new clone on this machine relinks it.
# Cargo locks the directory while it builds and rebuilds what changed; an empty cache
# builds everything, as before.
export CARGO_TARGET_DIR ?= $(if $(MIRROR_AUDIT_CACHE),$(MIRROR_AUDIT_CACHE),$(or $(XDG_CACHE_HOME),$(HOME)/.cache)/kafka-mirror-audit)/native-target
PYTEST_ARGS ?=

.PHONY: help venv installed test unit lint typecheck browser malloc demo demo-healthy cluster-demo jars bench bench-cluster bench-segments bench-records bench-mm2-records bench-mm2-align bench-readers bench-scan-breakdown kcat system-packages bench-scale bench-validation fuzz image image-base container-tools clean

help:
	@echo "make demo   - run the audit demo on the local Kafka sandbox"
	@echo "make cluster-demo - the demo's nightly job by spark-submit on a local Spark standalone cluster"
	@echo "make test   - install everything and run the whole test suite (unit, spark, integration)"
	@echo "make image  - the container image (podman, else docker; docs/operations.md, \"Running in a container\")"
	@echo "make lint / make typecheck / make bench / make clean"

VENV_BASE := $(VENV)/.created

$(VENV_BASE):
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	touch $(VENV_BASE)

$(STAMP): $(VENV_BASE) pyproject.toml
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

# The compiled record reader (native/: Rust, librdkafka built from the rdkafka-sys crate's
# source, about a minute): optional for users (records.reader: auto falls back to
# confluent-kafka), built here so the tests compare both readers.
$(NATIVE_STAMP): $(VENV_BASE) native/Cargo.toml native/Cargo.lock native/pyproject.toml $(wildcard native/src/*.rs) native/mirror_audit_native.pyi
	@command -v cargo >/dev/null || { echo "cargo not found: install Rust (https://rustup.rs) to build native/"; exit 2; }
	$(BIN)/pip install --quiet ./native
	touch $(NATIVE_STAMP)

# The project's dependencies install while the compiled reader builds (two jobs: a clean
# clone's environment took 133 s instead of 181 with an empty cargo cache);
# they share nothing but the environment's pip, and the reader's wheel has no dependency.
venv:
	@$(MAKE) --no-print-directory -j2 installed

installed: $(STAMP) $(NATIVE_STAMP)
	@:

jars: $(STAMP)
	$(BIN)/python -c 'from audit.sandbox.jars import ensure_kafka_jars; print(ensure_kafka_jars())'

# How the recipes below run apt-get: as root, else through sudo; empty where neither works or
# there is no apt-get, and each recipe then says what to do instead.
APT_GET := $(shell command -v apt-get >/dev/null 2>&1 && \
  if [ "$$(id -u)" -eq 0 ]; then echo "env DEBIAN_FRONTEND=noninteractive apt-get"; \
  elif command -v sudo >/dev/null 2>&1; then echo "sudo env DEBIAN_FRONTEND=noninteractive apt-get"; fi)
NO_APT_GET := apt-get not usable here (none, or not root and no sudo)

# The report's browser test (tests/integration/test_report_browser.py) drives Debian's Chromium through
# Playwright, never Playwright's own browser download: installed here where it is missing (as root, or
# with sudo).
browser:
	@command -v chromium >/dev/null 2>&1 || { \
	  echo "chromium not found: installing Debian's chromium (apt-get) for the report's browser test"; \
	  [ -n "$(APT_GET)" ] || { echo "$(NO_APT_GET): install Chromium as 'chromium' on PATH"; exit 2; }; \
	  $(APT_GET) update && $(APT_GET) install -y --no-install-recommends chromium; }

# mimalloc for the Spark Python workers (spark.worker_malloc: auto preloads it where installed;
# audit.worker_malloc says why): installed here where missing, from Debian's package, so the
# tests and the record benchmarks run the workers as a production executor with it would.
malloc:
	@/sbin/ldconfig -p 2>/dev/null | grep -q 'libmimalloc\.so\.2 ' || { \
	  echo "libmimalloc.so.2 not found: installing Debian's libmimalloc2.0 (apt-get) for the Spark workers"; \
	  [ -n "$(APT_GET)" ] || { echo "$(NO_APT_GET): the workers keep the system allocator"; exit 0; }; \
	  $(APT_GET) install -y --no-install-recommends libmimalloc2.0 \
	  || { $(APT_GET) update && $(APT_GET) install -y --no-install-recommends libmimalloc2.0; } \
	  || echo "warning: libmimalloc2.0 did not install: the workers keep the system allocator (slower record scans)"; }

# Two pytest-xdist workers, each with a live sandbox of its own for half of the modules that
# use one, every other module a unit of its own, the longest first (tests/conftest.py's
# scheduler). The slowest 30 tests are printed at the end and every test's time is kept in
# build/junit.xml (docs/contributing.md, "Tiers").
#
# The system packages the suite uses (Chromium, mimalloc, podman/runc/mmdebstrap, kcat) are
# installed from Debian's packages with apt-get where missing, as root or through sudo:
# system-packages says which first. SYSTEM_PACKAGES=skip leaves the system alone (a test
# that needs a missing one then fails naming it).
SYSTEM_PACKAGES ?= install
SYSTEM_PACKAGE_STEPS := $(if $(filter skip,$(SYSTEM_PACKAGES)),,system-packages browser malloc container-tools kcat)
test: venv lint typecheck jars $(SYSTEM_PACKAGE_STEPS)
	$(BIN)/pytest -n 2 --junitxml=build/junit.xml $(PYTEST_ARGS)

system-packages:
	@missing=""; \
	command -v chromium >/dev/null 2>&1 || missing="$$missing chromium"; \
	/sbin/ldconfig -p 2>/dev/null | grep -q 'libmimalloc\.so\.2 ' || missing="$$missing libmimalloc2.0"; \
	for tool in podman runc mmdebstrap; do command -v $$tool >/dev/null 2>&1 || missing="$$missing $$tool"; done; \
	command -v kcat >/dev/null 2>&1 || command -v kafkacat >/dev/null 2>&1 || missing="$$missing kcat"; \
	if [ -n "$$missing" ]; then \
	  echo "make test installs these Debian packages with apt-get (as root, or through sudo):$$missing"; \
	  echo "  (SYSTEM_PACKAGES=skip leaves the system alone: the tests that need them then fail)"; \
	fi

unit: venv
	$(BIN)/pytest -m unit $(PYTEST_ARGS)

lint: venv
	$(BIN)/ruff check audit tests bench fuzz deploy
	cargo fmt --check --manifest-path native/Cargo.toml
	cargo clippy --quiet --release --manifest-path native/Cargo.toml -- -D warnings

typecheck: venv
	$(BIN)/mypy

# The faulty demo's verdict is FAIL (mirror-audit exits 1, as any FAIL); --expect-faults
# makes it exit 0 when the audit caught exactly the injected faults, so make reports an
# error only when the demo did not do what it is for.
demo: venv jars
	$(BIN)/mirror-audit demo --expect-faults

cluster-demo: venv jars
	$(BIN)/mirror-audit demo --spark-cluster --expect-faults

demo-healthy: venv jars
	$(BIN)/mirror-audit demo --healthy

bench: venv jars
	$(BIN)/python bench/readiness.py

bench-cluster: venv
	$(BIN)/python bench/cluster_shipping.py

bench-segments: venv jars
	$(BIN)/python bench/segments.py

bench-records: venv jars malloc kcat
	$(BIN)/python bench/records.py

bench-mm2-records: venv jars malloc kcat
	$(BIN)/python bench/mm2_records.py

bench-mm2-align: venv jars
	$(BIN)/python bench/mm2_align.py

bench-readers: venv jars malloc kcat
	$(BIN)/python bench/record_readers.py

# Where a 20 M record scan's CPU time goes (perf record over the whole machine): linux-perf
# installed here where missing, as kcat is for the benchmarks above.
bench-scan-breakdown: venv jars malloc
	@command -v perf >/dev/null || { \
	  echo "perf not found: installing Debian's linux-perf (apt-get) for the scan's breakdown"; \
	  [ -n "$(APT_GET)" ] || { echo "$(NO_APT_GET): install perf (linux-perf)"; exit 2; }; \
	  $(APT_GET) install -y --no-install-recommends linux-perf \
	  || { $(APT_GET) update && $(APT_GET) install -y --no-install-recommends linux-perf; }; }
	$(BIN)/python bench/scan_breakdown.py --symbols 5

# kcat, the record benchmarks' baseline and the mm2 record tests' independent count, installed
# here where missing, from Debian's package.
kcat:
	@command -v kcat >/dev/null || command -v kafkacat >/dev/null || { \
	  echo "kcat not found: installing Debian's kcat (apt-get) for the record benchmarks' baseline"; \
	  [ -n "$(APT_GET)" ] || { echo "$(NO_APT_GET): install kcat"; exit 2; }; \
	  $(APT_GET) install -y --no-install-recommends kcat \
	  || { $(APT_GET) update && $(APT_GET) install -y --no-install-recommends kcat; }; }

# 10,000 and 50,000 partitions per cluster: about 15 minutes on 2 cores (docs/benchmarks.md).
bench-scale: venv jars
	$(BIN)/python bench/scale.py

bench-validation: venv
	$(BIN)/python bench/validation.py

# The container image (deploy/container/Containerfile; docs/operations.md, "Running in a
# container"): the build context is staged in build/image (the wheels of this venv's exact versions, the compiled
# reader, the Kafka client's jars), then built by podman, else docker. IMAGE_BASE is any
# Debian bookworm image (unset: the Containerfile's BASE, Debian's pinned by digest);
# `make image-base` builds one from Debian's packages where no registry is reachable, and
# IMAGE_BASE=$(LOCAL_BASE) uses it. PROJECT_WHEEL=path carries a
# wheel of the project built before (the packaging tests' one build) instead of building one.
VERSION := $(shell sed -n 's/^version = "\(.*\)"/\1/p' pyproject.toml | head -1)
IMAGE ?= kafka-mirror-audit:$(VERSION)
IMAGE_BASE ?=
LOCAL_BASE := localhost/mirror-audit-base:bookworm
CONTAINER ?= $(shell command -v podman 2>/dev/null || command -v docker 2>/dev/null)
IMAGE_CONTEXT ?= build/image
image: venv jars
	@[ -n "$(CONTAINER)" ] || { echo "make image: neither podman nor docker found: install one (make container-tools installs podman)"; exit 2; }
	$(BIN)/python deploy/container/context.py $(IMAGE_CONTEXT) $(if $(PROJECT_WHEEL),--project-wheel $(PROJECT_WHEEL))
	$(CONTAINER) build $(if $(IMAGE_BASE),--build-arg BASE=$(IMAGE_BASE)) --tag $(IMAGE) --file $(IMAGE_CONTEXT)/Containerfile $(IMAGE_CONTEXT)

# A Debian bookworm base with Python 3.11 and Java 17, from Debian's packages (mmdebstrap),
# imported into podman as $(LOCAL_BASE); kept once built.
image-base: container-tools
	@podman image exists $(LOCAL_BASE) || { \
	  rm -f build/image-base.tar && mkdir -p build && \
	  mmdebstrap --quiet --variant=apt --include=python3,python3-venv,openjdk-17-jre-headless,passwd \
	    bookworm build/image-base.tar && \
	  podman import --quiet build/image-base.tar $(LOCAL_BASE) && rm -f build/image-base.tar; }

# podman, runc and mmdebstrap from Debian's packages where missing (the image test builds
# its base with them; deploy/container/containers.conf says why runc).
container-tools:
	@command -v podman >/dev/null && command -v runc >/dev/null && command -v mmdebstrap >/dev/null || { \
	  echo "podman, runc or mmdebstrap not found: installing Debian's (apt-get) for the container image test"; \
	  [ -n "$(APT_GET)" ] || { echo "$(NO_APT_GET): install podman, runc and mmdebstrap"; exit 2; }; \
	  $(APT_GET) install -y --no-install-recommends podman runc mmdebstrap uidmap \
	  || { $(APT_GET) update && $(APT_GET) install -y --no-install-recommends podman runc mmdebstrap uidmap; }; }

# Coverage-guided fuzzing of the batch parser (atheris; docs/reliability.md has the figures of
# the last long run). FUZZ_SECONDS bounds it; the corpus in fuzz/corpus grows as it finds inputs.
FUZZ_SECONDS ?= 1800
fuzz: $(STAMP)
	$(BIN)/pip install --quiet 'atheris>=2.3,<4'
	$(BIN)/python fuzz/batch_parser.py fuzz/corpus/batch_parser -max_total_time=$(FUZZ_SECONDS) \
	  -rss_limit_mb=2048 -artifact_prefix=fuzz/crashes- -print_final_stats=1

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache native/target
