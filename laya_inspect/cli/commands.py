"""Imports every command module so each registers itself on `app`, in the order --help lists them."""
from . import demo_cmd  # noqa: F401,I001
from . import extract_cmd  # noqa: F401,I001
from . import fit_cmd  # noqa: F401,I001
from . import compare_cmd  # noqa: F401,I001
