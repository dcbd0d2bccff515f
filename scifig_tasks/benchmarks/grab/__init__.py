"""GRAB's scoring rules, answer formats and multiple-choice ablation."""
