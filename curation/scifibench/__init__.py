"""SciFIBench curation (Roberts et al. 2024, §3.3; the paper releases no code): SciFIBench-style multiple-choice sets
from any figure–caption corpus, one module per step of the paper.
Manual: curation/scifibench/README.md, "Steps (paper §3.3, in order) and defaults"; overview in docs/curation.md,
"SciFIBench curation".
"""
