"""Which segment files a scan reads: ``*.log`` files listed through Spark's Hadoop
filesystem on the driver, each placed in its partition by its directory's name, with what
is left out and why (replicas Kafka has set aside, KRaft's metadata log, second copies of a
partition, topics out of scope). Nothing is read here: a few JVM calls per file."""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from typing import Any

from audit.config import ScopeConfig
from audit.errors import InputError
from audit.redaction import redact_uri

log = logging.getLogger(__name__)

PARTITION_DIR = re.compile(r"^(?P<topic>.+)-(?P<partition>\d+)$")
# Kafka sets a replica's directory aside, segments and all, by renaming it to
# ``<topic>-<partition>.<id>-<state>`` (id: a UUID without dashes; the topic cut short where
# the name would pass 255 characters): ``-future`` while the replica is copied to another
# log dir of the same broker (its batches repeat the current replica's), ``-delete`` while
# it waits to be deleted, ``-stray`` when a KRaft broker holds a replica it is not assigned.
# None of them is the partition's current data, so none is read.
SET_ASIDE_DIR = re.compile(
    r"^(?P<topic>.+)-(?P<partition>\d+)\.(?P<id>[^.]+)-(?P<state>delete|future|stray)$"
)
SET_ASIDE_DETAIL = {
    "future": "a -future directory: Kafka's copy of the partition to another log dir of the broker, "
    "still in progress; its batches repeat the current replica's: not read",
    "delete": "a -delete directory: a replica Kafka has set aside for deletion (topic deleted, replica "
    "moved away or replaced): not the partition's current data, not read",
    "stray": "a -stray directory: a replica Kafka found on a broker it is not assigned to and set "
    "aside: not the partition's current data, not read",
}
# Tiered storage (KIP-405): Apache Kafka's LocalTieredStorage (the remote storage manager
# on a filesystem that Kafka's own tests and the sandbox use) keeps a partition's remote
# segments under ``<topic>-<partition>-<topic id>`` (the id: 22 base64url characters, which
# may hold '-', so the name is read from the right), each as ``<20-digit base offset>-<segment
# id>.log`` beside its indexes: the same bytes as the local segment it was copied from, so
# the same batch parser reads them. Other remote storage managers (the S3, GCS and Azure
# plugins of Aiven, Confluent's and the vendors' own) lay out, chunk, compress or encrypt
# their objects each their own way: their remote ranges are reported unread instead.
REMOTE_PARTITION_DIR = re.compile(r"^(?P<topic>.+)-(?P<partition>\d+)-(?P<topic_id>[A-Za-z0-9_-]{22})$")
REMOTE_SEGMENT = re.compile(r"^(?P<base>\d{20})-[A-Za-z0-9_-]{22}\.log$")
# KRaft's metadata log sits in a log dir like a partition (``__cluster_metadata-0``) but is
# no topic: no mirror copies it, and each cluster's differs, so it is never read.
METADATA_LOG_TOPIC = "__cluster_metadata"


@dataclass(frozen=True)
class SegmentFile:
    uri: str
    topic: str | None
    partition: int | None
    is_last_segment: bool


@dataclass(frozen=True)
class SetAside:
    """A replica directory Kafka has set aside (see ``SET_ASIDE_DIR``): reported, not read."""

    directory: str
    topic: str  # as the directory name spells it (Kafka may have cut a long one short)
    partition: int
    state: str  # future | delete | stray


@dataclass(frozen=True)
class Listing:
    """What a scan reads and what it leaves out, and why."""

    files: list[SegmentFile]
    duplicates: list[str]  # second copies of a partition
    set_aside: list[SetAside]


def place_segments(uris: list[str], scope: ScopeConfig | None = None) -> Listing:
    """Each listed ``*.log`` file placed in its partition, with whether it is the
    partition's newest segment.

    Topics out of ``scope`` (by default Kafka's internal ones, e.g. ``__consumer_offsets``)
    and KRaft's metadata log are not read. The same partition under two directories (two
    brokers' log dirs given at once) keeps the copy with the most segment files, so no batch
    is counted twice. Directories Kafka has set aside (``-future``, ``-delete``, ``-stray``)
    are not read either: a live broker's log dir holds them routinely, so they are listed
    apart, to be reported as information, not as segments that cannot be placed."""
    by_dir: dict[str, list[str]] = {}
    for uri in uris:
        by_dir.setdefault(uri.rsplit("/", 1)[0], []).append(uri)
    by_partition: dict[tuple[str, int], list[str]] = {}
    remote: dict[tuple[str, int], list[str]] = {}
    files: list[SegmentFile] = []
    set_aside: list[SetAside] = []
    for directory, members in sorted(by_dir.items()):
        # Remote segments' names tell them apart (a local segment's name is its offset alone),
        # so a topic id ending in "-<digits>" is never taken for a partition number.
        tiered = remote_partition_of(members[0])
        if tiered is not None and all(_remote_base(u) is not None for u in members):
            if scope is None or scope.topic_in_scope(tiered[0]):
                remote.setdefault(tiered, []).extend(members)
            continue
        topic, partition = partition_of(members[0])
        if topic is None or partition is None:
            aside = set_aside_of(members[0])
            if aside is None:
                files.extend(SegmentFile(u, None, None, False) for u in members)
            elif scope is None or scope.topic_in_scope(aside.topic):
                log.info("not read: %s, a replica directory Kafka set aside (-%s)", directory, aside.state)
                set_aside.append(aside)
            continue
        if topic == METADATA_LOG_TOPIC:
            log.info("not read: %s, KRaft's metadata log (no topic)", directory)
            continue
        if scope is not None and not scope.topic_in_scope(topic):
            continue
        by_partition.setdefault((topic, partition), []).append(directory)
    duplicates: list[str] = []
    for key in sorted(set(by_partition) | set(remote)):
        topic, partition = key
        dirs = by_partition.get(key, [])
        keep = max(dirs, key=lambda d: (len(by_dir[d]), d)) if dirs else None
        duplicates.extend(d for d in dirs if d != keep)
        local = sorted(by_dir[keep], key=lambda u: u.rsplit("/", 1)[-1]) if keep else []
        members = _below_local(remote.get(key, []), local) + local
        files.extend(SegmentFile(u, topic, partition, u == members[-1]) for u in members)
    return Listing(files, duplicates, set_aside)


def _below_local(remote: list[str], local: list[str]) -> list[str]:
    """A partition's remote segments that the local log no longer holds: those below its
    first local segment (a segment copied to the remote tier stays local until local
    retention deletes it, and both copies are the same bytes: each batch is read once).
    One file per base offset (a copy retried after a failure may leave two)."""
    first_local = _local_base(local[0]) if local else None
    by_base: dict[int, str] = {}
    for uri in sorted(remote, key=lambda u: u.rsplit("/", 1)[-1]):
        base = _remote_base(uri)
        if base is not None and (first_local is None or base < first_local):
            by_base[base] = uri
    return [by_base[b] for b in sorted(by_base)]


def _remote_base(uri: str) -> int | None:
    m = REMOTE_SEGMENT.match(uri.rsplit("/", 1)[-1])
    return int(m.group("base")) if m else None


def _local_base(uri: str) -> int | None:
    name = uri.rsplit("/", 1)[-1].removesuffix(".log")
    return int(name) if name.isdigit() else None


def remote_partition_of(uri: str) -> tuple[str, int] | None:
    """(topic, partition) of a segment in LocalTieredStorage's remote layout (see
    ``REMOTE_PARTITION_DIR``), None when its directory is not one."""
    m = REMOTE_PARTITION_DIR.match(_parent_name(uri))
    if not m or int(m.group("partition")) > 2**31 - 1:
        return None
    return m.group("topic"), int(m.group("partition"))


def list_segments(spark: Any, paths: list[str], scope: ScopeConfig | None = None) -> Listing:
    """``*.log`` files under ``paths`` (files, directories or globs, any Hadoop
    filesystem), placed by ``place_segments``. Only ``*.log`` files are listed, so a
    broker's other files (``meta.properties``, checkpoints, indexes) never reach the scan."""
    return place_segments(list_log_files(spark, paths), scope)


def list_log_files(spark: Any, paths: list[str]) -> list[str]:
    """Every ``*.log`` file under ``paths``, listed on the driver through the Hadoop
    FileSystem of Spark's session (so any filesystem Spark reads: local, HDFS, S3A...).

    Not Spark's file index (``binaryFile``): it drops every file and directory whose name
    starts with ``_`` or ``.`` as a hidden or metadata file, and a topic such as
    ``_schemas`` (Schema Registry) or ``_confluent-*`` would silently never be scanned. The
    listing is metadata-sized: a few JVM calls per segment file."""
    from py4j.protocol import Py4JJavaError

    jvm = spark.sparkContext._jvm
    conf = spark.sparkContext._jsc.hadoopConfiguration()
    found: dict[str, None] = {}  # ordered, each file once however the paths overlap
    for given in paths:
        try:
            path = jvm.org.apache.hadoop.fs.Path(given)
            fs = path.getFileSystem(conf)
            matches = fs.globStatus(path)
            if not matches:
                raise InputError(f"segment path does not exist: {redact_uri(given)}")
            for status in matches:
                files = fs.listFiles(status.getPath(), True)
                while files.hasNext():
                    uri = files.next().getPath().toString()
                    if uri.endswith(".log"):
                        found[
                            "file://" + uri[5:]
                            if uri.startswith("file:/") and not uri.startswith("file://")
                            else uri
                        ] = None
        except Py4JJavaError as exc:
            first = redact_uri(str(exc.java_exception).splitlines()[0])
            raise InputError(f"segment path {redact_uri(given)} cannot be listed: {first}") from None
    return list(found)


def _parent_name(uri: str) -> str:
    return uri.rstrip("/").rsplit("/", 2)[-2] if uri.count("/") >= 1 else ""


def partition_of(uri: str) -> tuple[str | None, int | None]:
    """(topic, partition) from the segment's directory name, (None, None) if it is not one."""
    m = PARTITION_DIR.match(_parent_name(uri))
    if not m or int(m.group("partition")) > 2**31 - 1:  # big-99999999999: no partition number
        return None, None
    return m.group("topic"), int(m.group("partition"))


def set_aside_of(uri: str) -> SetAside | None:
    """The set-aside replica directory (``-future``, ``-delete``, ``-stray``) holding the
    segment, or None when its directory is not one."""
    m = SET_ASIDE_DIR.match(_parent_name(uri))
    if not m:
        return None
    return SetAside(
        uri.rstrip("/").rsplit("/", 1)[0], m.group("topic"), int(m.group("partition")), m.group("state")
    )
