"""Judging claims: declared comparisons and their verdicts, and the claims model."""
