"""Beyond the paper: three uses of LAYA's layer attention α, each measured against a baseline that
does not use α (definitions: docs/METHOD.md, "Beyond attribution: prune, early exit, diagnose").

* :func:`~.prune.prune_layers` — rank layers (α, ScalarMix, leave-one-layer-out, Block Influence,
  depth), refit or re-evaluate the head on the top-k of each ranking, accuracy against backbone compute.
* :func:`~.early_exit.simulate_early_exit` — per-input early exit from per-depth heads, confidence
  rules with and without α, against fixed depth.
* :func:`~.diagnose.diagnose_heads` — misclassification detection from α against max softmax
  probability, and α's shift between two caches of the same layers.

Each writes a whole output folder (tables as JSON and CSV, PNG plots) and returns what it wrote.
"""
