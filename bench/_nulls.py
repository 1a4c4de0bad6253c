"""The flags of the null simulations (bench/*_null*.py): --help prints the script's docstring and
exits instead of starting the simulation; an unknown flag is refused."""

from __future__ import annotations

import argparse


def flags(doc: str | None, **extra: str) -> argparse.Namespace:
    """--smoke, plus one store_true flag per ``extra`` (name → help), parsed from the command line."""
    p = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--smoke", action="store_true", help="a few runs: checks that it runs")
    for name, said in extra.items():
        p.add_argument(f"--{name.replace('_', '-')}", action="store_true", help=said.replace("%", "%%"))
    return p.parse_args()
