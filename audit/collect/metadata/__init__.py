"""Metadata of a cluster, read with admin calls: partitions, offsets, leader epochs,
groups and their committed offsets, open transactions, MirrorMaker 2's topics. A row per
partition or group partition: what every snapshot holds."""
