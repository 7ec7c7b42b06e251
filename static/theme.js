// The header's light/dark toggle. Loaded in <head> (an external file: the CSP
// allows no inline script) so a remembered choice applies before the first
// paint; without a choice the visitor's system setting decides.
(function () {
  "use strict";
  var KEY = "geoarena-theme";
  var root = document.documentElement;
  function stored() {
    try { return localStorage.getItem(KEY); } catch (e) { return null; }  // storage can be off
  }
  var choice = stored();
  if (choice === "light" || choice === "dark") root.dataset.theme = choice;

  function dark() {
    if (root.dataset.theme) return root.dataset.theme === "dark";
    return window.matchMedia && window.matchMedia("(prefers-color-scheme: dark)").matches;
  }

  document.addEventListener("DOMContentLoaded", function () {
    var button = document.getElementById("theme-toggle");
    if (!button) return;
    function show() { button.setAttribute("aria-pressed", String(dark())); }
    button.hidden = false;
    show();
    button.addEventListener("click", function () {
      root.dataset.theme = dark() ? "light" : "dark";
      try { localStorage.setItem(KEY, root.dataset.theme); } catch (e) { /* kept for this page only */ }
      show();
      document.dispatchEvent(new CustomEvent("geoarena:theme", { detail: root.dataset.theme }));
    });
    if (window.matchMedia) {
      window.matchMedia("(prefers-color-scheme: dark)").addEventListener("change", show);
    }
  });
})();
