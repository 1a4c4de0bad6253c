"""Imports every command module so each registers itself on `app`, in the order --help lists them."""

from . import demo  # noqa: F401,I001
from . import extract  # noqa: F401,I001
from . import fit  # noqa: F401,I001
from . import compare  # noqa: F401,I001
from . import explain  # noqa: F401,I001
from . import beyond  # noqa: F401,I001
from . import check  # noqa: F401,I001
