"""Performance benchmarks: scripts run by hand (``python -m tests.perf.bench_<name>``), not pytest tests.

They print figures and never assert on timings; see each module's docstring for what it measures.
"""
