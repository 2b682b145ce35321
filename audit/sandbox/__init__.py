"""A local two-cluster Apache Kafka sandbox (KRaft, loopback) for the demo and the tests.

The jars come from Maven Central; the processes are real brokers started and stopped by
pid. Nothing here is used against an audited cluster.
"""
