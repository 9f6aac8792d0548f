"""How long the book's in-browser translators take, in headless Chromium over
the built book, offline, with this machine's matrix-product speed beside it.

Two boxes: chapter 8's (the published everyday model, int8, subwords) and
chapter 9's (chapter 8's own word model, with a button for every head). For
each, measured in the page from the click to the translation shown:

- the first click, loading included (ONNX Runtime Web, the model and, for
  the everyday model, the tokenizer, from the local server);
- ``--clicks`` later clicks on a 10-word sentence: the button again
  (chapter 8), or the first head's button, which switches that head off
  and on again, translating each time (chapter 9); their median and
  largest time.

A click's time moves with the machine and with what else runs on it, so the
tests (``tests/test_translator_page.py``) check what the pages compute and
that a later click loads nothing again, and bound no time; this script
measures it, and the book's tables of these times come from its output.

Run:  make book vendor
      python benchmarks/bench_translator_page.py [--clicks 15]
(about a minute; it needs Chromium, as the browser tests do)
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))  # the browser tests' offline server

from browser import find_chromium, offline_book  # noqa: E402

from transformer_lib.translation.provenance import (  # noqa: E402
    cpu_name, matmul_gflops)

SENTENCE = "I think he is afraid of the dark in the house."
BOXES = {  # page, the later clicks' target
    "chapter 8, everyday model": ("notebooks/08_translator.html",
                                  ".tl-tr-button"),
    "chapter 9, word model, a head's button": (
        "notebooks/09_experiments.html", ".tl-tr-head >> nth=0"),
}


def click_and_wait(page, box, target):
    """Click ``target``; the page's time from the click to the translation
    shown, in ms, and the number of decoding steps."""
    done = box.evaluate("b => b.tlDone || 0")
    target.click()
    page.wait_for_function("([b, n]) => (b.tlDone || 0) > n",
                           arg=[box.element_handle(), done])
    state = box.evaluate("b => ({ms: b.tlDoneAt - b.tlClickAt, "
                         "error: b.tlError || null, "
                         "steps: b.tlResult && b.tlResult.ids.length})")
    if state["error"]:
        raise SystemExit(f"the box could not translate: {state['error']}")
    return state["ms"], state["steps"]


def measure(page, url, target, clicks):
    page.goto(url, wait_until="networkidle")
    box = page.locator(".tl-tr")
    if box.count() != 1:
        raise SystemExit(f"{url}: expected one translator box, found "
                         f"{box.count()}")
    box.scroll_into_view_if_needed()
    box.evaluate("b => b.addEventListener('click', () => "
                 "{ b.tlClickAt = performance.now(); }, true)")
    box.locator(".tl-tr-input").fill(SENTENCE)
    first, _ = click_and_wait(page, box, box.locator(".tl-tr-button"))
    later, steps = [], []
    for _ in range(clicks):
        ms, length = click_and_wait(page, box, box.locator(target))
        later.append(ms)
        steps.append(length)
    fewest, most = min(steps), max(steps)
    return dict(first_s=first / 1000, median_ms=statistics.median(later),
                max_ms=max(later), clicks=clicks,
                steps=f"{fewest}–{most}" if most > fewest else str(most))


def main():
    parser = argparse.ArgumentParser(
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clicks", type=int, default=15,
                        help="later clicks per box (default 15)")
    parser.add_argument("--html", type=Path,
                        default=ROOT / "_build" / "html",
                        help="the built book (default _build/html)")
    args = parser.parse_args()
    if args.clicks < 1:
        parser.error("--clicks must be at least 1")
    if not (args.html / "index.html").is_file():
        parser.error(f"no built book in {args.html}: run `make book`")
    if find_chromium() is None:
        parser.error("no Chromium: install the `chromium` package")
    # the host's speed, measured before the browser starts
    gflops = {name: matmul_gflops(dtype) for name, dtype in
              (("float32", torch.float32), ("bfloat16", torch.bfloat16))}
    started = time.perf_counter()
    results = {}
    with tempfile.TemporaryDirectory() as profile, \
            offline_book(args.html, Path(profile), 120_000) as (
                server, routes, page):
        for name, (path, target) in BOXES.items():
            results[name] = measure(page, server.url + path, target,
                                    args.clicks)
        if routes.refused:
            raise SystemExit(f"the pages asked for outside files: "
                             f"{routes.refused}")
    print(f"{cpu_name()}, {torch.get_num_threads()} threads; 2048² matrix "
          f"product: {gflops['float32']:.0f} float32 / "
          f"{gflops['bfloat16']:.0f} bfloat16 GFLOP/s; "
          f"{time.perf_counter() - started:.0f} s in Chromium")
    print(f"sentence: {SENTENCE!r}\n")
    print("| box | first click, loading included (s) | later click, median "
          "(ms) | largest (ms) | clicks | decoding steps |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for name, r in results.items():
        print(f"| {name} | {r['first_s']:.2f} | {r['median_ms']:.0f} | "
              f"{r['max_ms']:.0f} | {r['clicks']} | {r['steps']} |")


if __name__ == "__main__":
    main()
