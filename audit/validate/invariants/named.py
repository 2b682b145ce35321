"""The invariants the code names itself, each checked against the catalogue at import (a
declaration renamed or removed in the suites fails the import, not a run): the faults the
demos promise to catch, the checks whose verdicts colour the report's charts, the one whose
findings a later stage describes. Any other invariant is reached through the catalogue,
never by its ID."""

from __future__ import annotations

from audit.validate.invariants import declared

CM_TOPIC_1 = declared("CM-TOPIC-1")
CM_OFFSET_1 = declared("CM-OFFSET-1")
CM_OFFSET_2 = declared("CM-OFFSET-2")
CM_LAG_1 = declared("CM-LAG-1")
CM_EPOCH_1 = declared("CM-EPOCH-1")
CM_EPOCH_2 = declared("CM-EPOCH-2")
CM_GROUP_1 = declared("CM-GROUP-1")
CM_GROUP_2 = declared("CM-GROUP-2")
CM_TXN_1 = declared("CM-TXN-1")
CM_DATA_1 = declared("CM-DATA-1")
CM_FAILOVER_2 = declared("CM-FAILOVER-2")
CM_FAILBACK_1 = declared("CM-FAILBACK-1")
CM_FAILBACK_3 = declared("CM-FAILBACK-3")
MM2_CKPT_2 = declared("MM2-CKPT-2")
MM2_READY_1 = declared("MM2-READY-1")
MM2_SKIP_1 = declared("MM2-SKIP-1")
MM2_DATA_1 = declared("MM2-DATA-1")
