"""Text through a Hugging Face encoder: features of a text do not depend on its batch's padding."""

from __future__ import annotations

import json
from pathlib import Path

import h5py
import numpy as np
import pytest
import torch
from helpers import tiny_bert

from laya_inspect.cache.extract import ExtractConfig, extract_features
from laya_inspect.cache.store import FeatureStore
from laya_inspect.errors import CacheError, InputError

VOCAB = [
    "[PAD]",
    "[UNK]",
    "[CLS]",
    "[SEP]",
    "[MASK]",
    "the",
    "a",
    "cat",
    "sat",
    "on",
    "mat",
    "good",
    "bad",
    "movie",
    "was",
    "very",
    "not",
]
TEXTS = [
    ("the cat sat on the mat", 0),
    ("good movie", 1),
    ("the movie was very very bad", 0),
    ("not bad", 1),
    ("a cat", 0),
    ("the movie was good", 1),
    ("bad", 0),
    ("very good movie", 1),
]


@pytest.fixture(scope="module")
def text_setup(tmp_path_factory):
    pytest.importorskip("transformers")
    d = tmp_path_factory.mktemp("bert")
    model, tokenizer = tiny_bert(d, VOCAB, layers=2, max_position_embeddings=64)
    rows = "".join(f'"{t}",{y},{"test" if i % 2 else "train"}\n' for i, (t, y) in enumerate(TEXTS))
    (d / "t.csv").write_text("text,label,split\n" + rows)
    return d, model, tokenizer


@pytest.mark.parametrize("pool", ["mean", "cls", "max", "last"])
def test_pooled_text_features_ignore_padding(text_setup, tmp_path, pool):
    d, model, tokenizer = text_setup
    out = tmp_path / "t.h5"
    extract_features(
        ExtractConfig(
            model=f"hf:{d / 'model'}",
            data=f"csv:{d / 't.csv'}",
            out=str(out),
            layers="-1",
            pool=pool,
            batch_size=4,
            device="cpu",
        )
    )
    with FeatureStore(out) as store:
        feats, index = store.layer("train", 0), store.index("train")
    for row, i in zip(feats, index):
        enc = tokenizer(TEXTS[i][0], return_tensors="pt")  # alone: no padding at all
        with torch.no_grad():
            h = model(**enc).last_hidden_state[0]  # (T, D)
        want = {"mean": h.mean(0), "cls": h[0], "max": h.amax(0), "last": h[-1]}[pool]
        np.testing.assert_allclose(row, want.numpy(), rtol=1e-4, atol=1e-5)


def test_auto_reads_the_embeddings_by_their_mean_as_their_token_0_is_the_same_for_every_text(text_setup, tmp_path):
    """BERT's hidden_states.0 at token 0 is [CLS]'s embedding alone: one row for every text (a
    cached all-MiniLM-L6-v2 layer 0 varied by 2e-6). auto keeps token 0 of the blocks and takes the
    embeddings' mean after [CLS]."""
    d, model, tokenizer = text_setup
    out = tmp_path / "t.h5"
    extract_features(ExtractConfig(model=f"hf:{d / 'model'}", data=f"csv:{d / 't.csv'}", out=str(out)))
    with FeatureStore(out) as store:
        assert store.attrs["layer_pooling"] == ["mean[1:]", "cls", "cls"]
        rows, index = store.layer("train", 0), store.index("train")
    for row, i in zip(rows, index):
        with torch.no_grad():
            h = model(**tokenizer(TEXTS[i][0], return_tensors="pt"), output_hidden_states=True).hidden_states
        np.testing.assert_allclose(row, h[0][0, 1:].mean(0).numpy(), rtol=1e-4, atol=1e-5)
    assert np.ptp(rows, axis=0).max() > 0.1


@pytest.mark.parametrize(
    ("modes", "want"),
    [
        ({"pooling_mode_mean_tokens": True, "pooling_mode_cls_token": False}, ["mean"] * 3),
        ({"pooling_mode_max_tokens": True}, ["max"] * 3),
        ({"pooling_mode_cls_token": True}, ["mean[1:]", "cls", "cls"]),
        ({"pooling_mode_cls_token": True, "pooling_mode_mean_tokens": True}, ["mean[1:]", "cls", "cls"]),
    ],
)
def test_auto_pools_a_sentence_transformers_folder_as_its_own_pooling_module_does(text_setup, tmp_path, modes, want):
    """all-MiniLM-L6-v2's sentence embedding is the mean of its tokens (1_Pooling/config.json), and
    its [CLS] is trained for nothing: auto took [CLS]. Several modes at once (a concatenation) keep
    the rule for its kind of model."""
    import json
    import shutil

    d, _, _ = text_setup
    folder = tmp_path / "st"
    shutil.copytree(d / "model", folder)
    (folder / "1_Pooling").mkdir()
    (folder / "1_Pooling" / "config.json").write_text(json.dumps({"word_embedding_dimension": 16, **modes}))
    (folder / "modules.json").write_text(
        json.dumps(
            [
                {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
                {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
            ]
        )
    )
    out = tmp_path / "t.h5"
    extract_features(ExtractConfig(model=f"hf:{folder}", data=f"csv:{d / 't.csv'}", out=str(out)))
    with FeatureStore(out) as store:
        assert store.attrs["layer_pooling"] == want


def test_a_swapped_tokenizer_is_another_cache(text_setup, tmp_path):
    """Tokenizer files swapped for others of the same class gave a cache with the same fingerprint
    (rows up to 0.85 apart): heads and resumes were checked only through the data's fingerprint,
    whose message blamed the data files."""
    import shutil

    d, _, _ = text_setup
    model = tmp_path / "model"
    shutil.copytree(d / "model", model)

    def cache(out: Path) -> Path:
        config = ExtractConfig(model=f"hf:{model}", data=f"csv:{d / 't.csv'}", out=str(out), device="cpu")
        extract_features(config)
        return out

    a = cache(tmp_path / "a.h5")
    saved = json.loads((model / "tokenizer.json").read_text())
    words = saved["model"]["vocab"]
    words["cat"], words["movie"] = words["movie"], words["cat"]  # the same class and path, other ids
    (model / "tokenizer.json").write_text(json.dumps(saved))
    b = cache(tmp_path / "b.h5")
    with FeatureStore(a) as first, FeatureStore(b) as second:
        was, now = first.attrs["transforms"], second.attrs["transforms"]
        assert was["sha256"] and now["sha256"] and was["sha256"] != now["sha256"]
        assert first.fingerprint != second.fingerprint
    partial = tmp_path / "a.h5.partial"
    shutil.move(a, partial)
    with h5py.File(partial, "a") as f:  # as a run killed half-way leaves it
        f.attrs["complete"] = False
        for split in f:
            f[split].attrs["n_written"] = int(f[split].attrs["n"]) // 2
            f[split].attrs["complete"] = False
    from laya_inspect.cache.partial import same_transforms  # a cache (or shard) written before the digest resumes

    assert same_transforms({"kind": "text"}, {"kind": "text", "sha256": "ab"}) and same_transforms("", None)
    assert not same_transforms({"kind": "text", "sha256": "ab"}, {"kind": "text", "sha256": "cd"})
    with pytest.raises(CacheError, match="another tokenizer .*the tokenizer files of the model changed"):
        cache(tmp_path / "a.h5")


def test_flatten_refused_for_text(text_setup, tmp_path):
    d, _, _ = text_setup
    with pytest.raises(InputError, match="flatten"):
        extract_features(
            ExtractConfig(
                model=f"hf:{d / 'model'}",
                data=f"csv:{d / 't.csv'}",
                out=str(tmp_path / "t.h5"),
                pool="flatten",
                device="cpu",
            )
        )


def test_texts_longer_than_the_models_max_length_are_a_warning(text_setup):
    """Texts beyond max_length tokens were cut with no word; the warning counts them per split."""
    from types import SimpleNamespace

    from laya_inspect.data import load_data

    d, _, tokenizer = text_setup
    spec = SimpleNamespace(kind="text", channels=None, size=None, mean=None, std=None, max_length=6)
    b = load_data(f"csv:{d / 't.csv'}", input_spec=spec, tokenizer=tokenizer)
    said = [w for w in b.warnings if "longer than" in w]
    # train: "the cat sat on the mat" and "the movie was very very bad" are 8 tokens with [CLS] and [SEP]
    assert said == [
        f"dataset 'csv:{d / 't.csv'}': 2 of 4 texts of split 'train' are longer than 6 tokens (the longest 8); "
        "the model reads only their first 6"
    ]
    roomy = SimpleNamespace(**{**vars(spec), "max_length": 8})
    assert not [
        w for w in load_data(f"csv:{d / 't.csv'}", input_spec=roomy, tokenizer=tokenizer).warnings if "longer" in w
    ]


# ----------------------------------------------------------------------------- decoders (GPT-2 and kin)
WORDS = [w for w in VOCAB if not w.startswith("[")]


def _word_tokenizer(transformers, **special):
    """A GPT-2-like tokenizer: words, an end-of-text token, no padding token, padding on the left."""
    from tokenizers import Tokenizer, models, pre_tokenizers

    vocab = {w: i for i, w in enumerate(["<|endoftext|>", *WORDS])}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<|endoftext|>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    return transformers.PreTrainedTokenizerFast(tokenizer_object=tok, padding_side="left", **special)


@pytest.fixture(scope="module")
def decoder_setup(tmp_path_factory, text_setup):
    transformers = pytest.importorskip("transformers")
    d = tmp_path_factory.mktemp("gpt")
    tokenizer = _word_tokenizer(transformers, eos_token="<|endoftext|>")

    def config(pad):
        return transformers.GPT2Config(
            vocab_size=len(WORDS) + 1, n_positions=32, n_embd=16, n_layer=2, n_head=2, num_labels=2, pad_token_id=pad
        )

    torch.manual_seed(0)
    clf = transformers.GPT2ForSequenceClassification
    # clf-pad: the config names a pad id (that of "on") the tokenizer does not know as padding
    for name, cls, pad in (("base", transformers.GPT2Model, None), ("clf", clf, None), ("clf-pad", clf, 5)):
        cls(config(pad)).eval().save_pretrained(d / name)
        tokenizer.save_pretrained(d / name)
    return d, text_setup[0] / "t.csv"


def _decoder_cache(decoder_setup, tmp_path, name="base", **kw):
    d, csv = decoder_setup
    out = tmp_path / f"{name}-{kw.get('pool', 'auto')}.h5"
    extract_features(
        ExtractConfig(model=f"hf:{d / name}", data=f"csv:{csv}", out=str(out), batch_size=4, device="cpu", **kw)
    )
    return FeatureStore(out)


def test_a_decoder_pads_on_the_right_and_auto_pools_the_mean_of_each_texts_tokens(decoder_setup, tmp_path):
    """GPT-2's tokenizer names no padding token (extract stopped with a traceback) and its token 0
    sees no later token: --pool auto takes the mean over each text's tokens, the same as the text alone."""
    transformers = pytest.importorskip("transformers")
    d, _ = decoder_setup
    model = transformers.GPT2Model.from_pretrained(str(d / "base")).eval()
    alone = transformers.AutoTokenizer.from_pretrained(str(d / "base"))
    with _decoder_cache(decoder_setup, tmp_path) as store:
        assert store.attrs["layer_pooling"] == ["mean"] * 3
        assert store.attrs["transforms"]["pad"] == (
            "padded with the eos token '<|endoftext|>' (the tokenizer names none); "
            "padded on the right (the tokenizer pads on the left)"
        )
        for k in range(3):
            for row, i in zip(store.layer("train", k), store.index("train")):
                with torch.no_grad():
                    h = model(**alone(TEXTS[i][0], return_tensors="pt"), output_hidden_states=True).hidden_states[k]
                np.testing.assert_allclose(row, h[0].mean(0).numpy(), rtol=1e-4, atol=1e-5)


def test_a_decoders_token_0_is_its_first_word_alone(decoder_setup, tmp_path):
    """Why auto does not take token 0 of a decoder: texts that start with the same word get the same
    row, whatever follows ("the cat sat on the mat", "the movie was very very bad")."""
    with _decoder_cache(decoder_setup, tmp_path, pool="cls") as store:
        rows = dict(zip(store.index("train").tolist(), store.layer("train", 2)))
    assert TEXTS[0][0].split()[0] == TEXTS[2][0].split()[0] == "the"
    np.testing.assert_allclose(rows[0], rows[2], atol=1e-6)
    assert not np.allclose(rows[0], rows[4], atol=1e-3)  # "a cat"


@pytest.mark.parametrize("name", ["clf", "clf-pad"])
def test_a_decoder_classifiers_logits_do_not_depend_on_the_batch(decoder_setup, tmp_path, name):
    """GPT2ForSequenceClassification reads the last token before the padding: without a pad_token_id
    it refuses batches of more than one text, and with one the tokenizer does not pad with it reads
    the padding of shorter texts."""
    transformers = pytest.importorskip("transformers")
    d, _ = decoder_setup
    model = transformers.GPT2ForSequenceClassification.from_pretrained(str(d / name)).eval()
    alone = transformers.AutoTokenizer.from_pretrained(str(d / name))
    with _decoder_cache(decoder_setup, tmp_path, name=name) as store:
        if name == "clf-pad":
            assert store.attrs["transforms"]["pad"].startswith("padded with the model's pad token 'on'")
        logits, index = store.logits("test"), store.index("test")
    for row, i in zip(logits, index):
        with torch.no_grad():
            want = model(**alone(TEXTS[i][0], return_tensors="pt")).logits[0]
        np.testing.assert_allclose(row, want.numpy(), rtol=1e-4, atol=1e-5)


def test_a_decoder_classifier_is_pooled_at_the_last_token_its_own_head_reads(decoder_setup, tmp_path):
    """The mean of a decoder classifier's tokens is not what it predicts from: its head reads the last
    token before the padding, the one position that has seen the whole text. Each block's row is the
    text alone's hidden state there, and the cached logits are the head applied to the last row."""
    transformers = pytest.importorskip("transformers")
    d, _ = decoder_setup
    model = transformers.GPT2ForSequenceClassification.from_pretrained(str(d / "clf")).eval()
    alone = transformers.AutoTokenizer.from_pretrained(str(d / "clf"))
    with _decoder_cache(decoder_setup, tmp_path, name="clf") as store:
        assert store.attrs["layer_pooling"] == ["mean", "last", "last"]
        rows = [store.layer("train", k) for k in range(3)]
        index, logits = store.index("train"), store.logits("train")
    for j, i in enumerate(index):
        with torch.no_grad():
            hidden = model(**alone(TEXTS[i][0], return_tensors="pt"), output_hidden_states=True).hidden_states
        np.testing.assert_allclose(rows[0][j], hidden[0][0].mean(0).numpy(), rtol=1e-4, atol=1e-5)
        for k in (1, 2):
            np.testing.assert_allclose(rows[k][j], hidden[k][0, -1].numpy(), rtol=1e-4, atol=1e-5)
        with torch.no_grad():
            head = model.score(torch.from_numpy(rows[2][j])).numpy()
        np.testing.assert_allclose(logits[j], head, rtol=1e-4, atol=1e-5)


def _tokenizer_with(transformers, specials, template, **names):
    """A word tokenizer whose vocabulary starts with ``specials`` and whose texts follow ``template``."""
    from tokenizers import Tokenizer, models, pre_tokenizers, processors

    vocab = {w: i for i, w in enumerate([*specials, *WORDS])}
    tok = Tokenizer(models.WordLevel(vocab, unk_token=specials[-1]))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    used = [(t, vocab[t]) for t in specials if t in template]
    tok.post_processor = processors.TemplateProcessing(single=template, special_tokens=used)
    return transformers.PreTrainedTokenizerFast(tokenizer_object=tok, **names)


def test_the_tokens_a_tokenizer_puts_in_front_are_counted_up_to_the_texts_first_word(tmp_path):
    """An unknown word reads as [UNK], a special token too: "[CLS] [UNK] [UNK] [SEP]" counted 2 in
    front, and auto left a text's first word out of its mean ("mean[2:]" on DistilBERT's embeddings)."""
    transformers = pytest.importorskip("transformers")
    from laya_inspect.models.hf import _leading_specials

    (tmp_path / "vocab.txt").write_text("\n".join(w for w in VOCAB if w != "a") + "\n")
    bert = transformers.BertTokenizerFast(vocab_file=str(tmp_path / "vocab.txt"))
    assert bert("a text")["input_ids"][:2] == [bert.cls_token_id, bert.unk_token_id]
    assert _leading_specials(bert) == 1
    assert _leading_specials(_word_tokenizer(transformers, eos_token="<|endoftext|>")) == 0
    llama = _tokenizer_with(transformers, ["<s>", "</s>"], "<s> $A", bos_token="<s>", eos_token="</s>")
    assert _leading_specials(llama) == 1


def _extract_saved(cls, config, tokenizer, tmp_path, csv):
    """Save a fresh ``cls(config)`` with ``tokenizer``, extract ``csv`` through it; (model, cache path)."""
    torch.manual_seed(0)
    cls(config).eval().save_pretrained(tmp_path / "model")
    tokenizer.save_pretrained(tmp_path / "model")
    out = tmp_path / "c.h5"
    extract_features(ExtractConfig(model=f"hf:{tmp_path / 'model'}", data=f"csv:{csv}", out=str(out)))
    return cls.from_pretrained(str(tmp_path / "model")).eval(), out


def test_a_decoders_start_token_is_left_out_of_the_mean(text_setup, tmp_path):
    """Llama's tokenizer puts <s> first, and a decoder's token 0 sees nothing after it: its hidden
    state is the same for every text, so in the mean it only adds a constant / length. auto takes
    the mean after it ("mean[1:]"), as each text alone gives it."""
    transformers = pytest.importorskip("transformers")
    tokenizer = _tokenizer_with(transformers, ["<s>", "</s>"], "<s> $A", bos_token="<s>", eos_token="</s>")
    config = transformers.LlamaConfig(
        vocab_size=len(WORDS) + 2, hidden_size=16, intermediate_size=32, num_hidden_layers=2, num_attention_heads=2
    )
    model, out = _extract_saved(transformers.LlamaModel, config, tokenizer, tmp_path, text_setup[0] / "t.csv")
    with FeatureStore(out) as store:
        assert store.attrs["layer_pooling"] == ["mean[1:]"] * 3
        starts = []
        for row, i in zip(store.layer("train", 2), store.index("train")):
            ids = tokenizer(TEXTS[i][0], return_tensors="pt")
            assert ids["input_ids"][0, 0] == 0
            with torch.no_grad():
                h = model(**ids, output_hidden_states=True).hidden_states[2][0]
            np.testing.assert_allclose(row, h[1:].mean(0).numpy(), rtol=1e-4, atol=1e-5)
            starts.append(h[0])
    torch.testing.assert_close(starts[0], starts[-1])  # <s> tells nothing about the text


def test_an_encoder_keeps_token_0_and_a_tokenizer_without_special_tokens_is_refused(text_setup, tmp_path):
    transformers = pytest.importorskip("transformers")
    from laya_inspect.models import load_model

    d, _, _ = text_setup
    assert load_model(f"hf:{d / 'model'}").sequence_pool == "cls"
    bare = tmp_path / "bare"
    transformers.GPT2Model(
        transformers.GPT2Config(vocab_size=len(WORDS) + 1, n_embd=8, n_layer=1, n_head=1)
    ).save_pretrained(bare)
    _word_tokenizer(transformers).save_pretrained(bare)
    with pytest.raises(InputError, match="names no padding token and no end-of-text"):
        load_model(f"hf:{bare}")


@pytest.fixture(scope="module")
def t5_setup(tmp_path_factory, text_setup):
    transformers = pytest.importorskip("transformers")
    d = tmp_path_factory.mktemp("t5")
    tokenizer = _word_tokenizer(transformers, pad_token="<|endoftext|>", eos_token="<|endoftext|>")

    def config():  # one each: T5EncoderModel turns its config's is_encoder_decoder off
        return transformers.T5Config(
            vocab_size=len(WORDS) + 1, d_model=16, d_kv=8, d_ff=32, num_layers=2, num_heads=2, decoder_start_token_id=0
        )

    torch.manual_seed(0)
    whole = transformers.T5Model(config()).eval()
    for name, model in (("whole", whole), ("encoder", transformers.T5EncoderModel(config()).eval())):
        model.save_pretrained(d / name)
        tokenizer.save_pretrained(d / name)
    return d, text_setup[0] / "t.csv", whole


def test_an_encoder_decoder_is_read_as_its_encoder_and_pooled_by_the_mean(t5_setup, tmp_path):
    """T5 stopped extract ("You must specify exactly one of input_ids or inputs_embeds": its decoder
    had no input), and a T5EncoderModel folder loaded as the whole model with a random decoder. Its
    token 0 is the text's first word, not a summary token: auto takes the mean."""
    from laya_inspect.models import load_model

    d, csv, whole = t5_setup
    assert type(load_model(f"hf:{d / 'encoder'}").module).__name__ == "T5EncoderModel"
    assert load_model(f"hf:{d / 'whole'}").module is not None
    out = tmp_path / "t5.h5"
    extract_features(
        ExtractConfig(model=f"hf:{d / 'whole'}", data=f"csv:{csv}", out=str(out), batch_size=4, device="cpu")
    )
    alone = _word_tokenizer(pytest.importorskip("transformers"), pad_token="<|endoftext|>")
    with FeatureStore(out) as store:
        assert store.layer_names == ["hidden_states.0", "hidden_states.1", "hidden_states.2"]
        assert store.attrs["layer_pooling"] == ["mean"] * 3
        for k in range(3):
            for row, i in zip(store.layer("train", k), store.index("train")):
                with torch.no_grad():
                    h = whole.encoder(
                        **alone(TEXTS[i][0], return_tensors="pt"), output_hidden_states=True
                    ).hidden_states[k]
                np.testing.assert_allclose(row, h[0].mean(0).numpy(), rtol=1e-4, atol=1e-5)


def test_an_encoder_decoder_classifier_is_read_through_its_encoder_with_its_own_logits(text_setup, tmp_path):
    """BartForSequenceClassification stopped extract ("the model returned none hidden states"): its
    output holds encoder_hidden_states. Its layers are its encoder's, its logits its own, and the
    cache says that its decoder is not read."""
    transformers = pytest.importorskip("transformers")
    special = {"bos_token": "<s>", "pad_token": "<pad>", "eos_token": "</s>", "unk_token": "<unk>"}
    tokenizer = _tokenizer_with(transformers, list(special.values()), "<s> $A </s>", **special)
    config = transformers.BartConfig(
        vocab_size=len(WORDS) + 4,
        d_model=16,
        encoder_layers=2,
        decoder_layers=2,
        encoder_attention_heads=2,
        decoder_attention_heads=2,
        encoder_ffn_dim=32,
        decoder_ffn_dim=32,
        max_position_embeddings=64,
        id2label={0: "neg", 1: "pos"},
    )
    clf = transformers.BartForSequenceClassification
    model, out = _extract_saved(clf, config, tokenizer, tmp_path, text_setup[0] / "t.csv")
    with FeatureStore(out) as store:
        assert any("encoder-decoder classifier" in w for w in store.attrs["warnings"])
        # the probe ends both rows with </s>, as the classifier needs: its encoder reads both ways
        assert store.attrs["layer_pooling"] == ["mean[1:]", "cls", "cls"]
        for i, row, logits in zip(store.index("train"), store.layer("train", 2), store.logits("train")):
            ids = tokenizer(TEXTS[i][0], return_tensors="pt")
            with torch.no_grad():
                whole = model(**ids, output_hidden_states=True)
            h = whole.encoder_hidden_states[2][0]
            np.testing.assert_allclose(row, h[0].numpy(), rtol=1e-4, atol=1e-5)
            np.testing.assert_allclose(logits, whole.logits[0].numpy(), rtol=1e-4, atol=1e-5)


def test_a_layer_pooled_to_one_row_for_every_text_is_a_warning_on_the_terminal_and_in_the_cache(text_setup, tmp_path):
    """QA: --pool cls on the embeddings (token 0 is [CLS]'s embedding alone, the same for every text)
    wrote one row for every input without a word; only fit-head noticed, later. Tried on
    all-MiniLM-L6-v2 too: its hidden_states.0 pooled by cls is exactly one row, hidden_states.1 is not."""
    from typer.testing import CliRunner

    from laya_inspect.cli import app

    d, _, _ = text_setup
    out = tmp_path / "t.h5"
    args = ["extract", "--model", f"hf:{d / 'model'}", "--data", f"csv:{d / 't.csv'}", "--pool", "cls",
            "--out", str(out), "--device", "cpu"]  # fmt: skip
    result = CliRunner().invoke(app, args, env={"COLUMNS": "300"})
    assert result.exit_code == 0, result.output
    said = "hidden_states.0 (pooled by cls) gives the same row for every input"
    assert f"warning: {said}" in " ".join(result.output.split()), result.output
    with FeatureStore(out) as store:
        assert store.layer_names[0] == "hidden_states.0" and store.attrs["layer_pooling"][0] == "cls"
        rows = store.layer("train", 0)
        ours = [w for w in store.attrs["warnings"] if "the same row for every input" in w]
        assert np.ptp(store.layer("train", 1), axis=0).max() > 1e-3  # the blocks' token 0 varies: not named
    assert np.abs(rows - rows[0]).max() == 0
    assert len(ours) == 1 and ours[0].startswith(said) and "--pool (mean)" in ours[0] and "--layers" in ours[0]
    mean = extract_features(
        ExtractConfig(model=f"hf:{d / 'model'}", data=f"csv:{d / 't.csv'}", pool="mean", out=str(tmp_path / "m.h5"))
    )
    assert not [w for w in mean.warnings if "the same row for every input" in w]


def test_the_compute_estimate_of_a_bert_cache_gives_its_embeddings_no_flops(text_setup, tmp_path):
    """QA: the estimate took each layer as an equal share, so keeping hidden_states.0 (a table lookup)
    alone read as saving 2/3 of a two-block BERT's FLOPs, where it saves all of them. Counted from the
    model (auto), the blocks do the FLOPs too, and the embeddings' parameters are not saved."""
    from laya_inspect.beyond.costs import backbone_costs

    d, model, _ = text_setup
    out = tmp_path / "t.h5"
    extract_features(ExtractConfig(model=f"hf:{d / 'model'}", data=f"csv:{d / 't.csv'}", out=str(out), device="cpu"))
    with FeatureStore(out) as store:
        assert store.layer_names == ["hidden_states.0", "hidden_states.1", "hidden_states.2"]
        shapes, counted = backbone_costs(store, "shapes"), backbone_costs(store, "auto")
    assert [shapes.saved(i)[1] for i in range(3)] == [1.0, 0.5, 0.0]
    assert "an embeddings layer, a table lookup, no FLOPs" in shapes.how
    assert counted.source == "model" and counted.saved(0)[1] == 1.0
    table = sum(p.numel() for p in model.embeddings.parameters())
    assert counted.params_total - counted.params_after[0] == table


def test_explain_says_a_text_was_cut_to_the_models_length_on_the_terminal_and_in_the_figure(text_setup, tmp_path):
    """QA: explain showed a text longer than the tokenizer's max_length whole, with no word that the
    model (and so the explanation) read only its first max_length tokens; it says so for an empty text."""
    from laya_inspect.explain import Explanation, explain_figure, read_input

    d, _, _ = text_setup
    long = " ".join(["very"] * 70) + " good movie"  # 72 words + [CLS] and [SEP]: over the model's 64
    rows = [(t, y) for t, y in TEXTS] + [(long, 1)]
    csv = tmp_path / "long.csv"
    csv.write_text(
        "text,label,split\n" + "".join(f'"{t}",{y},{"test" if i >= 6 else "train"}\n' for i, (t, y) in enumerate(rows))
    )
    out = tmp_path / "t.h5"
    extract_features(ExtractConfig(model=f"hf:{d / 'model'}", data=f"csv:{csv}", out=str(out), device="cpu"))
    with FeatureStore(out) as store:
        assert store.attrs["transforms"]["max_length"] == 64
        view = read_input(store, "test", 8, label=1)
        short = read_input(store, "test", 7, label=1)
    assert view.kind == "text" and view.text == long
    assert view.note == "this text is 74 tokens long: the model read only its first 64, so that part alone is explained"
    assert short.kind == "text" and short.note == ""
    e = Explanation(
        "laya", "laya", "test", 2, 8, ["a", "b"], ["neg", "pos"], 1, 1, np.array([0.4, 0.6]), 1, "pred",
        "mean", 0.6, np.array([0.5, 0.5]), np.array([0.1, 0.1]), input=view,
    )  # fmt: skip
    fig = explain_figure(e)
    shown = " ".join(" ".join(t.get_text() for t in fig.axes[0].texts).split())
    assert "the model read only its first 64" in shown and shown.endswith("very good movie")  # the text, after
