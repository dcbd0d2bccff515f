"""Model and judge presets, installed as the ``scifig_model_configs`` package."""
