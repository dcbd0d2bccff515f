"""Dataset builders, one sub-package per benchmark, writing what scifig_tasks reads."""
