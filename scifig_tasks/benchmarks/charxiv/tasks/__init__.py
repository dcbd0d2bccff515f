"""CharXiv tasks for lmms-eval (Wang et al. 2024): the validation set's descriptive and reasoning questions."""
