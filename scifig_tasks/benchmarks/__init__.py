"""The built-in benchmarks, one package each, shaped like an outside benchmark plugin (docs/adding-a-benchmark.md):
description, source, rules, lmms-eval task folder, VLMEvalKit part, report section and README. They register through
the ``scifig.benchmarks`` entry points like any plugin; nothing outside a benchmark's package imports it by name."""
