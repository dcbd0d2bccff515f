"""MMSci tasks for lmms-eval (Li et al. 2025): figure/caption matching (three settings) and figure captioning."""
