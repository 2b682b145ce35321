"""Validate: Great Expectations suites over the comparison tables, folded into invariant results."""
