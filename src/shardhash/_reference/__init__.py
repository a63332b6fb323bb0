"""Test-only pure-Python oracles."""
