"""The exported translator (transformer_lib.instruments.export): the ONNX graphs, run by ONNX Runtime, compute
what the PyTorch model with float16-rounded weights computes, at lengths other than the traced
ones; greedy decoding with them gives the library's tokens; float16 storage is lossless and halves
the files; and the settings file holds what the page needs."""

import json

import numpy as np
import pytest
import torch

import transformer_lib as tl
from conftest import import_or_skip
from transformer_lib.model import LanguageModel, LanguageModelConfig
from transformer_lib.translation.data import Vocab
from transformer_lib.instruments.export import (CONFIG_FILE, DECODER_FILE, ENCODER_FILE, all_on,
                                    export_translator, rounded_to_float16)
from transformer_lib.translation.translate import decode_ids

ort = import_or_skip("onnxruntime")
import_or_skip("onnx")

SRC = Vocab([[f"e{i}" for i in range(40)]])
TGT = Vocab([[f"f{i}" for i in range(30)]])


@pytest.fixture(scope="module", params=[False, True], ids=["post-norm", "pre-norm"])
def exported(request, tmp_path_factory):
    torch.manual_seed(0)
    config = tl.TransformerConfig(len(SRC), len(TGT), num_hiddens=32, ffn_num_hiddens=64,
                                  num_heads=4, num_enc_blks=2, num_dec_blks=3, max_len=40,
                                  norm_first=request.param)
    model = tl.Transformer(config)
    with torch.no_grad():   # no <pad> or <bos> as outputs, as in a trained model
        model.decoder.dense.bias[:2] = -10.0
    directory = tmp_path_factory.mktemp("export")
    result = export_translator(model, SRC, TGT, directory)
    sessions = [ort.InferenceSession(str(directory / name)) for name in (ENCODER_FILE, DECODER_FILE)]
    return model, result, sessions


def _run(sessions, model, src, tgt, switches=None):
    """The graphs on one source; ``switches``: ``all_on(model, S)``'s inputs, with changes."""
    encoder, decoder = sessions
    S = src.shape[1]
    lens = np.array([S], dtype=np.int64)
    inputs = {**{k: v.numpy() for k, v in all_on(model, S).items()}, **(switches or {})}
    [memory] = encoder.run(None, {"src": src, "src_valid_len": lens,
                                  **{k: inputs[k] for k in ("encoder_gate", "hidden", "window")}})
    logits, cross = decoder.run(None, {"tgt": tgt, "memory": memory, "src_valid_len": lens,
                                       **{k: inputs[k] for k in ("decoder_gate", "cross_gate",
                                                                 "hidden")}})
    return memory, logits, cross


@pytest.mark.parametrize("change", ["encoder head", "decoder head", "cross heads", "hidden",
                                    "window", "all at once"])
def test_the_graphs_switches_are_intervene(exported, change):
    """Heads off, hidden words and the window, as graph inputs: the page's numbers are
    tl.intervene's on the rounded model."""
    _, result, sessions = exported
    model = result.model
    S, T = 9, 6
    g = torch.Generator().manual_seed(7)
    src = torch.randint(4, len(SRC), (1, S), generator=g)
    tgt = torch.randint(4, len(TGT), (1, T), generator=g)
    switches = {k: v.clone() for k, v in all_on(model, S).items()}
    off, hidden, window = [], None, None
    if change in ("encoder head", "all at once"):
        off.append(("encoder_self", 1, 2))
        switches["encoder_gate"][1, 2] = 0
    if change in ("decoder head", "all at once"):
        off.append(("decoder_self", 0, 0))
        switches["decoder_gate"][0, 0] = 0
    if change in ("cross heads", "all at once"):
        off += [("cross", 0, 1), ("cross", 2, 3)]
        switches["cross_gate"][0, 1] = switches["cross_gate"][2, 3] = 0
    if change in ("hidden", "all at once"):
        hidden = torch.zeros(1, S, dtype=torch.bool)
        hidden[0, [2, 5]] = True
        switches["hidden"] = hidden
    if change in ("window", "all at once"):
        window = 1
        switches["window"] = torch.tensor(1)
    lens = torch.tensor([S])
    with torch.no_grad(), tl.intervene(model, heads_off=off, hidden=hidden, window=window):
        memory = model.encoder.encode(src, lens)
        with tl.record_attention(model.decoder) as maps:
            logits = model.decoder.decode(tgt, memory, lens)[:, -1]
        cross = torch.stack([maps.of(b.attention2)[0][:, :, -1] for b in model.decoder.blks], 1)
    plain = _run(sessions, model, src.numpy(), tgt.numpy())
    got = _run(sessions, model, src.numpy(), tgt.numpy(), {k: v.numpy() for k, v in switches.items()})
    for ours, theirs in zip(got, (memory, logits, cross), strict=True):
        np.testing.assert_allclose(ours, theirs.numpy(), atol=1e-4, rtol=1e-4)
    assert not np.allclose(got[1], plain[1], atol=1e-4)          # the switch changed the output
    if hidden is not None:
        assert (got[2][..., [2, 5]] == 0).all()                  # exactly 0 on hidden words
    for block, head in [(b, h) for kind, b, h in off if kind == "cross"]:
        assert (got[2][0, block, head] == 0).all()               # and on gated heads


@pytest.mark.parametrize("S, T", [(1, 1), (4, 2), (11, 9)])
def test_graphs_compute_the_rounded_model_at_any_length(exported, S, T):
    _, result, sessions = exported
    model = result.model
    g = torch.Generator().manual_seed(S * 100 + T)
    src = torch.randint(4, len(SRC), (1, S), generator=g)
    tgt = torch.randint(4, len(TGT), (1, T), generator=g)
    lens = torch.tensor([S])
    with torch.no_grad():
        memory = model.encoder.encode(src, lens)
        with tl.record_attention(model.decoder) as maps:
            logits = model.decoder.decode(tgt, memory, lens)[:, -1]
        cross = torch.stack([maps.of(b.attention2)[0][:, :, -1] for b in model.decoder.blks], 1)
    got = _run(sessions, model, src.numpy(), tgt.numpy())
    for ours, theirs in zip(got, (memory, logits, cross), strict=True):
        assert ours.shape == tuple(theirs.shape)
        np.testing.assert_allclose(ours, theirs.numpy(), atol=1e-4, rtol=1e-4)
    assert cross.shape == (1, len(model.decoder.blks), 4, S)


def test_greedy_decoding_with_the_graphs_gives_the_library_tokens(exported):
    _, result, sessions = exported
    settings = json.loads((result.directory / CONFIG_FILE).read_text())
    g = torch.Generator().manual_seed(1)
    sources = [[SRC.idx_to_token[i] for i in torch.randint(4, len(SRC), (n,), generator=g)]
               for n in (1, 3, 5, 8, 12)]
    # one at a time: in a batch the step limit follows the longest source
    expected = [decode_ids(result.model, [s], SRC, TGT)[0] for s in sources]
    for source, want in zip(sources, expected, strict=True):
        src = np.array([SRC[source] + [Vocab.eos]], dtype=np.int64)
        steps = min(2 * src.shape[1] + 5, settings["max_len"] - 1)
        out = []
        for _ in range(steps):     # what the page's JavaScript does
            tgt = np.array([[Vocab.bos] + out], dtype=np.int64)
            _, logits, _ = _run(sessions, result.model, src, tgt)
            out.append(int(logits[0].argmax()))
            if out[-1] == Vocab.eos:
                break
        assert out == want
    assert len({tuple(e) for e in expected}) > 1     # the sources got different translations


def test_float16_storage_is_lossless_and_halves_the_files(exported, tmp_path):
    import onnx

    model, result, _ = exported
    full = export_translator(model, SRC, TGT, tmp_path, weights="float32")
    def weight_bytes(path):
        return sum(onnx.numpy_helper.to_array(i).nbytes for i in onnx.load(str(path)).graph.initializer)

    for name in (ENCODER_FILE, DECODER_FILE):
        # the weights take half the bytes (small tensors such as LayerNorm's stay float32)
        assert weight_bytes(result.directory / name) < 0.52 * weight_bytes(full.directory / name)
        assert result.files[name] < full.files[name]
    for p, q in zip(model.parameters(), result.model.parameters(), strict=True):
        assert torch.equal(q, q.half().float())                         # float16 values
        assert (p - q).abs().max() <= p.abs().max() * 2**-11 + 1e-7     # the nearest ones


def test_the_settings_file_holds_what_the_page_needs(exported):
    _, result, _ = exported
    settings = json.loads((result.directory / CONFIG_FILE).read_text(encoding="utf-8"))
    assert settings["src_tokens"] == SRC.idx_to_token and settings["tgt_tokens"] == TGT.idx_to_token
    assert (settings["bos_id"], settings["eos_id"], settings["unk_id"]) == (1, 2, 3)
    assert settings["max_len"] == 40 and settings["num_blocks"] == 3 and settings["num_heads"] == 4
    assert settings["num_enc_blocks"] == 2
    for name in (ENCODER_FILE, DECODER_FILE):
        import hashlib

        data = (result.directory / name).read_bytes()
        assert settings["files"][name] == {"bytes": len(data),
                                           "sha256": hashlib.sha256(data).hexdigest()}


def test_rounding_leaves_the_original_alone():
    torch.manual_seed(0)
    model = tl.Transformer(tl.TransformerConfig(len(SRC), len(TGT), num_hiddens=16,
                                                ffn_num_hiddens=32)).train()
    before = [p.clone() for p in model.parameters()]
    rounded = rounded_to_float16(model)
    assert model.training and not rounded.training
    assert all(torch.equal(a, b) for a, b in zip(before, model.parameters(), strict=True))
    assert any(not torch.equal(a, b) for a, b in zip(before, rounded.parameters(), strict=True))


def test_bad_arguments_are_named(tmp_path):
    model = tl.Transformer(tl.TransformerConfig(len(SRC), len(TGT), num_hiddens=16,
                                                ffn_num_hiddens=32))
    with pytest.raises(ValueError, match="weights must be one of"):
        export_translator(model, SRC, TGT, tmp_path, weights="int4")
    with pytest.raises(ValueError, match="tgt_vocab has 5 tokens"):
        export_translator(model, SRC, Vocab([["x"]]), tmp_path)


# The language model (chapter 12): one graph, the next token's logits.

LM_VOCAB = Vocab.from_tokens(list(Vocab([[]]).idx_to_token) + list("abcdefgh .!"))


@pytest.fixture(scope="module", params=["gpt", "2017"])
def exported_lm(request, tmp_path_factory):
    from transformer_lib.instruments.export import LM_FILE, export_language_model

    torch.manual_seed(0)
    config = LanguageModelConfig(len(LM_VOCAB), num_hiddens=32, ffn_num_hiddens=64,
                                    num_heads=4, num_blks=2, max_len=24)
    model = LanguageModel(config.gpt() if request.param == "gpt" else config)
    directory = tmp_path_factory.mktemp("export-lm")
    result = export_language_model(model, LM_VOCAB, directory)
    return model, result, ort.InferenceSession(str(directory / LM_FILE))


@pytest.mark.parametrize("T", [1, 3, 7, 24])
def test_the_language_models_graph_computes_the_rounded_model(exported_lm, T):
    model, result, session = exported_lm
    ids = torch.randint(len(LM_VOCAB), (1, T), generator=torch.Generator().manual_seed(T))
    [logits] = session.run(None, {"ids": ids.numpy()})
    with torch.no_grad():
        want = result.model(ids)[:, -1].numpy()
        original = model.eval()(ids)[:, -1].numpy()
    assert logits.shape == (1, len(LM_VOCAB))
    assert np.abs(logits - want).max() < 1e-4
    assert np.abs(original - want).max() > 0       # the rounding did change something


def test_the_language_models_files_and_settings(exported_lm):
    from transformer_lib.instruments.export import LM_CONFIG_FILE, LM_FILE

    model, result, _ = exported_lm
    settings = json.loads((result.directory / LM_CONFIG_FILE).read_text())
    assert settings["tokens"] == LM_VOCAB.idx_to_token
    assert (settings["eos_id"], settings["unk_id"]) == (Vocab.eos, Vocab.unk)
    assert settings["max_len"] == model.config.max_len
    assert settings["files"][LM_FILE]["bytes"] == result.files[LM_FILE]
    # float16 storage: the weights take at most two bytes a parameter (a tied matrix once)
    import onnx

    graph = onnx.load(str(result.directory / LM_FILE)).graph
    stored = sum(len(init.raw_data) for init in graph.initializer)
    assert stored <= 2 * model.num_parameters()


def test_real_rotations_equal_the_complex_ones():
    from transformer_lib.instruments.export import RealRotaryEmbedding, with_real_rotations
    from transformer_lib.model import RotaryEmbedding

    rotary = RotaryEmbedding(head_dim=8, max_len=20)
    real = RealRotaryEmbedding.like(rotary)
    X = torch.randn(2, 3, 5, 8)
    for offset in (0, 4, 15):
        assert torch.allclose(real(X, offset), rotary(X, offset), atol=1e-6)
    torch.manual_seed(0)
    config = LanguageModelConfig(len(LM_VOCAB), num_hiddens=32, ffn_num_hiddens=64,
                                    num_heads=4, num_blks=2, max_len=24).gpt()
    model = LanguageModel(config).eval()
    ids = torch.randint(len(LM_VOCAB), (2, 9))
    swapped = with_real_rotations(LanguageModel(config).eval())
    swapped.load_state_dict(model.state_dict())
    kinds = {type(m) for m in swapped.modules()}
    assert RealRotaryEmbedding in kinds and RotaryEmbedding not in kinds
    with torch.no_grad():
        assert torch.allclose(swapped(ids), model(ids), atol=1e-5)


def test_the_language_models_export_names_bad_arguments(tmp_path):
    from transformer_lib.instruments.export import export_language_model

    model = LanguageModel(LanguageModelConfig(len(LM_VOCAB), num_hiddens=16,
                                                    ffn_num_hiddens=32, num_heads=2))
    with pytest.raises(ValueError, match="weights must be one of"):
        export_language_model(model, LM_VOCAB, tmp_path, weights="int4")
    with pytest.raises(ValueError, match="vocab has 5 tokens"):
        export_language_model(model, Vocab([["x"]]), tmp_path)
