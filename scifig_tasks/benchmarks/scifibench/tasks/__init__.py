"""SciFIBench tasks for lmms-eval (Roberts et al. 2024)."""
