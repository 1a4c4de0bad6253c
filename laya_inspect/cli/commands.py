"""Imports every command module so each registers itself on `app`."""
from . import extract_cmd  # noqa: F401
