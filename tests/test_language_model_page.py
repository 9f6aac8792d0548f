"""Chapter 12's sampler in the built book, in headless Chromium, offline.

The page loads nothing of the model until the first click; then its samples equal the library's
``generate`` on the model the page runs (chapter 12 saves it, float16-rounded as exported, to
``_build/language_model/exported.ckpt``) for the same prompt, seed and settings: greedy, three
temperatures and top-k, character for character.  Where float32's rounding differs between ONNX
Runtime and PyTorch, a sample may part at a step that was within a hair of another choice (a
uniform number at a boundary between two characters' slices, or two logits nearly tied for
greedy or for the k-th place): the test accepts a parting only there, and names it.
The page's xorshift32 and samplers are also checked alone, against the library's, on many
seeds and logits.  The test prints the bytes the first sample transfers; it bounds the model's
files (3 MB gzip-compressed), not the time a click takes."""

from __future__ import annotations


import pytest
import torch

from browser import (ROOT, recorded_book, require_chromium, saved_by_chapter,
                     status_when_missing)
from test_book import _built, not_known_harmless

pytestmark = pytest.mark.book

CHECKPOINT = ROOT / "_build" / "language_model" / "exported.ckpt"
PAGE = "notebooks/12_gpt.html"
MAX_MODEL_GZIP_BYTES = 3_000_000   # the model's own files, gzip-compressed
NEAR_BOUNDARY = 1e-4               # a parting is float32 rounding only this close to a tie
SETTINGS = [  # (temperature, top_k): 0 is greedy
    (0.0, None), (0.5, None), (1.0, None), (1.5, None), (1.0, 5)]
PROMPTS = ["", "I ", "Where is the ", "Tom wants to", "ÉCOLE 😀 ünïcode"]


def _reference():
    model, vocab, _, _ = saved_by_chapter(CHECKPOINT, "chapter 12")
    return model, vocab


def sampler_of(temperature, top_k):
    from transformer_lib.translation.sampling import Greedy, Sampler

    return Greedy() if temperature == 0 else Sampler(temperature, top_k=top_k)


def python_sample(model, vocab, prompt, temperature, top_k, seed):
    """The library's sample for the page's settings: ``<eos>`` + the prompt, then characters
    until ``<eos>`` or the model's ``max_len`` positions."""
    from transformer_lib.translation.sampling import generate

    ids = [vocab.eos] + vocab[list(prompt)]
    return generate(model, ids, model.config.max_len - len(ids),
                    sampler_of(temperature, top_k), seed=seed, stop_id=vocab.eos)


def rounding_margin(model, vocab, prompt, written, at, temperature, top_k, seed) -> float:
    """How close the library's step ``at`` (after ``written[:at]``) was to another choice: for
    greedy the gap between the two largest logits; when sampling, the distance from its uniform
    number to the nearest boundary of the cumulative probabilities, and with top-k also the gap
    between the k-th and the next logit.  A parting between the page and the library there is
    float32 rounding only when this is tiny."""
    from transformer_lib.translation.sampling import Xorshift32

    ids = [vocab.eos] + vocab[list(prompt)] + list(written[:at])
    with torch.no_grad():
        logits = model(torch.tensor([ids]))[0, -1].float()
    ranked = logits.sort(descending=True).values
    if temperature == 0:
        return float(ranked[0] - ranked[1])
    rng = Xorshift32(seed)
    for _ in range(at + 1):
        u = rng.uniform()
    cumulative = sampler_of(temperature, top_k).probabilities(logits).cumsum(0)
    margins = [float((cumulative - u * cumulative[-1]).abs().min())]
    if top_k is not None:
        margins.append(float(ranked[top_k - 1] - ranked[top_k]))
    return min(margins)


def compare_samples(model, vocab, box, seeds) -> dict:
    """Every prompt, setting and seed, sampled in the page and in Python; returns counts, and
    fails on a parting that is not float32 rounding."""
    equal, partings = 0, []
    for prompt in PROMPTS:
        for temperature, top_k in SETTINGS:
            for seed in seeds if temperature else seeds[:1]:
                settings = {"temperature": temperature, "topK": top_k, "topP": 1, "seed": seed}
                page = box.evaluate("(b, [p, s]) => b.tlGenerate(p, s)", [prompt, settings])
                want = python_sample(model, vocab, prompt, temperature, top_k, seed)
                assert page["promptIds"] == vocab[list(prompt)], prompt
                if page["ids"] == want:
                    equal += 1
                    assert page["text"] == "".join(vocab.decode(want))
                    continue
                at = next((i for i, (a, b) in enumerate(zip(page["ids"], want)) if a != b),
                          min(len(page["ids"]), len(want)))
                gap = rounding_margin(model, vocab, prompt, want, at, temperature, top_k,
                                      seed)
                where = (f"prompt {prompt!r}, temperature {temperature}, top-k {top_k}, seed "
                         f"{seed}: the page wrote {page['text']!r}, the library "
                         f"{''.join(vocab.decode(want))!r}; they part at character {at}, "
                         f"{gap:.2g} from another choice")
                assert gap < NEAR_BOUNDARY, where
                partings.append(where)
    return {"equal": equal, "partings": partings}


@pytest.fixture(scope="module")
def lm_page(tmp_path_factory):
    require_chromium()
    profile = tmp_path_factory.mktemp("chromium-language-model")
    with recorded_book(_built(), profile) as recorded:
        server, routes, page, received, errors = recorded
        page.goto(server.url + PAGE, wait_until="networkidle")
        yield recorded


def _click(page, box, prompt, temperature, top_k, seed):
    done = box.evaluate("b => b.tlDone || 0")
    box.locator(".tl-lm-prompt").fill(prompt)
    box.locator(".tl-lm-temperature").fill(str(temperature))
    box.locator(".tl-lm-top-k").fill("" if top_k is None else str(top_k))
    box.locator(".tl-lm-seed").fill(str(seed))
    box.locator(".tl-lm-button").click()
    page.wait_for_function("([b, n]) => (b.tlDone || 0) > n", arg=[box.element_handle(), done])
    return box.evaluate("b => ({result: b.tlResult || null, error: b.tlError || null, "
                        "status: b.querySelector('.tl-lm-status').textContent, "
                        "output: b.querySelector('.tl-lm-output').textContent})")


def test_the_page_samples_as_the_library_does(lm_page):
    server, routes, page, received, errors = lm_page
    model, vocab = _reference()
    box = page.locator(".tl-lm")
    assert box.count() == 1
    box.scroll_into_view_if_needed()
    assert not [u for u, *_ in received if "/ort/" in u or "/language_model/" in u]

    # The first click, as a reader makes it: what it transfers, and its sample.
    page_gzip = sum(size for _, _, size in received)
    received.clear()
    state = _click(page, box, "Where is", 0.8, None, 3)
    assert state["error"] is None, state["error"]
    files = {u.rsplit("/", 1)[-1]: gz for u, _, gz in received}
    assert {"next_token.onnx", "language_model.json", "ort.wasm.min.js"} <= set(files), files
    model_gzip = sum(gz for u, _, gz in received if "/language_model/" in u)
    total_gzip = sum(files.values())
    assert model_gzip <= MAX_MODEL_GZIP_BYTES, files
    want = python_sample(model, vocab, "Where is", 0.8, None, 3)
    assert state["result"]["ids"] == want, (state["result"]["text"], vocab.decode(want))
    assert state["output"] == "Where is" + state["result"]["text"]
    loaded = len(received)
    shots = ROOT / "_build" / "screenshots"
    shots.mkdir(parents=True, exist_ok=True)
    box.screenshot(path=str(shots / "12_gpt-in-browser.png"))

    counts = compare_samples(model, vocab, box, seeds=[0, 1, 2, 3])
    assert counts["equal"] >= 0.9 * (counts["equal"] + len(counts["partings"]))

    assert len(received) == loaded        # the model loaded once
    assert not routes.refused, routes.refused
    assert not not_known_harmless(errors), errors
    print(f"\nlanguage model box: {counts['equal']} samples equal to the library's, "
          f"{len(counts['partings'])} parted at a float32 near-tie "
          f"{counts['partings']}; the first click transferred {total_gzip / 1e6:.2f} MB "
          f"gzip-compressed, the model's files {model_gzip / 1e6:.2f} MB of it "
          f"({ {k: round(v / 1e6, 3) for k, v in files.items()} }); the page before it "
          f"{page_gzip / 1e6:.2f} MB; first click: loading {state['result']['loadMs']:.0f} ms, "
          f"sampling {len(want)} ids {state['result']['ms']:.0f} ms")


def test_the_pages_sampling_arithmetic_is_the_librarys(lm_page):
    from transformer_lib.translation.sampling import Sampler, Xorshift32, choose

    page = lm_page[2]
    box = page.locator(".tl-lm")
    seeds = [0, 1, 2, 7, 12345, 2 ** 32 - 1, 2 ** 40 + 3]
    js = box.evaluate("(b, seeds) => seeds.map(s => { const u = b.tlSampling.xorshift32(s);"
                      " return Array.from({length: 50}, u); })", seeds)
    for seed, values in zip(seeds, js):
        rng = Xorshift32(seed)
        assert values == [rng.uniform() for _ in range(50)], seed

    generator = torch.Generator().manual_seed(0)
    cases = []
    for i in range(200):
        logits = torch.randn(76, generator=generator) * (1 + i % 7)
        logits[:3] = logits[3]                      # ties, which go to the lower id
        logits = logits.float()
        temperature = [0.3, 0.8, 1.0, 1.7][i % 4]
        top_k = [None, 1, 5, 40][i // 4 % 4]
        top_p = [1.0, 0.9, 0.5][i // 16 % 3]
        u = float(torch.rand(1, generator=generator))
        cases.append((logits.tolist(), temperature, top_k, top_p, u))
    js = box.evaluate("(b, cases) => cases.map(([l, t, k, p, u]) => { const s = b.tlSampling;"
                      " const probs = s.probabilities(Float32Array.from(l),"
                      " {temperature: t, topK: k, topP: p}); return [Array.from(probs),"
                      " s.choose(probs, u)]; })", cases)
    for (logits, temperature, top_k, top_p, u), (probs, chosen) in zip(cases, js):
        want = Sampler(temperature, top_k=top_k, top_p=top_p).probabilities(
            torch.tensor(logits))
        assert (torch.tensor(probs, dtype=torch.float64) > 0).tolist() == (want > 0).tolist()
        assert torch.allclose(torch.tensor(probs, dtype=torch.float64), want, rtol=1e-12,
                              atol=1e-15)
        assert chosen == choose(want, u)


def test_the_page_says_what_is_wrong(lm_page):
    page = lm_page[2]
    box = page.locator(".tl-lm")
    for prompt, temperature, top_k, seed, says in [
            ("Hi", 0.8, "2.5", 0, "Top-k must be a whole number"),
            ("Hi", 0.8, None, -1, "The seed must be a whole number"),
            ("Hi", 0.8, None, "", "The seed must be a whole number"),
            ("x" * 80, 0.8, None, 0, "The prompt is too long")]:
        state = _click(page, box, prompt, temperature, top_k, seed)
        assert says in state["status"], state["status"]


@pytest.mark.parametrize("failure", ["no WebAssembly", "model missing"])
def test_a_clear_message_when_the_sampler_cannot_run(lm_page, failure):
    server, routes, page, received, errors = lm_page
    missing = {"no WebAssembly": None, "model missing": "**/language_model.json"}[failure]
    status, page_errors = status_when_missing(page.context, server.url + PAGE, ".tl-lm",
                                              missing)
    assert status.startswith("The language model could not run here")
    assert {"no WebAssembly": "WebAssembly", "model missing": "language_model.json"}[failure] \
        in status
    assert not not_known_harmless(page_errors), page_errors
