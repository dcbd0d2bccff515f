"""MMSci curation (Li et al. 2025, section 3): the benchmark's local layout (``SCIFIG_MMSCI_DATA``) from article
records, or from the public copies, one module per step.
Manual: curation/mmsci/README.md, "How the build is organised"; overview in docs/curation.md, "MMSci benchmark".
"""
