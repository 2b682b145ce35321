"""Coverage-guided fuzzing of the batch parser (atheris, libFuzzer's engine): ``make fuzz``.

Every input goes through both walkers (``audit.collect.batches.differential.check``): the
columnar fast path and the row walker must give the same rows and issues, and every byte
must be inside a batch, inside an entry an issue skipped, after an issue that stopped the
walk, or zero padding at the end. An exception other than the check's own is a crash too.
The corpus (fuzz/corpus/batch_parser) is kept in the repository: seeded from the crafted
cases of tests/unit/test_batch_columns.py, grown by each run.

    python fuzz/batch_parser.py fuzz/corpus/batch_parser -max_total_time=1800 -rss_limit_mb=2048
"""

from __future__ import annotations

import sys

import atheris

with atheris.instrument_imports(include=["audit.collect.batches"]):
    from audit.collect.batches.differential import check


def test_one_input(data: bytes) -> None:
    check(data, deep=bool(data[:1]) and data[0] & 1 == 1)


if __name__ == "__main__":
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()
