"""The GRAB generator: ``scifig curate grab`` / ``build_grab`` regenerate GRAB from the paper's facts (GRAB paper §3:
question format, categories, tasks, curation) and the published question set, in three stages: plan, render, write.
Manual: docs/curation.md, "GRAB generator" and "How the generator is organised".
"""
