"""The exported translator (transformer_lib.export): the ONNX graphs, run by ONNX Runtime, compute
what the PyTorch model with float16-rounded weights computes, at lengths other than the traced
ones; greedy decoding with them gives the library's tokens; float16 storage is lossless and halves
the files; and the settings file holds what the page needs."""

import json

import numpy as np
import pytest
import torch

import transformer_lib as tl
from transformer_lib.data import Vocab
from transformer_lib.export import (CONFIG_FILE, DECODER_FILE, ENCODER_FILE, export_translator,
                                    rounded_to_float16)
from transformer_lib.translate import decode_ids

ort = pytest.importorskip("onnxruntime")
pytest.importorskip("onnx")

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


def _run(sessions, src, tgt):
    encoder, decoder = sessions
    lens = np.array([src.shape[1]], dtype=np.int64)
    [memory] = encoder.run(None, {"src": src, "src_valid_len": lens})
    logits, cross = decoder.run(None, {"tgt": tgt, "memory": memory, "src_valid_len": lens})
    return memory, logits, cross


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
    got = _run(sessions, src.numpy(), tgt.numpy())
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
            _, logits, _ = _run(sessions, src, tgt)
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
