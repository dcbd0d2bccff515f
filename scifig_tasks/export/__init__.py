"""Exports of the benchmarks for the frameworks' own repositories (scifig export-upstream)."""
