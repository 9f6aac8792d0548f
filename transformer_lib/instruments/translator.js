// The in-browser translator of transformer_lib.instruments.web: a trained
// model, exported to ONNX by transformer_lib.instruments.export, run by ONNX
// Runtime Web (WebAssembly) on the reader's machine.  Nothing loads until
// the first click; then ort.wasm.min.js, its .wasm and the two graphs come
// from the book's own site: ort/ and the model's folder (translator/ or
// everyday/) at its root (copied there from _extra/ by Sphinx's
// html_extra_path; onnx_page.js loads the runtime).  A model in subwords
// also loads Hugging Face's tokenizers.js (tokenizers/) and its
// tokenizer.json, the file Python's tokenizers wrote.  Greedy decoding, as
// the library's greedy_decode: the decoder runs on <bos> + the tokens so far
// and the most likely next token (never <pad> or <bos>) is appended, until
// <eos> or min(2 S + 5, max_len - 1) steps (S: source tokens with <eos>).
(function () {
  "use strict";
  if (window.tlTranslator) return;

  // transformer_lib.translation.data.preprocess, code point by code point.
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

  // transformer_lib.translation.data.tokenize: split on spaces, drop empty
  // tokens.
  function tokenize(text) {
    return text.split(" ").filter(t => t.length > 0);
  }

  const loads = new Map();  // one load per model and page, shared by its boxes
  function load(base, folder) {
    if (loads.has(folder)) return loads.get(folder);
    const loading = (async () => {
      const ort = await window.tlOnnx.loadRuntime(base, "translator");
      const dir = base + folder + "/";
      const response = await fetch(dir + "translator.json");
      if (!response.ok) throw new Error("translator.json: HTTP " + response.status);
      const config = await response.json();
      // int8 weights: without disable_quant_qdq ONNX Runtime would fuse each
      // DequantizeLinear into an integer product (the activations quantised
      // on the fly) or, at its basic level, dequantize at every run; with it
      // the weights are dequantized once, when the graph loads, and every
      // product is float32, as in PyTorch
      const options = {executionProviders: ["wasm"], graphOptimizationLevel: "all",
                       extra: {session: {disable_quant_qdq: "1"}}};
      const [encoder, decoder, subwords] = await Promise.all([
        ort.InferenceSession.create(dir + "encoder.onnx", options),
        ort.InferenceSession.create(dir + "decoder_step.onnx", options),
        config.tokenizer === "bpe" ? loadSubwords(base, dir) : null]);
      const srcIndex = subwords ? null
        : new Map(config.src_tokens.map((t, i) => [t, i]));
      return {ort, config, encoder, decoder, srcIndex, subwords};
    })();
    loads.set(folder, loading);
    loading.catch(() => { loads.delete(folder); });  // a later click retries
    return loading;
  }

  // tokenizers.js and the model's tokenizer.json: text -> piece ids -> text,
  // as transformer_lib.translation.subwords.SubwordVocab.
  async function loadSubwords(base, dir) {
    const [module, response] = await Promise.all([
      import(base + "tokenizers/tokenizers.min.mjs"), fetch(dir + "tokenizer.json")]);
    if (!response.ok) throw new Error("tokenizer.json: HTTP " + response.status);
    const tokenizer = new module.Tokenizer(await response.json(), {});
    return {
      encode: text => tokenizer.encode(text, {add_special_tokens: false}).ids,
      // SubwordVocab.detokenize: special tokens dropped, the leading space too;
      // no "clean-up" (it would drop the space French puts before ? and !)
      text: ids => tokenizer.decode(ids, {skip_special_tokens: true,
                                          clean_up_tokenization_spaces: false}).trim(),
      piece: id => tokenizer.decode([id], {skip_special_tokens: false,
                                           clean_up_tokenization_spaces: false}),
    };
  }

  function ids64(ort, values) {
    return new ort.Tensor("int64", BigInt64Array.from(values, BigInt),
                          [1, values.length]);
  }

  // The switches of tl.intervene, all on: every head, no hidden word, no
  // window.  gates[kind][block][head] is 1 (on) or 0 (off); hidden holds
  // the positions of hidden source words; window is k (encoder position i
  // sees positions j with |i - j| <= k) or null (no limit).
  function allOn(config) {
    const ones = n => Array.from({length: n},
                                 () => new Array(config.num_heads).fill(1));
    return {gates: {encoder_self: ones(config.num_enc_blocks),
                    decoder_self: ones(config.num_blocks),
                    cross: ones(config.num_blocks)},
            hidden: [], window: null};
  }

  // A sentence -> its tokens (words, or subword pieces' text) and their ids.
  function sourceOf(model, sentence) {
    const {config, srcIndex, subwords} = model;
    if (subwords) {
      const ids = subwords.encode(sentence);
      return {source: ids.map(subwords.piece), ids};
    }
    const source = tokenize(preprocess(sentence));
    return {source, ids: source.map(t => srcIndex.has(t) ? srcIndex.get(t)
                                                         : config.unk_id)};
  }

  async function translate(model, sentence, settings) {
    const {ort, config, encoder, decoder, subwords} = model;
    settings = settings || allOn(config);
    const {source, ids: srcIds} = sourceOf(model, sentence);
    if (source.length === 0) return {source, empty: true};
    srcIds.push(config.eos_id);
    const S = srcIds.length;
    const L = config.num_blocks, H = config.num_heads;
    const lens = new ort.Tensor("int64", BigInt64Array.from([BigInt(S)]), [1]);
    // the switches as the graphs' inputs; a window as long as the source
    // limits nothing; <eos> (the last position) is never hidden
    const gate = rows => new ort.Tensor("float32", Float32Array.from(rows.flat()),
                                        [rows.length, H]);
    const mask = new Uint8Array(S);
    for (const i of settings.hidden) if (i < S - 1) mask[i] = 1;
    const hidden = new ort.Tensor("bool", mask, [1, S]);
    const k = settings.window === null ? S : Math.min(settings.window, S);
    const span = new ort.Tensor("int64", BigInt64Array.from([BigInt(k)]), []);
    const {memory} = await encoder.run({src: ids64(ort, srcIds),
                                        src_valid_len: lens,
                                        encoder_gate: gate(settings.gates.encoder_self),
                                        hidden, window: span});
    let steps = 2 * S + 5;
    if (config.max_len) steps = Math.min(steps, config.max_len - 1);
    const outputs = [];
    const cross = [];  // [step][block][head][source position]
    for (let t = 0; t < steps; t++) {
      const tgt = ids64(ort, [config.bos_id, ...outputs]);
      const result = await decoder.run({tgt, memory, src_valid_len: lens,
                                        decoder_gate: gate(settings.gates.decoder_self),
                                        cross_gate: gate(settings.gates.cross),
                                        hidden});
      const logits = result.logits.data;
      // greedy_decode's choice: the largest logit, never <pad> or <bos>
      let best = -1;
      for (let v = 0; v < logits.length; v++) {
        if (v === config.pad_id || v === config.bos_id) continue;
        if (best < 0 || logits[v] > logits[best]) best = v;
      }
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
    const label = subwords ? subwords.piece : i => config.tgt_tokens[i];
    const outTokens = outputs.map(label);
    const kept = [];
    for (const i of outputs) {  // Vocab.decode
      if (i === config.eos_id) break;
      if (i !== config.pad_id && i !== config.bos_id) kept.push(i);
    }
    const text = subwords ? subwords.text(kept) : kept.map(label).join(" ");
    return {source, srcIds: srcIds.slice(0, -1),
            unknown: source.filter((t, i) => srcIds[i] === config.unk_id),
            ids: outputs, tokens: outTokens, text, cross};
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

  const KIND_TITLES = {encoder_self: "encoder self-attention",
                       decoder_self: "decoder self-attention",
                       cross: "cross-attention"};
  const MAX_WINDOW = 5;

  function el(name, attrs, parent, text) {
    const node = document.createElement(name);
    for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
    if (text !== undefined) node.textContent = text;
    if (parent) parent.appendChild(node);
    return node;
  }

  // The switch panel: a grid of heads per kind (a row per block), "all on",
  // "keep the top k" (with a ranking, most important first), the encoder's
  // window, and the source words, which a click hides.  change() is called
  // after every change of the settings.
  function switchPanel(panel, config, ranking, change) {
    let settings = allOn(config);
    const heads = [];   // [kind, block, head, button]
    panel.innerHTML = "";
    const grids = el("div", {class: "tl-tr-grids"}, panel);
    for (const [kind, title] of Object.entries(KIND_TITLES)) {
      const box = el("fieldset", {class: "tl-tr-grid"}, grids);
      el("legend", {}, box, title);
      settings.gates[kind].forEach((row, block) => {
        const line = el("div", {class: "tl-tr-block"}, box);
        el("span", {class: "tl-tr-label"}, line, `block ${block + 1}`);
        row.forEach((_, head) => {
          const b = el("button", {type: "button", class: "tl-tr-head",
                                  "aria-pressed": "true",
                                  "aria-label": `${title}, block ${block + 1}, head ${head + 1}`,
                                  "data-kind": kind, "data-block": block,
                                  "data-head": head}, line, String(head + 1));
          b.addEventListener("click", () => {
            const g = settings.gates[kind][block];
            g[head] = 1 - g[head];
            show();
            change();
          });
          heads.push([kind, block, head, b]);
        });
      });
    }
    const row = el("div", {class: "tl-tr-row"}, panel);
    const allButton = el("button", {type: "button", class: "tl-tr-all"}, row, "all on");
    allButton.addEventListener("click", () => {
      settings = {...allOn(config), hidden: settings.hidden, window: settings.window};
      if (top) top.value = top.max;
      show();
      change();
    });
    let top = null, topLabel = null;
    if (ranking && ranking.length) {
      const label = el("label", {class: "tl-tr-top"}, row);
      topLabel = el("span", {}, label);
      top = el("input", {type: "range", min: 0, max: ranking.length,
                         value: ranking.length, "aria-label": "heads kept, most important first"},
               label);
      top.addEventListener("input", () => {
        const kept = +top.value;
        const gates = allOn(config).gates;
        ranking.slice(kept).forEach(([kind, block, head]) => { gates[kind][block][head] = 0; });
        settings.gates = gates;
        show();
        change();
      });
    }
    const windowLabel = el("label", {class: "tl-tr-window"}, row, "encoder window ");
    const windowSelect = el("select", {"aria-label": "encoder window"}, windowLabel);
    el("option", {value: "all"}, windowSelect, "all words");
    for (let k = 0; k <= MAX_WINDOW; k++) el("option", {value: k}, windowSelect, `±${k}`);
    windowSelect.addEventListener("change", () => {
      settings.window = windowSelect.value === "all" ? null : +windowSelect.value;
      change();
    });
    const words = el("div", {class: "tl-tr-words", role: "group",
                             "aria-label": "source words: click to hide"}, panel);

    const gateOf = ([kind, block, head]) => settings.gates[kind][block][head];

    function show() {
      let on = 0;
      for (const [kind, block, head, b] of heads) {
        const value = settings.gates[kind][block][head];
        on += value;
        b.setAttribute("aria-pressed", value ? "true" : "false");
      }
      if (top) {
        // the slider follows the heads when those on are the ranking's first ones
        let first = 0;
        while (first < ranking.length && gateOf(ranking[first])) first++;
        if (first === on) top.value = first;
        topLabel.textContent = first === on ? `keep the top ${first} `
          : "keep the top k (set by hand now) ";
      }
      allButton.textContent = `all on (${on} of ${heads.length} on)`;
    }
    show();

    return {
      get settings() { return settings; },
      set(next) {  // for tests: the same settings a reader could click
        settings = next;
        windowSelect.value = next.window === null ? "all" : String(next.window);
        show();
      },
      words(source) {  // the source words of the last translation
        words.innerHTML = "";
        el("span", {class: "tl-tr-label"}, words, "hide a word:");
        source.forEach((token, i) => {
          const b = el("button", {type: "button", class: "tl-tr-word",
                                  "aria-pressed": settings.hidden.includes(i) ? "true" : "false",
                                  "data-position": i}, words, token);
          b.addEventListener("click", () => {
            settings.hidden = settings.hidden.includes(i)
              ? settings.hidden.filter(j => j !== i) : [...settings.hidden, i].sort((a, b) => a - b);
            b.setAttribute("aria-pressed", settings.hidden.includes(i) ? "true" : "false");
            change();
          });
        });
      },
    };
  }

  window.tlTranslator = function (root, fallbackBase, options) {
    options = options || {};
    const base = window.tlOnnx.siteRoot(fallbackBase);
    const folder = options.model || "translator";
    const input = root.querySelector(".tl-tr-input");
    const button = root.querySelector(".tl-tr-button");
    const status = root.querySelector(".tl-tr-status");
    const output = root.querySelector(".tl-tr-output");
    const view = root.querySelector(".tl-tr-view");
    const panelBox = root.querySelector(".tl-tr-switches");
    let panel = null, running = false, again = false, sentence = null;
    root.tlPreprocess = preprocess;  // for the tests
    root.tlTokens = text => tokenize(preprocess(text));
    async function run() {
      // one translation at a time: a change during one asks for another
      if (running) { again = true; return; }
      running = true;
      button.disabled = true;
      const started = performance.now();
      try {
        if (!input.value.trim() || !tokenize(preprocess(input.value)).length) {
          status.textContent = "Type an English sentence first.";
          return;
        }
        status.textContent = loads.has(folder) ? "Translating…" :
          "Loading the model and ONNX Runtime Web (once)…";
        const model = await load(base, folder);
        root.tlModel = model;  // for the tests: the page's tokenizer
        if (panelBox && !panel) {
          panel = switchPanel(panelBox, model.config, options.ranking, run);
          root.tlSwitches = panel;
        }
        if (panel && input.value !== sentence) panel.settings.hidden = [];  // a new sentence
        sentence = input.value;
        const settings = panel ? panel.settings : null;
        root.tlSettings = settings && JSON.parse(JSON.stringify(settings));
        status.textContent = "Translating…";
        const result = await translate(model, input.value, settings);
        result.ms = performance.now() - started;
        root.tlResult = result;
        output.textContent = result.text || "(the empty sentence)";
        status.textContent = (result.unknown.length
          ? "Not in the vocabulary, read as <unk>: " + result.unknown.join(", ") + ". "
          : "") + `${result.ids.length} decoding steps in ${Math.round(result.ms)} ms.`;
        if (panel) panel.words(result.source);
        view.innerHTML = "";
        window.tlAttentionView(view, viewData(result));
      } catch (err) {
        root.tlError = String(err && err.message || err);
        status.textContent = "The translator could not run here: " + root.tlError +
          ". It needs the built book's files (ort/ and " + folder + "/ at its root); " +
          "in a notebook, translate with transformer_lib.translation.translate.";
      } finally {
        button.disabled = false;
        running = false;
        root.tlDoneAt = performance.now();  // for the tests' latency
        root.tlDone = (root.tlDone || 0) + 1;
        if (again) { again = false; run(); }
      }
    }
    root.tlRun = run;                // for the tests: translate now
    // for the tests: the page's ids of many sentences at once (loads the model)
    root.tlEncode = async texts => {
      const model = await load(base, folder);
      return texts.map(t => sourceOf(model, t).ids);
    };
    root.tlRanking = options.ranking || null;
    button.addEventListener("click", run);
    input.addEventListener("keydown", e => { if (e.key === "Enter") run(); });
  };
})();
