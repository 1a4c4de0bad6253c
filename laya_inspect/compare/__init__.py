"""Scoring layer attributions: every method of :mod:`.attribution` against the leave-one-layer-out
effects of :mod:`.lolo`, by the metrics of :mod:`.metrics`; :mod:`.run` drives a comparison
(`compare_heads`), :mod:`.outputs` and :mod:`.plots` write it."""
