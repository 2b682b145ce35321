"""Record-level range checksums of both clusters, read in Spark tasks, and the narrowing of
differing chunks to their first divergent record (CM-DATA-1)."""
