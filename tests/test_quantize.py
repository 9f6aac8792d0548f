"""int8 weights (transformer_lib.translation.checkpoint): each matrix as int8 times a scale per row,
within half a step of the original; an int8 checkpoint stores a tied matrix once and loads as
rounded_to_int8's model; the ONNX export in int8 holds int8 initializers, a tied output layer
once, and computes exactly what that model computes; in every storage, each graph holds a tied
matrix once."""

import numpy as np
import pytest
import torch

import transformer_lib as tl
from conftest import import_or_skip
from transformer_lib.translation.checkpoint import (dequantize_int8, load_checkpoint,
                                                    quantize_int8, rounded_to_int8,
                                                    save_checkpoint)
from transformer_lib.translation.data import Vocab


def test_int8_is_within_half_a_step_and_uses_the_whole_range():
    torch.manual_seed(0)
    w = torch.randn(50, 40) * torch.logspace(-3, 1, 50)[:, None]   # rows of very different sizes
    w[7] = 0.0
    q, scale = quantize_int8(w)
    assert q.dtype == torch.int8 and scale.shape == (50,)
    back = dequantize_int8(q, scale)
    assert ((back - w).abs() <= scale[:, None] / 2 * (1 + 1e-6)).all()
    nonzero = torch.arange(50) != 7
    assert (q[nonzero].abs().amax(dim=1) == 127).all()
    assert (back[7] == 0).all()


def _tied_model():
    torch.manual_seed(1)
    config = tl.TransformerConfig(30, 30, num_hiddens=32, ffn_num_hiddens=64, num_heads=4,
                                  num_enc_blks=1, num_dec_blks=2, max_len=20,
                                  tie_embeddings=True)
    return tl.Transformer(config).eval()


def test_an_int8_checkpoint_loads_as_the_rounded_model_with_the_tie_kept(tmp_path):
    model = _tied_model()
    vocab = Vocab([[f"w{i}" for i in range(26)]])
    assert len(vocab) == 30
    save_checkpoint(tmp_path / "f32.pt", model, vocab, vocab)
    save_checkpoint(tmp_path / "i8.pt", model, vocab, vocab, weights="int8")
    f32, i8 = (tmp_path / "f32.pt").stat().st_size, (tmp_path / "i8.pt").stat().st_size
    assert i8 < 0.5 * f32   # the matrices in a quarter; biases, norms, vocabulary as they were
    loaded, *_ = load_checkpoint(tmp_path / "i8.pt")
    assert loaded.decoder.dense.weight is loaded.encoder.embedding.weight
    want = rounded_to_int8(model).state_dict()
    for name, tensor in loaded.state_dict().items():
        assert torch.equal(tensor, want[name]), name
    assert not torch.equal(loaded.encoder.embedding.weight, model.encoder.embedding.weight)
    payload = torch.load(tmp_path / "i8.pt", weights_only=True)
    assert "decoder.dense.weight" not in payload["state_dict"]       # the tie, stored once
    assert payload["state_dict"]["encoder.embedding.weight"].dtype == torch.int8
    with pytest.raises(ValueError, match="weights must be one of"):
        save_checkpoint(tmp_path / "x.pt", model, vocab, vocab, weights="int4")


def test_the_int8_export_is_the_rounded_model_with_the_tied_matrix_once(tmp_path):
    ort = import_or_skip("onnxruntime")
    onnx = import_or_skip("onnx")
    from onnx import numpy_helper

    from transformer_lib.instruments.export import (DECODER_FILE, ENCODER_FILE, all_on,
                                                    export_translator)

    model = _tied_model()
    vocab = Vocab([[f"w{i}" for i in range(26)]])
    result = export_translator(model, vocab, vocab, tmp_path, weights="int8")
    rounded = rounded_to_int8(model)
    for a, b in zip(result.model.state_dict().values(), rounded.state_dict().values()):
        assert torch.equal(a, b)
    decoder = onnx.load(str(tmp_path / DECODER_FILE))
    kinds = [n.op_type for n in decoder.graph.node]
    assert "DequantizeLinear" in kinds
    inits = {i.name: numpy_helper.to_array(i) for i in decoder.graph.initializer}
    big_float = [n for n, a in inits.items() if a.dtype == np.float32 and a.ndim == 2
                 and a.size >= 30 * 32]
    assert big_float == [] or all("pe" in n.lower() or "P" in n for n in big_float), big_float
    tied = [a for a in inits.values() if a.dtype == np.int8 and a.ndim == 2 and 30 in a.shape]
    assert len(tied) == 1                                  # embedding and output layer: once

    src = np.array([[5, 9, 4, 2]], dtype=np.int64)
    S = src.shape[1]
    lens = np.array([S], dtype=np.int64)
    switches = {k: v.numpy() for k, v in all_on(rounded, S).items()}
    # As the page runs them: without session.disable_quant_qdq ONNX Runtime's extended
    # optimisations fuse DequantizeLinear and MatMul into an integer product (the activations
    # quantised on the fly, 2e-2 off here); with it the weights are dequantized once, when the
    # graph loads (constant folding), and every product is float32
    options = ort.SessionOptions()
    options.add_session_config_entry("session.disable_quant_qdq", "1")
    encoder = ort.InferenceSession(str(tmp_path / ENCODER_FILE), options)
    step = ort.InferenceSession(str(tmp_path / DECODER_FILE), options)
    [memory] = encoder.run(None, {"src": src, "src_valid_len": lens,
                                  **{k: switches[k] for k in ("encoder_gate", "hidden",
                                                              "window")}})
    tgt = np.array([[1, 6, 7]], dtype=np.int64)
    logits, _ = step.run(None, {"tgt": tgt, "memory": memory, "src_valid_len": lens,
                                **{k: switches[k] for k in ("decoder_gate", "cross_gate",
                                                            "hidden")}})
    with torch.no_grad():
        want_memory = rounded.encoder.encode(torch.from_numpy(src), torch.from_numpy(lens))
        want = rounded.decoder.decode(torch.from_numpy(tgt), want_memory,
                                      torch.from_numpy(lens))[:, -1]
    assert np.abs(memory - want_memory.numpy()).max() < 1e-4
    assert np.abs(logits - want.numpy()).max() < 1e-4


@pytest.mark.parametrize("weights", ["float32", "float16", "int8"])
def test_each_graph_holds_a_tied_matrix_once_in_every_storage(tmp_path, weights):
    ort = import_or_skip("onnxruntime")
    onnx = import_or_skip("onnx")

    from transformer_lib.instruments.export import (DECODER_FILE, ENCODER_FILE, all_on,
                                                    export_translator)

    model = _tied_model()
    vocab = Vocab([[f"w{i}" for i in range(26)]])
    result = export_translator(model, vocab, vocab, tmp_path, weights=weights)
    for name in (ENCODER_FILE, DECODER_FILE):
        inits = onnx.load(str(tmp_path / name)).graph.initializer
        tied = [i.name for i in inits if sorted(i.dims) == [30, 32]]   # (V, d) or (d, V)
        assert len(tied) == 1, (name, tied)
    # the decoder step still computes the exported model's logits
    options = ort.SessionOptions()
    options.add_session_config_entry("session.disable_quant_qdq", "1")
    step = ort.InferenceSession(str(tmp_path / DECODER_FILE), options)
    src, tgt = torch.tensor([[5, 9, 4, 2]]), torch.tensor([[1, 6, 7]])
    lens = torch.tensor([4])
    switches = {k: v.numpy() for k, v in all_on(result.model, 4).items()}
    with torch.no_grad():
        memory = result.model.encoder.encode(src, lens)
        want = result.model.decoder.decode(tgt, memory, lens)[:, -1]
    logits, _ = step.run(None, {"tgt": tgt.numpy(), "memory": memory.numpy(),
                                "src_valid_len": lens.numpy(),
                                **{k: switches[k] for k in ("decoder_gate", "cross_gate",
                                                            "hidden")}})
    assert np.abs(logits - want.numpy()).max() < 1e-4
