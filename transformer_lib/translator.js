// The in-browser translator of transformer_lib.web: the book's trained
// model, exported to ONNX by transformer_lib.export, run by ONNX Runtime
// Web (WebAssembly) on the reader's machine.  Nothing loads until the
// first click; then ort.wasm.min.js, its .wasm and the two graphs come
// from the book's own site: ort/ and translator/ at its root (copied there
// from _extra/ by Sphinx's html_extra_path).  Greedy decoding, as the library's
// greedy_decode: the decoder runs on <bos> + the tokens so far and the
// most likely next token is appended, until <eos> or min(2 S + 5,
// max_len - 1) steps (S: source tokens with <eos>).
(function () {
  "use strict";
  if (window.tlTranslator) return;

  // transformer_lib.data.preprocess, code point by code point.
  function preprocess(text) {
    const chars = Array.from(
      text.replace(/\u202f/g, " ").replace(/\u00a0/g, " ").toLowerCase());
    const out = [];
    chars.forEach((c, i) => {
      if (i > 0 && ",.!?".includes(c) && chars[i - 1] !== " ") out.push(" ");
      out.push(c);
    });
    return out.join("");
  }

  // transformer_lib.data.tokenize: split on spaces, drop empty tokens.
  function tokenize(text) {
    return text.split(" ").filter(t => t.length > 0);
  }

  function siteRoot(fallback) {
    // Sphinx pages load their scripts from <root>/_static/; use that root.
    for (const s of document.querySelectorAll("script[src], link[href]")) {
      const url = s.getAttribute("src") || s.getAttribute("href");
      const at = url.indexOf("_static/");
      if (at >= 0) return new URL(url.slice(0, at), document.baseURI).href;
    }
    return new URL(fallback, document.baseURI).href;
  }

  function loadScript(src) {
    return new Promise((resolve, reject) => {
      const s = document.createElement("script");
      s.src = src;
      s.onload = resolve;
      s.onerror = () => reject(new Error("could not load " + src));
      document.head.appendChild(s);
    });
  }

  let loading = null;  // one load per page, shared by every box
  function load(base) {
    if (loading) return loading;
    loading = (async () => {
      if (typeof WebAssembly !== "object") {
        throw new Error("this browser has no WebAssembly, which the " +
                        "translator needs");
      }
      if (!window.ort) await loadScript(base + "ort/ort.wasm.min.js");
      const ort = window.ort;
      ort.env.wasm.wasmPaths = base + "ort/";
      ort.env.wasm.numThreads = 1;  // no cross-origin isolation needed
      const dir = base + "translator/";
      const response = await fetch(dir + "translator.json");
      if (!response.ok) throw new Error("translator.json: HTTP " + response.status);
      const config = await response.json();
      const options = {executionProviders: ["wasm"]};
      const [encoder, decoder] = await Promise.all([
        ort.InferenceSession.create(dir + "encoder.onnx", options),
        ort.InferenceSession.create(dir + "decoder_step.onnx", options)]);
      const srcIndex = new Map(config.src_tokens.map((t, i) => [t, i]));
      return {ort, config, encoder, decoder, srcIndex};
    })();
    loading.catch(() => { loading = null; });  // a later click retries
    return loading;
  }

  function ids64(ort, values) {
    return new ort.Tensor("int64", BigInt64Array.from(values, BigInt),
                          [1, values.length]);
  }

  async function translate(model, sentence) {
    const {ort, config, encoder, decoder, srcIndex} = model;
    const source = tokenize(preprocess(sentence));
    if (source.length === 0) return {source, empty: true};
    const srcIds = source.map(t => srcIndex.has(t) ? srcIndex.get(t)
                                                   : config.unk_id);
    srcIds.push(config.eos_id);
    const S = srcIds.length;
    const L = config.num_blocks, H = config.num_heads;
    const lens = new ort.Tensor("int64", BigInt64Array.from([BigInt(S)]), [1]);
    // the switches of tl.intervene, all on: every head, no hidden word, a
    // window as long as the source
    const gates = n => new ort.Tensor("float32", new Float32Array(n * H).fill(1),
                                      [n, H]);
    const hidden = new ort.Tensor("bool", new Uint8Array(S), [1, S]);
    const span = new ort.Tensor("int64", BigInt64Array.from([BigInt(S)]), []);
    const {memory} = await encoder.run({src: ids64(ort, srcIds),
                                        src_valid_len: lens,
                                        encoder_gate: gates(config.num_enc_blocks),
                                        hidden, window: span});
    let steps = 2 * S + 5;
    if (config.max_len) steps = Math.min(steps, config.max_len - 1);
    const outputs = [];
    const cross = [];  // [step][block][head][source position]
    for (let t = 0; t < steps; t++) {
      const tgt = ids64(ort, [config.bos_id, ...outputs]);
      const result = await decoder.run({tgt, memory, src_valid_len: lens,
                                        decoder_gate: gates(L), cross_gate: gates(L),
                                        hidden});
      const logits = result.logits.data;
      let best = 0;
      for (let v = 1; v < logits.length; v++) if (logits[v] > logits[best]) best = v;
      const w = result.cross.data, step = [];
      for (let l = 0; l < L; l++) {
        const heads = [];
        for (let h = 0; h < H; h++) {
          heads.push(Array.from(w.subarray((l * H + h) * S, (l * H + h + 1) * S)));
        }
        step.push(heads);
      }
      cross.push(step);
      outputs.push(best);
      if (best === config.eos_id) break;
    }
    const outTokens = outputs.map(i => config.tgt_tokens[i]);
    const words = [];
    for (const i of outputs) {  // Vocab.decode
      if (i === config.eos_id) break;
      if (i !== config.pad_id && i !== config.bos_id) words.push(config.tgt_tokens[i]);
    }
    return {source, unknown: source.filter((t, i) => srcIds[i] === config.unk_id),
            ids: outputs, tokens: outTokens, text: words.join(" "), cross};
  }

  function viewData(result) {
    // cross[step][block][head][s] -> layers[block][head][step][s], x 1000
    const L = result.cross[0].length, H = result.cross[0][0].length;
    const layers = [];
    for (let l = 0; l < L; l++) {
      const heads = [];
      for (let h = 0; h < H; h++) {
        heads.push(result.cross.map(step => step[l][h].map(x => Math.round(x * 1000))));
      }
      layers.push(heads);
    }
    return {scale: 1000, examples: [{
      label: result.source.join(" "), source: [...result.source, "<eos>"],
      target: result.tokens,
      kinds: {cross: {title: "cross-attention", queries: "target",
                      keys: "source", layers}}}]};
  }

  window.tlTranslator = function (root, fallbackBase) {
    const base = siteRoot(fallbackBase);
    const input = root.querySelector(".tl-tr-input");
    const button = root.querySelector(".tl-tr-button");
    const status = root.querySelector(".tl-tr-status");
    const output = root.querySelector(".tl-tr-output");
    const view = root.querySelector(".tl-tr-view");
    root.tlPreprocess = preprocess;  // for the tests
    root.tlTokens = text => tokenize(preprocess(text));
    async function run() {
      button.disabled = true;
      const started = performance.now();
      try {
        if (!tokenize(preprocess(input.value)).length) {
          status.textContent = "Type an English sentence first.";
          return;
        }
        status.textContent = loading ? "Translating…" :
          "Loading the model and ONNX Runtime Web (once)…";
        const model = await load(base);
        status.textContent = "Translating…";
        const result = await translate(model, input.value);
        result.ms = performance.now() - started;
        root.tlResult = result;
        output.textContent = result.text || "(the empty sentence)";
        status.textContent = (result.unknown.length
          ? "Not in the vocabulary, read as <unk>: " + result.unknown.join(", ") + ". "
          : "") + `${result.ids.length} decoding steps in ${Math.round(result.ms)} ms.`;
        view.innerHTML = "";
        window.tlAttentionView(view, viewData(result));
      } catch (err) {
        root.tlError = String(err && err.message || err);
        status.textContent = "The translator could not run here: " + root.tlError +
          ". It needs the built book's files (ort/ and translator/ at its root); " +
          "in a notebook, call tl.translate instead.";
      } finally {
        button.disabled = false;
        root.tlDone = (root.tlDone || 0) + 1;
      }
    }
    button.addEventListener("click", run);
    input.addEventListener("keydown", e => { if (e.key === "Enter") run(); });
  };
})();
