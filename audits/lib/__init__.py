"""Reusable checks of the built-in audits."""
