"""Report: summary.json and a self-contained HTML page, both rendered from the same plain data."""
