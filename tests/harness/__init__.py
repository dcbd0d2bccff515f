"""Test harness: local stand-ins for external services (OpenAI-compatible model and judge endpoints)."""
