"""Benchmark scripts: each prints figures (throughput, latency percentiles, peak memory); none asserts."""
