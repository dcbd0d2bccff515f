"""lmms-eval integration: task folders (one per benchmark), the ``scifig_chance`` model and task discovery."""
