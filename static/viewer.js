// The photo viewer: the battle's photo full size in a modal <dialog>, with zoom
// and pan by buttons, keys (+ - 0 and the arrows), the wheel, a drag, and two
// fingers on a touch screen. No library: a CSS transform on one <img>.
// Public API: window.GeoArenaViewer.open(src, alt, opener).
(function () {
  "use strict";

  const dialog = document.getElementById("photo-viewer");
  if (!dialog) return;
  const stage = document.getElementById("viewer-stage");
  const image = document.getElementById("viewer-image");
  const scaleOut = document.getElementById("viewer-scale");
  const MIN = 1; // 1 = the whole photo fits the stage
  const MAX = 8;
  const STEP = 1.25;
  const PAN = 60; // px per arrow key

  let scale = 1;
  let x = 0;
  let y = 0;
  let opener = null;
  const pointers = new Map(); // pointerId -> {x, y}
  let pinch = null; // {distance, scale} at the start of a two-finger gesture

  function open(src, alt, from) {
    opener = from || null;
    image.src = src;
    stage.setAttribute("aria-label", `${alt || "The photo"}, full size`);
    reset();
    if (typeof dialog.showModal === "function") dialog.showModal();
    else dialog.setAttribute("open", "");
    stage.focus();
  }

  function close() {
    if (typeof dialog.close === "function") dialog.close();
    else dialog.removeAttribute("open");
  }

  dialog.addEventListener("close", () => {
    pointers.clear();
    pinch = null;
    if (opener) opener.focus();
  });
  // a click on the backdrop (the dialog itself, outside its content) closes it
  dialog.addEventListener("click", (event) => {
    if (event.target === dialog) close();
  });
  document.getElementById("viewer-close").addEventListener("click", close);
  dialog.querySelectorAll("[data-zoom]").forEach((button) =>
    button.addEventListener("click", () => {
      const how = button.dataset.zoom;
      if (how === "in") zoomBy(STEP);
      else if (how === "out") zoomBy(1 / STEP);
      else reset();
    })
  );

  function reset() {
    scale = 1;
    x = 0;
    y = 0;
    apply();
  }

  // Zoom about a point of the stage (its centre by default), so what is under it stays put.
  function zoomBy(factor, at) {
    const next = Math.min(MAX, Math.max(MIN, scale * factor));
    const rect = stage.getBoundingClientRect();
    const cx = at ? at.x - rect.left - rect.width / 2 : 0;
    const cy = at ? at.y - rect.top - rect.height / 2 : 0;
    const ratio = next / scale;
    x = cx - (cx - x) * ratio;
    y = cy - (cy - y) * ratio;
    scale = next;
    apply();
  }

  function panBy(dx, dy) {
    x += dx;
    y += dy;
    apply();
  }

  // Keep the photo over the stage: no panning into empty space.
  function clamp() {
    const rect = stage.getBoundingClientRect();
    const width = image.offsetWidth * scale;
    const height = image.offsetHeight * scale;
    const limitX = Math.max(0, (width - rect.width) / 2);
    const limitY = Math.max(0, (height - rect.height) / 2);
    x = Math.min(limitX, Math.max(-limitX, x));
    y = Math.min(limitY, Math.max(-limitY, y));
  }

  function apply() {
    clamp();
    image.style.transform = `translate(${x}px, ${y}px) scale(${scale})`;
    stage.classList.toggle("is-zoomed", scale > 1);
    scaleOut.textContent = `${Math.round(scale * 100)}%`;
    dialog.dataset.scale = scale.toFixed(3);
    dialog.dataset.pan = `${Math.round(x)},${Math.round(y)}`;
  }

  dialog.addEventListener("keydown", (event) => {
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    const keys = {
      "+": () => zoomBy(STEP),
      "=": () => zoomBy(STEP),
      "-": () => zoomBy(1 / STEP),
      _: () => zoomBy(1 / STEP),
      0: reset,
      ArrowLeft: () => panBy(PAN, 0),
      ArrowRight: () => panBy(-PAN, 0),
      ArrowUp: () => panBy(0, PAN),
      ArrowDown: () => panBy(0, -PAN),
    };
    const action = keys[event.key];
    if (!action) return; // Esc is the dialog's own; Tab moves between its buttons
    event.preventDefault();
    event.stopPropagation(); // not a vote key for the page behind
    action();
  });

  stage.addEventListener(
    "wheel",
    (event) => {
      event.preventDefault();
      zoomBy(event.deltaY < 0 ? STEP : 1 / STEP, { x: event.clientX, y: event.clientY });
    },
    { passive: false }
  );

  // One pointer drags; two pinch (touch-action: none on the stage hands us the gestures).
  stage.addEventListener("pointerdown", (event) => {
    stage.setPointerCapture(event.pointerId);
    pointers.set(event.pointerId, { x: event.clientX, y: event.clientY });
    if (pointers.size === 2) pinch = { distance: spread(), scale };
  });
  stage.addEventListener("pointermove", (event) => {
    const last = pointers.get(event.pointerId);
    if (!last) return;
    const now = { x: event.clientX, y: event.clientY };
    pointers.set(event.pointerId, now);
    if (pointers.size === 1) {
      panBy(now.x - last.x, now.y - last.y);
    } else if (pinch && pointers.size === 2 && pinch.distance > 0) {
      zoomBy((pinch.scale * spread()) / pinch.distance / scale, middle());
    }
  });
  const lift = (event) => {
    pointers.delete(event.pointerId);
    if (pointers.size < 2) pinch = null;
  };
  stage.addEventListener("pointerup", lift);
  stage.addEventListener("pointercancel", lift);
  stage.addEventListener("dblclick", (event) =>
    scale > 1 ? reset() : zoomBy(STEP * STEP, { x: event.clientX, y: event.clientY })
  );

  function spread() {
    const [a, b] = Array.from(pointers.values());
    return Math.hypot(a.x - b.x, a.y - b.y);
  }

  function middle() {
    const [a, b] = Array.from(pointers.values());
    return { x: (a.x + b.x) / 2, y: (a.y + b.y) / 2 };
  }

  window.GeoArenaViewer = { open, close };
})();
