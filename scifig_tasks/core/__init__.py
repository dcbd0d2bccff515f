"""Framework-agnostic core: data sources and validation, prompts, answer extraction, metrics, the judge client."""
