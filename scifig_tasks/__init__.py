"""scifig: scientific-figure understanding benchmarks for lmms-eval and VLMEvalKit."""

__version__ = "0.1.0"
