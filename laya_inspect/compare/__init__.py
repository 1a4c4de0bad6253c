"""Scoring layer attributions: every method of :mod:`.attribution` against what ablation shows —
the leave-one-layer-out and subset effects of :mod:`.lolo` (values from :mod:`.values`), with the
references of :mod:`.effects`, by the metrics of :mod:`.metrics` gathered in :mod:`.scores`;
:mod:`.run` drives a comparison (`compare_heads`, options in :mod:`.config`), :mod:`.outputs` and
:mod:`.plots` write it and :mod:`.records` checks a summary read back."""
