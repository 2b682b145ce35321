"""kafka-mirror-audit: reconciliation auditor for Kafka cross-cluster mirroring."""

from __future__ import annotations

__version__ = "0.1.0"
