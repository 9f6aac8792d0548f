// The in-browser sampler of transformer_lib.instruments.web: chapter 12's
// character language model, exported to ONNX by
// transformer_lib.instruments.export.export_language_model, run by ONNX
// Runtime Web on the reader's machine.  Nothing loads until the first
// click; then the runtime (onnx_page.js) and the model's folder
// (language_model/ at the site's root).  The sampling is the library's
// (transformer_lib.translation.sampling), step for step: the model reads
// <eos> + the prompt + what it wrote so far; the sampler turns the next
// character's logits into probabilities (float64), xorshift32 draws u in
// [0, 1) and the character whose slice of the cumulative probabilities, in
// id order, holds u is appended; until <eos> or max_len positions.
(function () {
  "use strict";
  if (window.tlLanguageModel) return;

  // Xorshift32: Marsaglia's shifts 13, 17, 5 on 32 bits, seeded as the
  // library seeds it (the state must not be 0).
  function xorshift32(seed) {
    let state = Number((BigInt(seed) * 0x9E3779B9n + 0x6D2B79F5n)
                       & 0xFFFFFFFFn) || 1;
    return function uniform() {
      let x = state;
      x ^= x << 13;
      x ^= x >>> 17;
      x ^= x << 5;
      state = x >>> 0;
      return state / 4294967296;
    };
  }

  // Greedy.probabilities: 1 at the largest logit (the lowest id of ties).
  function greedy(logits) {
    let best = 0;
    for (let v = 1; v < logits.length; v++) if (logits[v] > logits[best]) best = v;
    const p = new Float64Array(logits.length);
    p[best] = 1;
    return p;
  }

  // Sampler.probabilities: softmax(logits / temperature) in float64, then
  // the top_k most likely (null: all), then the fewest most likely whose
  // probabilities add up to top_p, renormalised; ties to the lower id.
  function sampled(logits, temperature, topK, topP) {
    const V = logits.length;
    const z = Array.from(logits, x => x / temperature);
    const m = Math.max(...z);
    let p = z.map(x => Math.exp(x - m));
    let total = p.reduce((a, b) => a + b, 0);
    p = p.map(x => x / total);
    const order = [...p.keys()].sort((a, b) => p[b] - p[a]);  // stable
    const keep = new Array(V).fill(true);
    if (topK !== null) order.slice(topK).forEach(i => { keep[i] = false; });
    if (topP < 1) {
      let cumulative = 0;
      for (const i of order) {   // the mass ahead of each, as the library
        cumulative += p[i];      // computes it: cumsum - p
        if (cumulative - p[i] >= topP) keep[i] = false;
      }
    }
    const kept = p.map((x, i) => keep[i] ? x : 0);
    total = kept.reduce((a, b) => a + b, 0);
    return Float64Array.from(kept, x => x / total);
  }

  // choose: the first id whose cumulative probability exceeds u times the
  // total (searchsorted, right side), as the library picks.
  function choose(p, u) {
    const cumulative = new Float64Array(p.length);
    let sum = 0;
    for (let i = 0; i < p.length; i++) { sum += p[i]; cumulative[i] = sum; }
    const target = u * cumulative[p.length - 1];
    for (let i = 0; i < p.length; i++) if (cumulative[i] > target) return i;
    return p.length - 1;
  }

  function probabilities(logits, settings) {
    if (settings.temperature === 0) return greedy(logits);
    return sampled(logits, settings.temperature, settings.topK, settings.topP);
  }

  const FOLDER = "language_model";   // at the site's root
  let loading = null;   // one load per page, shared by its boxes
  function load(base) {
    if (loading) return loading;
    loading = (async () => {
      const ort = await window.tlOnnx.loadRuntime(base, "language model");
      const dir = base + FOLDER + "/";
      const response = await fetch(dir + "language_model.json");
      if (!response.ok) {
        throw new Error("language_model.json: HTTP " + response.status);
      }
      const config = await response.json();
      const session = await ort.InferenceSession.create(
        dir + "next_token.onnx",
        {executionProviders: ["wasm"], graphOptimizationLevel: "all"});
      const index = new Map(config.tokens.map((t, i) => [t, i]));
      return {ort, config, session, index};
    })();
    loading.catch(() => { loading = null; });  // a later click retries
    return loading;
  }

  // CharacterText.encode: a code point at a time, <unk> for one the
  // vocabulary lacks.
  function encode(model, text) {
    return Array.from(text, c => model.index.has(c) ? model.index.get(c)
                                                    : model.config.unk_id);
  }

  // Vocab.decode: stop at <eos>, drop <pad> and <bos>.
  function decode(model, ids) {
    const {config} = model, out = [];
    for (const i of ids) {
      if (i === config.eos_id) break;
      if (i !== config.pad_id && i !== config.bos_id) out.push(config.tokens[i]);
    }
    return out.join("");
  }

  // A prompt that leaves the model no position to write in.
  class PromptTooLong extends Error {}

  // generate(model, [<eos>] + prompt, max_len - 1 - len(prompt), sampler,
  // seed=seed, stop_id=<eos>): the new ids.
  async function generate(model, prompt, settings) {
    const {ort, config, session} = model;
    const ids = [config.eos_id, ...encode(model, prompt)];
    const steps = config.max_len - ids.length;
    if (steps < 1) {
      throw new PromptTooLong(
        `the model has ${config.max_len} positions, for <eos>, the prompt ` +
        `and what it writes: at most ${config.max_len - 2} characters of ` +
        `prompt, and this one has ${ids.length - 1}`);
    }
    const uniform = xorshift32(settings.seed);
    const promptIds = ids.slice(1), written = [];
    for (let t = 0; t < steps; t++) {
      const input = new ort.Tensor("int64", BigInt64Array.from(ids, BigInt),
                                   [1, ids.length]);
      const {logits} = await session.run({ids: input});
      const token = choose(probabilities(logits.data, settings), uniform());
      ids.push(token);
      written.push(token);
      if (token === config.eos_id) break;
    }
    return {promptIds, ids: written, text: decode(model, written),
            ended: written[written.length - 1] === config.eos_id};
  }

  // The controls' values -> {settings}, or {error} where one is not a value
  // the library's Sampler and Xorshift32 accept (a seed beyond 2^53 would
  // not survive JavaScript's numbers).
  function readSettings(root) {
    const value = name => root.querySelector(".tl-lm-" + name).value.trim();
    const temperature = Number(value("temperature"));
    const k = value("top-k"), seed = value("seed");
    const topK = k === "" || Number(k) === 0 ? null : Number(k);
    if (!(temperature >= 0 && temperature <= 2)) {
      return {error: "The temperature must be a number from 0 (greedy) to 2."};
    }
    if (topK !== null && !(Number.isInteger(topK) && topK >= 1)) {
      return {error: "Top-k must be a whole number of 1 or more (empty or 0: all)."};
    }
    if (!(seed !== "" && Number.isSafeInteger(Number(seed)) && Number(seed) >= 0)) {
      return {error: "The seed must be a whole number from 0 to 2^53 - 1."};
    }
    return {settings: {temperature, topK, topP: 1, seed: Number(seed)}};
  }

  window.tlLanguageModel = function (root, fallbackBase) {
    const base = window.tlOnnx.siteRoot(fallbackBase);
    const button = root.querySelector(".tl-lm-button");
    const status = root.querySelector(".tl-lm-status");
    const output = root.querySelector(".tl-lm-output");
    const prompt = root.querySelector(".tl-lm-prompt");
    const temperature = root.querySelector(".tl-lm-temperature");
    const shown = root.querySelector(".tl-lm-temperature-value");
    const showTemperature = () => {
      shown.textContent = +temperature.value === 0 ? "0 (greedy)"
        : Number(temperature.value).toFixed(1);
    };
    temperature.addEventListener("input", showTemperature);
    showTemperature();
    let running = false;
    async function run() {
      if (running) return;
      running = true;
      button.disabled = true;
      root.tlError = null;
      try {
        const read = readSettings(root);
        if (read.error) {
          output.textContent = "";
          root.tlResult = null;
          status.textContent = read.error;
          return;
        }
        status.textContent = loading ? "Writing…" :
          "Loading the model and ONNX Runtime Web (once)…";
        const loadStart = performance.now();
        const model = await load(base);
        root.tlModel = model;
        status.textContent = "Writing…";
        const started = performance.now();
        const result = await generate(model, prompt.value, read.settings);
        result.settings = read.settings;
        result.ms = performance.now() - started;       // the sampling alone
        result.loadMs = started - loadStart;     // near 0 after the first
        root.tlResult = result;
        output.textContent = "";
        const given = document.createElement("span");
        given.className = "tl-lm-given";
        given.textContent = decode(model, result.promptIds);
        output.append(given, result.text);
        const characters = result.ids.length - (result.ended ? 1 : 0);
        status.textContent = `${characters} characters in ` +
          `${Math.round(result.ms)} ms` + (result.ended ? ", then <eos>."
          : `: the model's ${model.config.max_len} positions are full.`);
      } catch (err) {
        root.tlError = String(err && err.message || err);
        output.textContent = "";
        root.tlResult = null;
        status.textContent = err instanceof PromptTooLong
          ? "The prompt is too long: " + root.tlError + "."
          : "The language model could not run here: " + root.tlError +
            (typeof WebAssembly !== "object" ? "."
              : ". It needs the built book's files (ort/ and " + FOLDER +
                "/ at its root); in a notebook, sample with " +
                "transformer_lib.translation.generate.");
      } finally {
        button.disabled = false;
        running = false;
        root.tlDone = (root.tlDone || 0) + 1;
      }
    }
    button.addEventListener("click", run);
    prompt.addEventListener("keydown", e => { if (e.key === "Enter") run(); });
    // for the tests: many samples without the controls, and the sampling
    // arithmetic alone
    root.tlGenerate = async (text, settings) =>
      generate(await load(base), text, settings);
    root.tlSampling = {xorshift32, probabilities, choose};
  };
})();
