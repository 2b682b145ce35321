"""Thin adapter over Great Expectations 1.x: the suites operators read and edit in, Data
Docs out.

The suites in ``expectations/`` define every check; ``audit.validate.evaluate`` evaluates
them (once, compiled to SQL, by the engine holding the tables), and this module writes
those counts as GX's validation results (``GxRunner.record``) and builds Data Docs into
the run directory from them, in one ephemeral context. GX evaluates a suite itself only
where one of its expectations has no SQL form (``GxRunner.run``: an operator's own type),
and in tests/unit/test_one_evaluation.py, as the oracle of the compiled evaluation.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from audit.errors import ConfigError

if TYPE_CHECKING:
    from audit.compare.engines import Tables
from audit.validate.evaluate import NULL_CHECKS, judged_columns
from audit.validate.expectation_sql import unchecked_rows_sql, unexpected_rows_sql
from audit.validate.results import MAX_EXAMPLES, CheckOutcome
from audit.validate.suites import SuiteFile

log = logging.getLogger(__name__)

DOCS_SITE = "run_docs"


class GxRunner:
    """One ephemeral GX context per run, Data Docs written under ``docs_dir``; ``tables``
    (the engine holding the comparison frames) gives GX the datasource that reads them."""

    def __init__(self, docs_dir: Path, tables: Tables | None) -> None:
        gx = self.import_gx()
        from great_expectations.data_context.types.base import ProgressBarsConfig

        self._gx = gx
        self.docs_dir = docs_dir
        self.ctx = gx.get_context(mode="ephemeral")
        self.ctx.variables.progress_bars = ProgressBarsConfig(globally=False)
        for site in list(self.ctx.get_site_names()):
            self.ctx.delete_data_docs_site(site)
        self.ctx.add_data_docs_site(
            site_name=DOCS_SITE,
            site_config={
                "class_name": "SiteBuilder",
                "show_how_to_buttons": False,
                "store_backend": {
                    "class_name": "TupleFilesystemStoreBackend",
                    # GX refuses a relative base directory without a root directory.
                    "base_directory": str(docs_dir.absolute()),
                },
                "site_index_builder": {"class_name": "DefaultSiteIndexBuilder"},
            },
        )
        self._tables = tables
        self._source: Any = None  # GX's datasource, made for the first suite GX evaluates
        self._run_id: Any = None

    @staticmethod
    def import_gx() -> Any:
        """Great Expectations, imported (about 2.5 s the first time), its analytics off and
        its logging quiet."""
        os.environ.setdefault("GX_ANALYTICS_ENABLED", "false")
        import great_expectations as gx

        logging.getLogger("great_expectations").setLevel(logging.ERROR)
        return gx

    def run(
        self, suite_file: SuiteFile, df: Any, index_columns: list[str], parameters: dict[str, Any]
    ) -> list[CheckOutcome]:
        """GX's own evaluation of a suite (one with an expectation of no SQL form)."""
        gx = self._gx
        suite = self._suite(suite_file)
        assert self._tables is not None, "GX evaluates a suite only beside the tables"
        if self._source is None:
            self._source = self._tables.validation_source(self.ctx.data_sources, "comparison")
        batch_def = self._source.add_dataframe_asset(
            name=suite_file.name
        ).add_batch_definition_whole_dataframe(f"{suite_file.name}_whole")
        vd = self.ctx.validation_definitions.add(
            gx.ValidationDefinition(name=f"{suite_file.name}_validation", data=batch_def, suite=suite)
        )
        checkpoint = self.ctx.checkpoints.add(
            gx.Checkpoint(
                name=f"{suite_file.name}_checkpoint",
                validation_definitions=[vd],
                actions=[],  # Data Docs are built once, in finish()
                result_format=_result_format(suite_file, index_columns, parameters),
            )
        )
        result = checkpoint.run(batch_parameters={"dataframe": df}, expectation_parameters=parameters)
        (suite_result,) = result.run_results.values()
        return [self._outcome(suite_file, r, parameters) for r in suite_result.results]

    def _suite(self, suite_file: SuiteFile) -> Any:
        """The suite file as GX's suite, added to the context: what GX refuses in it (a
        misspelled argument, an unknown type) is the suite's error, named."""
        try:
            suite = self._gx.ExpectationSuite(**suite_file.raw)
        except Exception as exc:  # pydantic errors for misspelled kwargs, GX errors for bad types
            raise ConfigError(
                f"expectation suite {suite_file.path} is invalid: {str(exc).splitlines()[0]}"
            ) from exc
        if len(suite.expectations) != len(suite_file.raw.get("expectations", [])):
            raise ConfigError(
                f"expectation suite {suite_file.path}: "
                f"{len(suite_file.raw['expectations']) - len(suite.expectations)} "
                "expectation(s) have an unknown type"
            )
        return self.ctx.suites.add(suite)

    def record(self, suite_file: SuiteFile, outcomes: list[CheckOutcome]) -> None:
        """A suite evaluated by ``audit.validate.evaluate`` into GX's validation results,
        as GX would have written them, for Data Docs: the counts, and the examples' judged
        values as GX's sampled unexpected values."""
        import datetime

        from great_expectations.core import ExpectationSuiteValidationResult, ExpectationValidationResult
        from great_expectations.core.run_identifier import RunIdentifier
        from great_expectations.data_context.types.resource_identifiers import (
            ExpectationSuiteIdentifier,
            ValidationResultIdentifier,
        )

        suite = self._suite(suite_file)
        if self._run_id is None:
            self._run_id = RunIdentifier(run_time=datetime.datetime.now(datetime.UTC))
        results = [
            ExpectationValidationResult(
                success=o.success,
                expectation_config=e.configuration,
                result=_gx_result(o),
            )
            for e, o in zip(suite.expectations, outcomes, strict=True)
        ]
        passed = sum(1 for o in outcomes if o.success)
        suite_id = ExpectationSuiteIdentifier(name=suite.name)
        self.ctx.validation_results_store.store_validation_results(
            suite_validation_result=ExpectationSuiteValidationResult(
                success=passed == len(outcomes),
                results=results,
                suite_name=suite.name,
                statistics={
                    "evaluated_expectations": len(outcomes),
                    "successful_expectations": passed,
                    "unsuccessful_expectations": len(outcomes) - passed,
                    "success_percent": 100.0 * passed / len(outcomes) if outcomes else None,
                },
                meta={"run_id": self._run_id, "validation_time": self._run_id.run_time},
            ),
            suite_validation_result_identifier=ValidationResultIdentifier(
                batch_identifier=suite_file.table,
                expectation_suite_identifier=suite_id,
                run_id=self._run_id,
            ),
            expectation_suite_identifier=suite_id,
        )

    def finish(self) -> None:
        """Build the Data Docs site once for every suite run (not once per suite)."""
        self.ctx.build_data_docs(site_names=[DOCS_SITE])

    def write_docs(self, records: list[tuple[SuiteFile, list[CheckOutcome]]]) -> None:
        """The validation results of every compiled suite (``record``), then the site."""
        for suite, outcomes in records:
            self.record(suite, outcomes)
        self.finish()

    @staticmethod
    def _outcome(suite_file: SuiteFile, r: Any, parameters: dict[str, Any]) -> CheckOutcome:
        cfg = r.expectation_config
        meta = cfg.meta or {}
        res = r.result or {}
        errors = _exception_messages(r.exception_info)
        if errors:
            column = cfg.kwargs.get("column") or cfg.kwargs.get("column_A")
            raise ConfigError(
                f"expectation suite {suite_file.path}: {cfg.type} on {column!r} "
                f"could not run: {errors[0][:200]}"
            )
        element_count = int(res.get("element_count") or 0)
        missing = int(res.get("missing_count") or 0)
        return CheckOutcome(
            invariant=str(meta["invariant"]),
            severity=meta["severity"],
            description=str(cfg.description or cfg.type),
            success=bool(r.success),
            evaluated=element_count - missing,
            unexpected=int(res.get("unexpected_count") or 0),
            examples=tuple(plain(e) for e in (res.get("partial_unexpected_index_list") or [])[:MAX_EXAMPLES]),
            table=suite_file.table,
            unexpected_sql=unexpected_rows_sql(cfg.type, _raw_kwargs(cfg), parameters),
            columns=judged_columns(cfg.kwargs),
            # The null checks judge nulls: nothing of theirs is left unchecked.
            missing=0 if cfg.type in NULL_CHECKS else missing,
            unchecked_sql=unchecked_rows_sql(cfg.type, _raw_kwargs(cfg), parameters),
        )


def _gx_result(o: CheckOutcome) -> dict[str, Any]:
    """A compiled check's counts in GX's result format (what its Data Docs renderers read)."""
    element_count = o.evaluated + o.missing
    judged = max(o.evaluated, 1)
    shown = [
        [e.get(c) for c in o.columns] if len(o.columns) > 1 else e.get(o.columns[0]) if o.columns else None
        for e in o.examples
    ]
    return {
        "element_count": element_count,
        "missing_count": o.missing,
        "missing_percent": 100.0 * o.missing / element_count if element_count else None,
        "unexpected_count": o.unexpected,
        "unexpected_percent": 100.0 * o.unexpected / judged if o.evaluated else None,
        "unexpected_percent_nonmissing": 100.0 * o.unexpected / judged if o.evaluated else None,
        "partial_unexpected_list": shown,
    }


def _result_format(
    suite_file: SuiteFile, index_columns: list[str], parameters: dict[str, Any]
) -> dict[str, Any]:
    """GX counts; the example rows come from the engine (``audit.validate.run``) where every
    expectation of the suite has a SQL form. Asked for ``unexpected_index_column_names``,
    GX builds the index of every unexpected row, one cell at a time on pandas and collected
    to the driver on Spark: 84 s for 50,000 warning partitions, and unbounded memory for a
    table of batches. An operator's own expectation type keeps GX's lists."""
    expectations = suite_file.raw.get("expectations") or []
    if all(unexpected_rows_sql(e.get("type", ""), e.get("kwargs") or {}, parameters) for e in expectations):
        return {"result_format": "BASIC", "partial_unexpected_count": MAX_EXAMPLES}
    return {
        "result_format": "SUMMARY",
        "partial_unexpected_count": MAX_EXAMPLES,
        "unexpected_index_column_names": index_columns,
    }


def _raw_kwargs(cfg: Any) -> dict[str, Any]:
    """The expectation's arguments as the suite file wrote them (GX's row condition
    objects back to their JSON form)."""
    raw = cfg.to_json_dict() if hasattr(cfg, "to_json_dict") else {"kwargs": cfg.kwargs}
    return dict(raw.get("kwargs") or {})


def _exception_messages(info: Any) -> list[str]:
    info = info or {}
    entries = [info] if "raised_exception" in info else [v for v in info.values() if isinstance(v, dict)]
    return [str(e.get("exception_message") or "unknown error") for e in entries if e.get("raised_exception")]


def plain(value: Any) -> Any:
    """JSON-ready values; numpy scalars and pandas' NA (the pandas engine) become Python's."""
    if type(value).__name__ == "NAType":
        return None
    if type(value).__module__ == "numpy" and hasattr(value, "item"):
        value = value.item()
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    if isinstance(value, int | float | str | bool) or value is None:
        return value
    return str(value)
