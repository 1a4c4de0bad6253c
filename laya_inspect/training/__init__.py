"""Training heads: `fit-head` (heads on a frozen cache, :mod:`.fit_head`) and `train` (a zoo backbone
end to end with its head, :mod:`.joint`), both through the one loop of :mod:`.loop`; what they write
(:mod:`.outputs`, :mod:`.profiles`, :mod:`.plots`) and the statistics over seeds (:mod:`.stats`)."""
