"""Example mechanisms and audit targets (correct ones and deliberately broken ones)."""
