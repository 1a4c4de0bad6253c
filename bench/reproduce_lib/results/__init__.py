"""Write docs/RESULTS.md from the files the laya-inspect CLI wrote (never from typed-in numbers).

Sources per experiment: ``train``'s ``<ckpt>.metrics.json`` (joint protocol), ``fit-head``'s
``summary.json``/``runs.json``/``profiles/profiles.json`` (frozen protocol), ``compare``'s
``summary.json`` (faithfulness, Deletion@1), the bench helpers' notes (data, model, exported heads)
and the step records (commands, wall times). The paper's numbers come from paper.py.

Modules: ``load`` (reading run files, the machine), ``tables`` (formatting and tables),
``sections`` (one section per experiment), ``discussion`` (the generated prose), ``write`` (the page).
"""

from .load import machine_info
from .write import write_report

__all__ = ["machine_info", "write_report"]
