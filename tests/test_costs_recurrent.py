"""The model's count of backbone compute for a recurrent backbone (docs/METHOD.md, "Backbone compute")."""

from pathlib import Path

import pytest
import torch
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

from laya_inspect.beyond.costs import costs_from_model
from laya_inspect.cache.extract import ExtractConfig, extract_features
from laya_inspect.cache.store import FeatureStore
from laya_inspect.data import WordVocab
from laya_inspect.models import build_zoo, save_zoo_checkpoint
from laya_inspect.models.work import missed_flops


def _bilstm_cache(tmp_path: Path, max_len: int) -> tuple[nn.Module, Path]:
    """A zoo BiLSTM reading ``max_len`` tokens a text, and the cache extract writes of its LSTMs on 16 texts."""
    texts = [f"{w} film was {v}" for w, v in zip("the a this that".split() * 4, "great awful fine dull".split() * 4)]
    (tmp_path / "t.csv").write_text("text,label\n" + "".join(f"{t},{i % 2}\n" for i, t in enumerate(texts)))
    vocab = WordVocab.fit(texts, 20)
    model = build_zoo("bilstm", vocab_size=50, max_len=max_len)
    save_zoo_checkpoint(tmp_path / "b.pt", model, {"vocab": list(vocab.words)})
    out = tmp_path / "f.h5"
    config = ExtractConfig(
        model="zoo:bilstm", weights=str(tmp_path / "b.pt"), data=f"csv:{tmp_path / 't.csv'}", out=str(out), device="cpu"
    )
    extract_features(config)
    return model, out


def test_the_model_count_holds_each_lstm_s_weights_at_each_step(tmp_path: Path) -> None:
    """QA: torch's FlopCounterMode sees none of an LSTM's matmuls, so the zoo BiLSTM (two bidirectional
    LSTMs of 98,304 weight-matrix entries each, run over 8 steps) counted 512 FLOPs, its head's alone, and
    keeping lstm1 read as saving nothing. Each LSTM now counts 2 × its weights × its steps."""
    model, out = _bilstm_cache(tmp_path, 8)
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


def test_the_zoo_bilstm_is_counted_at_the_length_its_texts_were_cached_at(tmp_path: Path) -> None:
    """A zoo BiLSTM reading 20 tokens a text was counted on its own example of 16: each LSTM's work read
    4/5 of what it is. Counted by hand: 2 FLOPs per weight-matrix entry at each of the 20 steps, both
    LSTMs, and the head's 2 × 128 × 2 once."""
    _, out = _bilstm_cache(tmp_path, 20)
    lstm = 4 * 64 * (128 + 64) * 2  # 4 gates × hidden × (input + hidden) × 2 directions, each LSTM
    with FeatureStore(out) as store:
        assert store.attrs["transforms"]["kind"] == "token_ids" and store.attrs["layer_shapes"][0] == [20, 128]
        costs = costs_from_model(store)
    assert costs.flops_total == 2 * 20 * 2 * lstm + 2 * 128 * 2
    assert list(costs.flops_after) == [2 * 20 * lstm + 2 * 128 * 2, 2 * 128 * 2]
    assert costs.how.endswith("(zoo:bilstm, one text of 20 tokens, as layer_shapes records)")


def _packed() -> nn.utils.rnn.PackedSequence:
    return nn.utils.rnn.pack_padded_sequence(torch.rand(7, 3, 6), [7, 4, 2])


@pytest.mark.parametrize(
    ("module", "given", "steps"),
    [
        (lambda: nn.LSTM(6, 5, num_layers=2, bidirectional=True, batch_first=True), lambda: torch.rand(3, 7, 6), 21),
        (lambda: nn.GRU(6, 5, num_layers=2), lambda: torch.rand(7, 3, 6), 21),
        (lambda: nn.RNN(6, 5, batch_first=True), lambda: torch.rand(3, 7, 6), 21),
        (lambda: nn.LSTMCell(6, 5), lambda: torch.rand(3, 6), 3),
        (lambda: nn.LSTM(6, 5, proj_size=2), _packed, 7 + 4 + 2),  # packed: its real steps, not the padding
    ],
)
def test_a_recurrent_module_counts_its_weights_at_each_row_step_once(module, given, steps) -> None:
    """Whether torch's counter sees a recurrent module's matmuls depends on the module and its input (an
    unpacked LSTM's it does not): the count is 2 FLOPs per weight-matrix entry per row-step either way,
    never the counter's and the added ones both."""
    torch.manual_seed(0)
    m, x = module(), given()
    counter = FlopCounterMode(display=False)
    with missed_flops(m, counter.get_total_flops) as flops, counter, torch.no_grad():
        m(x)
    assert flops() == 2 * steps * sum(p.numel() for p in m.parameters() if p.ndim > 1)
    counted = flops()
    with torch.no_grad():
        m(x)  # the hooks are gone: a pass after the block adds nothing
    assert flops() == counted
