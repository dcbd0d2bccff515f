"""Plot Twist (Chart101) tasks for lmms-eval (Razeghi et al. 2024)."""
