"""The model's count of backbone compute for a recurrent backbone (docs/METHOD.md, "Backbone compute")."""

from pathlib import Path

import pytest

from laya_inspect.beyond.costs import costs_from_model
from laya_inspect.cache.extract import ExtractConfig, extract_features
from laya_inspect.cache.store import FeatureStore
from laya_inspect.data import WordVocab
from laya_inspect.models import build_zoo, save_zoo_checkpoint


def test_the_model_count_holds_each_lstm_s_weights_at_each_step(tmp_path: Path) -> None:
    """QA: torch's FlopCounterMode sees none of an LSTM's matmuls, so the zoo BiLSTM (two bidirectional
    LSTMs of 98,304 weight-matrix entries each, run over 8 steps) counted 512 FLOPs, its head's alone, and
    keeping lstm1 read as saving nothing. Each LSTM now counts 2 × its weights × its steps."""
    texts = [f"{w} film was {v}" for w, v in zip("the a this that".split() * 4, "great awful fine dull".split() * 4)]
    (tmp_path / "t.csv").write_text("text,label\n" + "".join(f"{t},{i % 2}\n" for i, t in enumerate(texts)))
    vocab = WordVocab.fit(texts, 20)
    model = build_zoo("bilstm", vocab_size=50, max_len=8)
    save_zoo_checkpoint(tmp_path / "b.pt", model, {"vocab": list(vocab.words)})
    out = tmp_path / "f.h5"
    extract_features(
        ExtractConfig(
            model="zoo:bilstm",
            weights=str(tmp_path / "b.pt"),
            data=f"csv:{tmp_path / 't.csv'}",
            out=str(out),
            device="cpu",
        )  # fmt: skip
    )
    per_lstm = {
        n: sum(p.numel() for k, p in getattr(model, n).named_parameters() if "weight" in k) for n in ("lstm1", "lstm2")
    }
    assert per_lstm == {"lstm1": 98304, "lstm2": 98304}
    head = 2 * 128 * 2
    with FeatureStore(out) as store:
        costs = costs_from_model(store)
    assert costs.flops_total == 2 * 8 * (per_lstm["lstm1"] + per_lstm["lstm2"]) + head
    assert list(costs.flops_after) == [2 * 8 * per_lstm["lstm2"] + head, head]
    assert costs.saved(0)[1] == pytest.approx(0.5, abs=1e-3)
