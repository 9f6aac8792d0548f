// What the book's in-page models share (translator.js, language_model.js):
// the site's root, where the build puts ort/ and the models' folders, and
// ONNX Runtime Web, loaded once per page from ort/ on the first click.
(function () {
  "use strict";
  if (window.tlOnnx) return;

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

  let runtime = null;   // one load per page, shared by every box
  function loadRuntime(base, who) {
    if (runtime) return runtime;
    runtime = (async () => {
      if (typeof WebAssembly !== "object") {
        throw new Error("this browser has no WebAssembly, which the " +
                        who + " needs");
      }
      if (!window.ort) await loadScript(base + "ort/ort.wasm.min.js");
      const ort = window.ort;
      ort.env.wasm.wasmPaths = base + "ort/";
      ort.env.wasm.numThreads = 1;  // no cross-origin isolation needed
      return ort;
    })();
    runtime.catch(() => { runtime = null; });  // a later click retries
    return runtime;
  }

  window.tlOnnx = {siteRoot, loadScript, loadRuntime};
})();
