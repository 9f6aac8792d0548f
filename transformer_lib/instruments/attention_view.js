// The attention viewer of transformer_lib.instruments.viz: a head view
// (query tokens left, key tokens right, one line per head and pair, its
// opacity the weight) and a matrix view of one head, kept in step.  No
// library, no CDN, no kernel: called as tlAttentionView(root, data) by the
// output.
(function () {
  "use strict";
  if (window.tlAttentionView) return;
  const SVG = "http://www.w3.org/2000/svg";
  const COLOURS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                   "#8c564b", "#e377c2", "#17becf", "#bcbd22", "#7f7f7f"];
  const ROW = 22, TOKEN_W = 110, GAP = 160;

  function el(name, attrs, parent, ns) {
    const node = ns ? document.createElementNS(SVG, name)
                    : document.createElement(name);
    for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
    if (parent) parent.appendChild(node);
    return node;
  }

  function select(label, options, parent, onChange) {
    const wrap = el("label", {class: "tl-av-control"}, parent);
    wrap.appendChild(document.createTextNode(label + " "));
    const s = el("select", {"aria-label": label}, wrap);
    options.forEach(([value, text]) => {
      const o = el("option", {value: value}, s);
      o.textContent = text;
    });
    s.addEventListener("change", () => onChange(s.value));
    return s;
  }

  window.tlAttentionView = function (root, data) {
    const scale = data.scale;
    const state = {example: 0, kind: null, layer: 0, heads: null,
                   matrixHead: 0, focus: null};
    root.classList.add("tl-av");
    const controls = el("div", {class: "tl-av-controls"}, root);
    const headBox = el("div", {class: "tl-av-heads", role: "group",
                               "aria-label": "heads"}, root);
    const views = el("div", {class: "tl-av-views"}, root);
    const headSvg = el("svg", {class: "tl-av-head-view", role: "img"},
                       views, true);
    const matrixBox = el("div", {class: "tl-av-matrix"}, views);
    const readout = el("div", {class: "tl-av-readout", "aria-live": "polite"},
                       root);

    const example = () => data.examples[state.example];
    const kind = () => example().kinds[state.kind];
    const weights = () => kind().layers[state.layer];   // [head][q][k]

    function rebuildControls() {
      controls.innerHTML = "";
      if (data.examples.length > 1) {
        const s = select("sentence", data.examples.map((e, i) => [i, e.label]),
                         controls, v => { state.example = +v; resetKind(); });
        s.value = state.example;
        s.classList.add("tl-av-sentence");
      }
      const kinds = Object.keys(example().kinds);
      const k = select("attention", kinds.map(n => [n, example().kinds[n].title]),
                       controls, v => { state.kind = v; resetLayer(); });
      k.value = state.kind;
      k.classList.add("tl-av-kind");
      const layers = kind().layers.map((_, i) => [i, "layer " + (i + 1)]);
      const l = select("layer", layers, controls,
                       v => { state.layer = +v; draw(); });
      l.value = state.layer;
      l.classList.add("tl-av-layer");
      const heads = weights().map((_, i) => [i, "head " + (i + 1)]);
      const m = select("matrix of", heads, controls,
                       v => { state.matrixHead = +v; draw(); });
      m.value = state.matrixHead;
      m.classList.add("tl-av-matrix-head");
      headBox.innerHTML = "";
      weights().forEach((_, h) => {
        const lab = el("label", {class: "tl-av-head",
                                 style: "color:" + COLOURS[h % 10]}, headBox);
        const box = el("input", {type: "checkbox", "data-head": h}, lab);
        box.checked = state.heads[h];
        box.addEventListener("change", () => { state.heads[h] = box.checked;
                                               draw(); });
        lab.appendChild(document.createTextNode(" head " + (h + 1)));
      });
    }

    function resetLayer() {
      state.layer = Math.min(state.layer, kind().layers.length - 1);
      state.heads = weights().map(() => true);
      state.matrixHead = Math.min(state.matrixHead, weights().length - 1);
      state.focus = null;
      rebuildControls();
      draw();
    }

    function resetKind() {
      if (!(state.kind in example().kinds)) state.kind = Object.keys(example().kinds)[0];
      resetLayer();
    }

    function setFocus(focus) {
      // Only visibility changes: the elements under the pointer stay.
      state.focus = focus;
      const f = focus;
      headSvg.setAttribute("data-focus", f ? f.side + ":" + f.index : "");
      headSvg.querySelectorAll("line").forEach(line => {
        const i = +line.getAttribute(f && f.side === "key" ? "data-key" : "data-query");
        line.style.display = !f || i === f.index ? "" : "none";
      });
      headSvg.querySelectorAll(".tl-av-token").forEach(g => {
        const on = f && g.getAttribute("data-side") === f.side &&
                   +g.getAttribute("data-index") === f.index;
        g.classList.toggle("tl-av-focused", !!on);
      });
      matrixBox.querySelectorAll("rect").forEach(r => {
        const on = f && +r.getAttribute(f.side === "key" ? "data-key" : "data-query") === f.index;
        r.setAttribute("stroke-opacity", on ? 0.9 : 0.15);
      });
      if (f) {
        const k = kind(), e = example();
        const token = e[f.side === "query" ? k.queries : k.keys][f.index];
        readout.textContent = f.side === "query" ? "where “" + token + "” looks"
                                                 : "what looks at “" + token + "”";
      } else {
        readout.textContent = "";
      }
    }

    function tokenColumn(svg, tokens, x, anchor, side) {
      tokens.forEach((t, i) => {
        const g = el("g", {class: "tl-av-token", tabindex: 0, role: "button",
                           "data-side": side, "data-index": i,
                           "aria-label": side + " token " + (i + 1) + ": " + t},
                     svg, true);
        const text = el("text", {x: x, y: 16 + i * ROW, "text-anchor": anchor,
                                 fill: "currentColor"}, g, true);
        text.textContent = t;
        const on = () => setFocus({side: side, index: i});
        const off = () => setFocus(null);
        g.addEventListener("mouseenter", on);
        g.addEventListener("mouseleave", off);
        g.addEventListener("focus", on);
        g.addEventListener("blur", off);
        g.addEventListener("click", on);
      });
    }

    function drawHeadView() {
      const k = kind(), e = example();
      const queries = e[k.queries], keys = e[k.keys], w = weights();
      const height = 10 + ROW * Math.max(queries.length, keys.length);
      const width = 2 * TOKEN_W + GAP;
      headSvg.innerHTML = "";
      headSvg.setAttribute("viewBox", "0 0 " + width + " " + height);
      headSvg.setAttribute("width", width);
      headSvg.setAttribute("height", height);
      headSvg.setAttribute("aria-label", k.title + ", layer " + (state.layer + 1));
      const lines = el("g", {class: "tl-av-lines"}, headSvg, true);
      w.forEach((rows, h) => {
        if (!state.heads[h]) return;
        // each head a little apart, so that equal lines of two heads both show
        const dy = (h - (w.length - 1) / 2) * 1.5;
        rows.forEach((row, q) => row.forEach((v, j) => {
          if (v === 0) return;
          el("line", {x1: TOKEN_W + 4, y1: 12 + q * ROW + dy,
                      x2: TOKEN_W + GAP - 4, y2: 12 + j * ROW + dy,
                      stroke: COLOURS[h % 10], "stroke-width": 2,
                      "stroke-opacity": (v / scale).toFixed(3),
                      "data-head": h, "data-query": q, "data-key": j}, lines, true);
        }));
      });
      tokenColumn(headSvg, queries, TOKEN_W, "end", "query");
      tokenColumn(headSvg, keys, TOKEN_W + GAP, "start", "key");
    }

    function drawMatrix() {
      const k = kind(), e = example();
      const queries = e[k.queries], keys = e[k.keys];
      const m = weights()[state.matrixHead];
      const cell = 20, left = TOKEN_W, top = TOKEN_W;
      matrixBox.innerHTML = "";
      const svg = el("svg", {class: "tl-av-matrix-view",
                             width: left + cell * keys.length + 4,
                             height: top + cell * queries.length + 4,
                             role: "img", "data-head": state.matrixHead,
                             "aria-label": "weights of head " + (state.matrixHead + 1)},
                     matrixBox, true);
      const colour = COLOURS[state.matrixHead % 10];
      m.forEach((row, q) => row.forEach((v, j) => {
        const r = el("rect", {x: left + j * cell, y: top + q * cell,
                              width: cell - 1, height: cell - 1, fill: colour,
                              "fill-opacity": (v / scale).toFixed(3),
                              stroke: "currentColor", "stroke-opacity": 0.15,
                              "data-query": q, "data-key": j, "data-value": v / scale},
                     svg, true);
        const title = el("title", {}, r, true);
        title.textContent = queries[q] + " → " + keys[j] + ": " + (v / scale).toFixed(3);
        r.addEventListener("mouseenter", () => {
          readout.textContent = "head " + (state.matrixHead + 1) + ", " + queries[q] +
            " → " + keys[j] + ": " + (v / scale).toFixed(3);
        });
      }));
      queries.forEach((t, q) => {
        const text = el("text", {x: left - 4, y: top + q * cell + 14,
                                 "text-anchor": "end", fill: "currentColor"}, svg, true);
        text.textContent = t;
      });
      keys.forEach((t, j) => {
        const x = left + j * cell + 14, y = top - 4;
        const text = el("text", {x: x, y: y, transform: "rotate(-60 " + x + " " + y + ")",
                                 fill: "currentColor"}, svg, true);
        text.textContent = t;
      });
    }

    function draw() {
      drawHeadView();
      drawMatrix();
      setFocus(state.focus);
    }

    state.kind = Object.keys(example().kinds)[0];
    resetLayer();
  };
})();
