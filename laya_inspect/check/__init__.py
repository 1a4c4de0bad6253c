"""Checks with a known answer (`laya-inspect check …`): `planted.py` runs the whole pipeline on a
backbone whose label lives in one layer; `config.py` holds its options, free of torch."""
