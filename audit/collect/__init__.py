"""The collect stage: what each cluster holds, written into its snapshot directory.

One package per kind of evidence: ``metadata`` (admin calls, every snapshot), ``batches``
(record batches from segment files or the wire) and ``records`` (record checksums).
"""
