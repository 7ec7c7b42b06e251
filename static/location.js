// The upload form's opt-in location (issue 14): a consent box, a pin on the
// server-drawn world map (x = longitude, y = -latitude in the SVG's own
// units), or a typed place. Vanilla JS, no map library, no tiles.
(function () {
  "use strict";

  const consent = document.getElementById("share-location");
  const extra = document.getElementById("location-extra");
  const map = document.getElementById("pin-map");
  const readout = document.getElementById("pin-readout");
  const clear = document.getElementById("pin-clear");
  const location = document.getElementById("location");
  const place = document.getElementById("place");
  if (!consent || !extra || !map) return;

  const SVG = "http://www.w3.org/2000/svg";
  let pin = null;

  consent.addEventListener("change", () => { extra.hidden = !consent.checked; });

  map.addEventListener("click", (event) => {
    const matrix = map.getScreenCTM();
    if (!matrix) return;
    const point = new DOMPoint(event.clientX, event.clientY).matrixTransform(matrix.inverse());
    const lon = Math.max(-180, Math.min(180, point.x));
    const lat = Math.max(-90, Math.min(90, -point.y));
    setPin(lat, lon);
  });

  clear.addEventListener("click", () => {
    if (pin) pin.remove();
    pin = null;
    location.value = "";
    readout.textContent = "No pin placed.";
    clear.hidden = true;
  });

  function setPin(lat, lon) {
    if (!pin) {
      pin = document.createElementNS(SVG, "circle");
      pin.setAttribute("r", "2.2");
      pin.setAttribute("class", "pin-map__pin");
      pin.setAttribute("vector-effect", "non-scaling-stroke");
      map.appendChild(pin);
    }
    pin.setAttribute("cx", lon.toFixed(3));
    pin.setAttribute("cy", (-lat).toFixed(3));
    location.value = lat.toFixed(5) + "," + lon.toFixed(5);
    readout.textContent = "Pin placed at " + Math.abs(lat).toFixed(2) + "° " + (lat >= 0 ? "N" : "S") + ", " +
      Math.abs(lon).toFixed(2) + "° " + (lon >= 0 ? "E" : "W") + ".";
    clear.hidden = false;
  }

  // arena.js calls this while it builds the upload: nothing is sent without consent.
  window.arenaLocation = {
    addTo(body) {
      if (!consent.checked) return;
      body.append("share_location", "true");
      if (location.value) body.append("location", location.value);
      const typed = place.value.trim();
      if (typed) body.append("place", typed);
    },
  };
})();
