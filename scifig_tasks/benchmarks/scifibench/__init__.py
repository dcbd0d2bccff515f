"""SciFIBench's published question text, prompts, scoring and alignment experiment."""
