/* GATE trajectory: draws a contender's tool steps as a collapsible timeline
   in its answer pane. Everything in a step comes from a model or a web page,
   so it is only ever inserted as text (textContent), never as HTML; image
   links are built from sha256 digests checked here.

   Public API: window.GeoArenaTrajectory.renderStep(containerElement, step, options),
   where `step` is the data of an SSE `step` event:
   {side, tool, args, observation, thought, image_refs, ok}, and `options.open`
   starts the timeline open on wide screens (`[battles] trajectory = "open"`);
   otherwise it starts folded behind its one-line summary. */
(function () {
  "use strict";

  var SHA256 = /^[0-9a-f]{64}$/;
  var ARGS_PREVIEW = 70;
  var ARGS_FULL = 4000;

  function renderStep(container, step, options) {
    if (!container || !step) return;
    var timeline = timelineOf(container, Boolean(options && options.open));
    var item = el("li", "gate-step" + (step.ok === false ? " gate-step--failed" : ""));
    var number = timeline.list.children.length + 1;

    var details = el("details", "gate-step__details");
    var summary = el("summary", "gate-step__summary");
    summary.appendChild(el("span", "gate-step__number", String(number)));
    summary.appendChild(el("code", "gate-step__tool", text(step.tool) || "tool"));
    summary.appendChild(el("span", "gate-step__args", clip(argsPreview(step.args), ARGS_PREVIEW)));
    summary.appendChild(el("span", "gate-step__status", step.ok === false ? "failed" : "ok"));
    details.appendChild(summary);

    if (text(step.thought)) {
      details.appendChild(field("Thought", el("p", "gate-step__thought", text(step.thought))));
    }
    details.appendChild(field("Arguments", el("pre", "gate-step__pre", clip(argsFull(step.args), ARGS_FULL))));
    details.appendChild(field(step.ok === false ? "Error" : "Observation",
                              el("pre", "gate-step__pre", text(step.observation) || "(empty)")));
    item.appendChild(details);

    // Produced images stay visible with the step closed: they are what a voter scans for.
    var refs = Array.isArray(step.image_refs) ? step.image_refs.filter(isSha) : [];
    if (refs.length) {
      var strip = el("div", "gate-step__images");
      refs.forEach(function (ref, i) {
        var link = el("a", "gate-step__thumb");
        link.href = "/images/" + ref;
        link.target = "_blank";
        link.rel = "noopener";
        var img = document.createElement("img");
        img.src = "/images/" + ref;
        img.loading = "lazy";
        img.decoding = "async";
        img.alt = "Image " + (i + 1) + " produced by " + (text(step.tool) || "a tool") + " in step " + number;
        link.appendChild(img);
        strip.appendChild(link);
      });
      item.appendChild(strip);
    }

    timeline.list.appendChild(item);
    timeline.count(number, timeline.list.querySelectorAll(".gate-step--failed").length);
  }

  function timelineOf(container, open) {
    var root = container.querySelector("details.gate-trajectory");
    if (!root) {
      root = el("details", "gate-trajectory");
      // Open beside the answer only when asked and on a wide screen; on a phone
      // the steps would push the answer far down.
      root.open = open && !(window.matchMedia && window.matchMedia("(max-width: 640px)").matches);
      root.appendChild(el("summary", "gate-trajectory__summary"));
      root.appendChild(el("ol", "gate-trajectory__steps"));
      container.appendChild(root);
    }
    var summary = root.querySelector(".gate-trajectory__summary");
    return {
      list: root.querySelector(".gate-trajectory__steps"),
      count: function (n, failed) {
        summary.textContent = "Tool use: " + n + " step" + (n === 1 ? "" : "s") +
          (failed ? " (" + failed + " failed)" : "");
      },
    };
  }

  function field(label, body) {
    var wrap = el("div", "gate-step__field");
    wrap.appendChild(el("div", "gate-step__label", label));
    wrap.appendChild(body);
    return wrap;
  }

  function argsPreview(args) {
    if (!args || typeof args !== "object") return text(args);
    return Object.keys(args).map(function (key) {
      var value = args[key];
      return key + "=" + (typeof value === "string" ? JSON.stringify(value) : safeJson(value));
    }).join(", ");
  }

  function argsFull(args) {
    if (!args || typeof args !== "object") return text(args);
    // indented objects, but short arrays of numbers or strings on one line
    var out = safeJson(args, 2).replace(/\[\s+([^\[\]{}]*?)\s+\]/g, function (_, inner) {
      return "[" + inner.replace(/\s*\n\s*/g, " ") + "]";
    });
    return out === "{}" ? "(none)" : out;
  }

  function safeJson(value, indent) {
    try { return JSON.stringify(value, null, indent) || ""; } catch (err) { return String(value); }
  }

  function isSha(ref) { return typeof ref === "string" && SHA256.test(ref); }

  function text(value) { return value === undefined || value === null ? "" : String(value); }

  function clip(value, limit) { return value.length > limit ? value.slice(0, limit - 1) + "…" : value; }

  function el(tag, className, content) {
    var node = document.createElement(tag);
    if (className) node.className = className;
    if (content !== undefined) node.textContent = content;
    return node;
  }

  // The page may not link the stylesheet yet; add it once.
  function ensureStylesheet() {
    if (document.querySelector('link[href$="/static/trajectory.css"]')) return;
    var link = document.createElement("link");
    link.rel = "stylesheet";
    link.href = "/static/trajectory.css";
    document.head.appendChild(link);
  }

  ensureStylesheet();
  window.GeoArenaTrajectory = { renderStep: renderStep };
})();
