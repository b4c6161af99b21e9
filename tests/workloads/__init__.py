"""Tests of the workloads package and ``collc workload``."""
