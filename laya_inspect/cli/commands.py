"""Imports every command module so each registers itself on `app`."""
from . import compare_cmd, extract_cmd  # noqa: F401
