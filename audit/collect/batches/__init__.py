"""Record batches and transaction markers, read from log segment files or over the Fetch
protocol in Spark tasks, header by header (CM-DATA-2, CM-TXN-2, CM-TXN-3, CM-EPOCH-4)."""
