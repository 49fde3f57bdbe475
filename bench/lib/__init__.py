"""Helpers shared by several benches (and by the tests that use the same fixtures)."""
