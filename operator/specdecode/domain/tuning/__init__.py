"""Tuning: successive elimination of speculative configs over a concurrency ladder (pure)."""
