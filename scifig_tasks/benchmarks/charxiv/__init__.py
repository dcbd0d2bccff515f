"""CharXiv (Wang et al., NeurIPS 2024): descriptive and reasoning questions on arXiv charts, graded as the paper."""
