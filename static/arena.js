// The arena page: pick a photo, ask, stream two anonymous answers, vote, reveal.
// Vanilla JS, no build step. Only the server-sanitised `html` of done events is
// ever assigned to innerHTML; everything else goes through text nodes.
(function () {
  "use strict";

  const root = document.getElementById("arena");
  if (!root) return;

  const MAX_BYTES = Number(root.dataset.maxBytes);
  const MAX_MB = root.dataset.maxMb;
  const ACCEPTED = (root.dataset.accepted || "").split(",").filter(Boolean);
  const REDUCED_MOTION = window.matchMedia("(prefers-reduced-motion: reduce)").matches;
  const ACCEPTED_LABEL = root.dataset.acceptedLabel || "JPEG, PNG or WebP";
  // `[battles] trajectory`: "collapsed" (one line on both sides), "after_vote" (hidden until the vote) or "open"
  const TRAJECTORY = root.dataset.trajectory || "collapsed";

  const form = document.getElementById("battle-form");
  const input = document.getElementById("photo-input");
  const dropzone = document.getElementById("dropzone");
  const dropzoneTitle = document.getElementById("dropzone-title");
  const preview = document.getElementById("photo-preview");
  const prompt = document.getElementById("prompt");
  const formError = document.getElementById("form-error");
  const submit = document.getElementById("submit");
  const battleSection = document.getElementById("battle");
  const battleHeading = document.getElementById("battle-heading");
  const questionPhoto = document.getElementById("question-photo");
  const questionPrompt = document.getElementById("question-prompt");
  const verdictNote = document.getElementById("verdict-note");
  const voteButtons = Array.from(document.querySelectorAll("[data-choice]"));
  const voteButtonsGroup = document.getElementById("vote-buttons");
  const voteKeys = document.getElementById("vote-keys");
  const newBattleButton = document.getElementById("new-battle");
  const photoOpen = document.getElementById("photo-open");
  const viewer = document.getElementById("photo-viewer");
  const samePhotoButton = document.getElementById("same-photo");

  const CHOICE_WORDS = {
    a: "Model A is better",
    b: "Model B is better",
    tie: "It's a tie",
    both_bad: "Both are bad",
  };
  const CONFLICT_WORDS = {
    already_voted: "This battle already has a vote; each battle takes one.",
    not_ready: "Both answers must finish before you can vote.",
    side_failed: "One of the models failed, so this battle cannot be voted on.",
  };

  let photo = null; // the File chosen for the next battle
  let samePhoto = null; // or {battleId, url}: the photo of the last battle, reused ("same photo, new pair")
  let photoUrl = null; // its object URL, for the preview
  let battle = null; // {id, source, sides: {a, b}, failed, ready, startedAt}

  // ---- photo: picker, drag-and-drop, paste ----------------------------------

  input.addEventListener("change", () => {
    if (input.files && input.files[0]) choosePhoto(input.files[0]);
  });

  ["dragenter", "dragover"].forEach((type) =>
    dropzone.addEventListener(type, (event) => {
      event.preventDefault();
      dropzone.classList.add("is-dragging");
    })
  );
  ["dragleave", "dragend"].forEach((type) =>
    dropzone.addEventListener(type, () => dropzone.classList.remove("is-dragging"))
  );
  dropzone.addEventListener("drop", (event) => {
    event.preventDefault();
    dropzone.classList.remove("is-dragging");
    const file = event.dataTransfer && event.dataTransfer.files[0];
    if (file) choosePhoto(file);
  });
  // A photo dropped next to the zone should not navigate away from the page.
  window.addEventListener("dragover", (event) => event.preventDefault());
  window.addEventListener("drop", (event) => event.preventDefault());

  document.addEventListener("paste", (event) => {
    if (!battleSection.hidden) return;
    const items = event.clipboardData ? Array.from(event.clipboardData.files) : [];
    const image = items.find((file) => file.type.startsWith("image/"));
    if (image) choosePhoto(image);
  });

  function choosePhoto(file) {
    const problem = checkPhoto(file);
    if (problem) {
      showFormError(problem);
      return;
    }
    hideFormError();
    photo = file;
    samePhoto = null;
    if (photoUrl) URL.revokeObjectURL(photoUrl);
    photoUrl = URL.createObjectURL(file);
    preview.src = photoUrl;
    preview.hidden = false;
    dropzone.classList.add("has-photo");
    dropzoneTitle.textContent = file.name ? `${file.name} (${formatSize(file.size)})` : "Your photo";
  }

  // The browser may not decode every photo the server does (HEIC, say):
  // drop the broken preview and leave the verdict to the server.
  questionPhoto.addEventListener("error", () => (photoOpen.hidden = true));
  preview.addEventListener("error", () => {
    if (!photo) return;
    preview.hidden = true;
    preview.removeAttribute("src");
    dropzoneTitle.textContent = `${photo.name || "Your photo"} (${formatSize(photo.size)}, no preview)`;
  });

  // Mirrors the server's checks so a person learns early; the server decides.
  function checkPhoto(file) {
    if (file.size === 0) return "This file is empty. Choose a photo.";
    // Some browsers give no type (e.g. HEIC); let the server judge those by content.
    if (file.type && ACCEPTED.length && !ACCEPTED.includes(file.type)) {
      return `“${file.name}” is not a photo we can read (${file.type}). Use a ${ACCEPTED_LABEL} image.`;
    }
    if (MAX_BYTES && file.size > MAX_BYTES) {
      return `This photo is ${formatSize(file.size)}; the limit is ${MAX_MB} MB.`;
    }
    return null;
  }

  function formatSize(bytes) {
    if (bytes < 1024 * 1024) return `${Math.max(1, Math.round(bytes / 1024))} KB`;
    return `${(bytes / (1024 * 1024)).toFixed(1)} MB`;
  }

  // ---- the photo, full size (viewer.js) -------------------------------------

  photoOpen.addEventListener("click", () => {
    const src = questionPhoto.getAttribute("src");
    if (!src || !window.GeoArenaViewer) return;
    window.GeoArenaViewer.open(src, questionPhoto.alt, photoOpen);
  });

  // ---- the demo photo, offered until this browser starts its first battle --

  const DEMO_PHOTO = "/static/demo/street-sign.jpg";
  const DEMO_QUESTION = "Which country is this? What clues give it away?";
  const VISITED = "geoarena-started-a-battle";
  const demoOffer = document.getElementById("demo-offer");
  const demoButton = document.getElementById("demo-photo");

  function visited() {
    try {
      return window.localStorage.getItem(VISITED) === "1";
    } catch (err) {
      return false; // storage blocked: keep offering
    }
  }

  function rememberVisit() {
    try {
      window.localStorage.setItem(VISITED, "1");
    } catch (err) {
      /* storage blocked: the offer stays */
    }
    demoOffer.hidden = true;
  }

  if (!root.dataset.battleId && !visited()) demoOffer.hidden = false;
  demoButton.addEventListener("click", async () => {
    try {
      const response = await fetch(DEMO_PHOTO);
      if (!response.ok) throw new Error(`HTTP ${response.status}`);
      const blob = await response.blob();
      choosePhoto(new File([blob], "demo-street-sign.jpg", { type: "image/jpeg" }));
    } catch (err) {
      return showFormError("The demo photo could not be loaded; choose a photo of your own.");
    }
    if (!prompt.value.trim()) prompt.value = DEMO_QUESTION;
    submit.focus();
  });

  // ---- prompt examples ------------------------------------------------------

  document.querySelectorAll("[data-example]").forEach((button) =>
    button.addEventListener("click", () => {
      prompt.value = button.textContent.trim();
      prompt.focus();
    })
  );

  // ---- keyboard: Ctrl/Cmd+Enter starts, 1-4 (A/B/T/X) vote -----------------

  // a touch screen with no keyboard: the key hints are hidden there (arena.css)
  const TOUCH_ONLY = window.matchMedia("(hover: none) and (pointer: coarse)").matches;
  const IS_MAC = /Mac|iPhone|iPad/.test(navigator.platform || navigator.userAgent || "");
  if (IS_MAC) document.querySelectorAll("[data-mod-key]").forEach((key) => (key.textContent = "⌘"));

  prompt.addEventListener("keydown", (event) => {
    // Enter alone stays a newline; with Ctrl (or Cmd) it starts the battle.
    if (event.key !== "Enter" || !(event.ctrlKey || event.metaKey) || event.isComposing) return;
    event.preventDefault();
    if (submit.disabled || form.hidden) return;
    if (typeof form.requestSubmit === "function") form.requestSubmit();
    else submit.click();
  });

  const VOTE_KEYS = { 1: "a", a: "a", 2: "b", b: "b", 3: "tie", t: "tie", 4: "both_bad", x: "both_bad" };

  // Keys typed into a field (or a shortcut with a modifier) are never votes.
  function isTyping(target) {
    if (!(target instanceof Element)) return false;
    if (target.isContentEditable) return true;
    return Boolean(target.closest("input, textarea, select, [contenteditable]"));
  }

  document.addEventListener("keydown", (event) => {
    if (event.defaultPrevented || event.repeat || event.ctrlKey || event.metaKey || event.altKey) return;
    if (isTyping(event.target) || (viewer && viewer.open)) return; // the photo viewer has keys of its own
    const choice = VOTE_KEYS[String(event.key).toLowerCase()];
    if (!choice || !battle || !battle.ready || battle.voted || battle.failed || battle.sending || battle.readOnly) return;
    const button = voteButtons.find((b) => b.dataset.choice === choice);
    if (!button || button.disabled) return;
    event.preventDefault();
    castVote(choice, button, event.key.toUpperCase());
  });

  // ---- start a battle -------------------------------------------------------

  // The proof-of-work challenge (static/challenge.js) is solved in the background
  // while the person picks a photo, so a battle starts without waiting for it.
  let challenge = window.arenaChallenge ? window.arenaChallenge.prepare().catch(() => null) : Promise.resolve(null);

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const question = prompt.value.trim();
    if (!photo && !samePhoto) return showFormError("Choose a photo first.", input);
    if (!question) return showFormError("Type a question about the photo.", prompt);
    hideFormError();

    const send = (solved) => {
      const body = new FormData();
      if (photo) body.append("image", photo, photo.name || "photo");
      else body.append("same_photo", samePhoto.battleId);
      body.append("prompt", question);
      if (window.arenaLocation) window.arenaLocation.addTo(body); // opt-in location (location.js)
      if (solved) {
        body.append("challenge", solved.challenge);
        body.append("solution", solved.solution);
      }
      return fetch("/api/battles", { method: "POST", body });
    };
    const nextChallenge = () => (window.arenaChallenge ? window.arenaChallenge.prepare() : Promise.resolve(null));
    setBusy(true);
    let response;
    let data;
    try {
      const solved = await challenge;
      response = await send(solved);
      data = await readJson(response);
      if ((response.status === 428 || response.status === 403) && data && String(data.error).startsWith("challenge")) {
        // the risk (and so the challenge) changed since it was solved: solve a fresh one, once
        response = await send(await nextChallenge());
        data = await readJson(response);
      }
      challenge = nextChallenge().catch(() => null);
    } catch (err) {
      setBusy(false);
      return showFormError("The arena could not be reached. Check your connection and try again.");
    }
    setBusy(false);
    if (!response.ok) return showFormError(serverMessage(response, data), null, response.headers.get("Content-Language"));
    rememberVisit();
    startBattle({
      battle_id: data.battle_id,
      events_url: data.events_url,
      image_url: data.image_url,
      prompt: question,
      mine: true,
      vote: null,
    });
  });

  function setBusy(busy) {
    submit.disabled = busy;
    submit.textContent = busy ? "Uploading…" : "Start battle";
    form.setAttribute("aria-busy", String(busy));
  }

  // `view` is the battle as /api/battles/{id} describes it (or as it was just created):
  // {battle_id, events_url, image_url, prompt, mine, vote}.
  function startBattle(view, resumed) {
    form.hidden = true;
    battleSection.hidden = false;
    root.classList.add("is-battling");
    // Always the server's stored JPEG: it is what the contenders saw, and the
    // browser shows it whatever was uploaded (HEIC included).
    photoOpen.hidden = false;
    questionPhoto.src = view.image_url;
    questionPrompt.textContent = view.prompt;
    const path = `/battle/${encodeURIComponent(view.battle_id)}`;
    if (window.location.pathname !== path) window.history.pushState({ battle: view.battle_id }, "", path);
    battle = {
      id: view.battle_id,
      imageUrl: view.image_url,
      prompt: view.prompt,
      source: new EventSource(view.events_url),
      sides: { a: paneOf("a"), b: paneOf("b") },
      failed: false,
      ready: false,
      ended: false,
      startedAt: performance.now(),
      voted: Boolean(view.vote),
      readOnly: !view.mine,
      clock: 0,
    };
    for (const side of Object.values(battle.sides)) {
      setStatus(side, "Thinking…", "thinking");
      clearTrajectory(side);
    }
    const current = battle;
    current.clock = window.setInterval(() => tick(current), 1000);
    listen(current);
    if (view.vote) showReveal(current, view.vote, false);
    else if (current.readOnly) {
      voteButtonsGroup.hidden = true;
      voteKeys.hidden = true;
      verdictNote.textContent =
        "Only the browser that started this battle can vote on it; you are seeing it read-only.";
      showNext(true);
    }
    if (resumed) return;
    // The focused submit button just disappeared: move focus to the battle.
    battleHeading.focus({ preventScroll: true });
    battleSection.scrollIntoView({ behavior: REDUCED_MOTION ? "auto" : "smooth", block: "start" });
  }

  function paneOf(side) {
    const pane = document.getElementById(`pane-${side}`);
    return {
      pane,
      name: pane.querySelector('[data-role="name"]'),
      status: pane.querySelector('[data-role="status"]'),
      clock: pane.querySelector('[data-role="clock"]'),
      answer: pane.querySelector('[data-role="answer"]'),
      trajectory: pane.querySelector('[data-role="trajectory"]'),
      state: "thinking",
    };
  }

  // ---- the event stream -----------------------------------------------------

  function listen(current) {
    const source = current.source;
    const sideOf = (data) => current.sides[data.side];

    // After a dropped connection the browser reconnects and the server
    // replays the battle from the start: clear the steps so none is doubled.
    let opened = false;
    source.addEventListener("open", () => {
      if (opened) {
        for (const side of Object.values(current.sides)) {
          clearTrajectory(side);
          side.answer.textContent = ""; // the replay sends the answer's text again
        }
      }
      opened = true;
    });

    on(source, "delta", (data) => {
      const side = sideOf(data);
      if (!side) return;
      // Only the new text arrives while streaming; it is shown as plain text (never parsed as
      // HTML) and `done` replaces it with the server's sanitised rendering of the whole answer.
      side.answer.classList.add("is-streaming");
      side.answer.append(document.createTextNode(data.text || ""));
      if (side.state !== "streaming") setStatus(side, "Streaming…", "streaming");
    });
    on(source, "step", (data) => {
      const side = sideOf(data);
      if (side) renderStep(side, data);
    });
    on(source, "done", (data) => {
      const side = sideOf(data);
      if (!side) return;
      side.answer.classList.remove("is-streaming");
      side.answer.innerHTML = data.html; // sanitised by the server
      const seconds = Number(data.latency_ms) / 1000;
      setStatus(side, isFinite(seconds) ? `Done in ${seconds.toFixed(1)} s` : "Done", "done");
    });
    on(source, "ready", () => {
      if (current.failed || current.voted || current.readOnly) return;
      current.ready = true;
      voteButtons.forEach((button) => (button.disabled = false));
      setVoting(true);
      verdictNote.textContent = TOUCH_ONLY
        ? "Both answers are in. Which one is better? Tap your vote."
        : "Both answers are in. Which one is better? " +
          "Press 1 or A if A is better, 2 or B if B is better, 3 or T for a tie, 4 or X if both are bad.";
    });
    on(source, "end", (data) => {
      current.ended = true;
      source.close();
      if (current.voted || current.ready || current.readOnly) return;
      if (current.failed) return;
      const status = data && data.status;
      if (status === "voted") {
        failBattle(current, "This battle has already been voted on.");
      } else if (status !== "ready") {
        failBattle(current, "This battle ended before both answers were done, so it cannot be voted on.");
      }
    });

    // `error` is both a server event (with JSON data) and EventSource's own
    // connection-failure signal (no data); tell them apart.
    source.addEventListener("error", (event) => {
      if (typeof event.data === "string" && event.data) {
        if (battle !== current) return;
        const data = parseJson(event.data);
        const side = data && sideOf(data);
        const message = (data && data.message) || "This model failed to answer.";
        if (side) setStatus(side, `Error: ${message}`, "error");
        const label = side ? `Model ${data.side.toUpperCase()}` : "A model";
        failBattle(current, `${label} failed, so this battle cannot be voted on.`);
        return;
      }
      if (current.ended || battle !== current) return;
      if (source.readyState === EventSource.CLOSED) {
        for (const side of Object.values(current.sides)) {
          if (side.state === "thinking" || side.state === "streaming") {
            setStatus(side, "Error: the connection was lost", "error");
          }
        }
        failBattle(current, "The connection to the arena was lost, so this battle cannot be voted on.");
      }
      // Otherwise the browser reconnects by itself and the server replays.
    });
  }

  function on(source, type, handler) {
    source.addEventListener(type, (event) => {
      if (battle === null || battle.source !== source) return; // a stale battle
      handler(parseJson(event.data) || {});
    });
  }

  function parseJson(text) {
    try {
      return JSON.parse(text);
    } catch (err) {
      return null;
    }
  }

  // Seconds since the battle started, beside each side still working.
  function tick(current) {
    const seconds = Math.round((performance.now() - current.startedAt) / 1000);
    let working = false;
    for (const side of Object.values(current.sides)) {
      const active = side.state === "thinking" || side.state === "streaming";
      side.clock.textContent = active ? `${seconds} s` : "";
      working = working || active;
    }
    if (!working) window.clearInterval(current.clock);
  }

  function setStatus(side, text, state) {
    side.state = state;
    side.status.textContent = text;
    if (state !== "thinking" && state !== "streaming") side.clock.textContent = "";
    side.pane.dataset.state = state;
    side.pane.setAttribute("aria-busy", String(state === "thinking" || state === "streaming"));
  }

  // Before any step: in "collapsed" mode both sides get their one line (so a side
  // without tools is not the one whose answer starts higher); otherwise nothing.
  function clearTrajectory(side) {
    side.trajectory.textContent = "";
    side.trajectory.dataset.steps = "0";
    if (TRAJECTORY === "collapsed") {
      const none = document.createElement("p");
      none.className = "trajectory__none";
      none.textContent = "No tool steps";
      side.trajectory.append(none);
    }
    side.trajectory.hidden = TRAJECTORY !== "collapsed";
  }

  // Once the vote is in (or shown on reload), "after_vote" reveals the steps, folded.
  function showTrajectories(current) {
    if (TRAJECTORY !== "after_vote") return;
    for (const side of Object.values(current.sides)) {
      if (side.trajectory.dataset.steps !== "0") side.trajectory.hidden = false;
    }
  }

  // GATE tool steps: drawn by trajectory.js when it is loaded, else as plain text.
  function renderStep(side, step) {
    const placeholder = side.trajectory.querySelector(".trajectory__none");
    if (placeholder) placeholder.remove();
    side.trajectory.dataset.steps = String(Number(side.trajectory.dataset.steps || 0) + 1);
    // hidden until the vote in "after_vote" mode (unless this battle is already voted)
    side.trajectory.hidden = TRAJECTORY === "after_vote" && !(battle && battle.voted);
    const renderer = window.GeoArenaTrajectory;
    if (renderer && typeof renderer.renderStep === "function") {
      try {
        renderer.renderStep(side.trajectory, step, { open: TRAJECTORY === "open" });
        return;
      } catch (err) {
        console.error("trajectory.js could not render a step", err);
      }
    }
    fallbackStep(side.trajectory, step);
  }

  // Without trajectory.js: one collapsed line per battle side, tool names as text.
  function fallbackStep(container, step) {
    let details = container.querySelector("details.trajectory__fallback");
    if (!details) {
      details = document.createElement("details");
      details.className = "trajectory__fallback";
      details.append(document.createElement("summary"), document.createElement("ol"));
      container.appendChild(details);
    }
    const item = document.createElement("li");
    item.textContent = `${step.tool || "tool"}${step.ok === false ? " (failed)" : ""}`;
    details.querySelector("ol").appendChild(item);
    const count = details.querySelectorAll("li").length;
    details.querySelector("summary").textContent = `${count} tool step${count === 1 ? "" : "s"}`;
  }

  function failBattle(current, message) {
    if (current.failed) return;
    current.failed = true;
    voteButtons.forEach((button) => (button.disabled = true));
    setVoting(false);
    verdictNote.textContent = `${message} Start a new battle to try again.`;
    verdictNote.classList.add("is-error");
    showNext(true);
  }

  // ---- vote and reveal ------------------------------------------------------

  voteButtons.forEach((button) =>
    button.addEventListener("click", () => castVote(button.dataset.choice, button))
  );

  async function castVote(choice, button, key) {
    const current = battle;
    if (!current || !current.ready || current.voted || current.sending) return;
    current.sending = true;
    current.key = key || "";
    voteButtons.forEach((b) => (b.disabled = true));
    // The verdict note is a polite live region: a screen reader hears what the key did.
    verdictNote.textContent = key
      ? `Key ${key}: ${CHOICE_WORDS[choice]}. Sending your vote…`
      : "Sending your vote…";
    let response;
    let data;
    try {
      response = await fetch(`/api/battles/${encodeURIComponent(current.id)}/vote`, {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ choice }),
      });
      data = await readJson(response);
    } catch (err) {
      current.sending = false;
      voteButtons.forEach((b) => (b.disabled = false));
      verdictNote.textContent = "Your vote could not be sent. Check your connection and try again.";
      return;
    }
    current.sending = false;
    if (battle !== current) return;
    setVoting(response.status >= 500); // the buttons come back only when the vote may be sent again
    if (response.ok) return reveal(current, data, button);
    if (response.status === 409) {
      current.voted = data && data.error === "already_voted";
      const words = (data && (data.message || CONFLICT_WORDS[data.error])) || serverMessage(response, data);
      verdictNote.textContent = `${words} Start a new battle to keep going.`;
      showNext(true);
      newBattleButton.focus();
      return;
    }
    verdictNote.textContent = serverMessage(response, data);
    if (response.status >= 500) voteButtons.forEach((b) => (b.disabled = false));
    else showNext(true);
  }

  function reveal(current, data, button) {
    showReveal(current, data, true, button);
  }

  // The names behind A and B, and the vote; `fresh` when it was just cast here,
  // not when a reload (or a shared link) shows a battle voted earlier.
  function showReveal(current, data, fresh, button) {
    current.voted = true;
    voteButtons.forEach((b) => (b.disabled = true));
    button = button || voteButtons.find((b) => b.dataset.choice === data.choice);
    if (button) {
      button.classList.add("is-chosen");
      button.setAttribute("aria-pressed", "true");
    }
    const names = {};
    for (const key of ["a", "b"]) {
      const side = current.sides[key];
      const name = data[`model_${key}`] || "unknown";
      names[key] = name;
      side.name.textContent = "";
      side.name.append(" · ", nameTag(name));
      if (data[`label_${key}`]) side.name.append(badge(data[`label_${key}`], "label"));
      if (data[`gate_${key}`]) side.name.append(badge("GATE", "gate"));
      side.name.hidden = false;
      side.pane.classList.add("is-revealed");
    }
    const chosen = data.choice || (button && button.dataset.choice);
    if (chosen === "a" || chosen === "b") current.sides[chosen].pane.classList.add("is-winner");
    verdictNote.classList.remove("is-error");
    showTrajectories(current);
    const verdict = CHOICE_WORDS[chosen] || chosen;
    const who = `Model A was ${names.a}; Model B was ${names.b}.`;
    if (fresh) {
      verdictNote.textContent = `Thanks! You voted${current.key ? ` (key ${current.key})` : ""}: ${verdict}. ${who}`;
    } else {
      verdictNote.textContent = `${current.readOnly ? "The vote on this battle" : "Your vote"}: ${verdict}. ${who}`;
    }
    voteKeys.hidden = true;
    showNext(true);
    if (fresh) newBattleButton.focus();
  }

  // On a phone the vote buttons become a bar at the bottom of the screen while voting is open (arena.css).
  function setVoting(open) {
    root.classList.toggle("is-voting", open);
  }

  // "New battle" and "Same photo, new pair" come and go together.
  function showNext(show) {
    newBattleButton.hidden = !show;
    samePhotoButton.hidden = !show;
  }

  function nameTag(name) {
    const tag = document.createElement("strong");
    tag.className = "model-name";
    tag.textContent = name;
    return tag;
  }

  function badge(text, kind) {
    const tag = document.createElement("span");
    tag.className = `badge badge--${kind}`;
    tag.textContent = text;
    return tag;
  }

  // ---- new battle -----------------------------------------------------------

  newBattleButton.addEventListener("click", () => resetPage(false));
  samePhotoButton.addEventListener("click", () => resetPage(true));

  // Back to the form; with `keepPhoto` the last battle's photo and question stay
  // ("same photo, new pair") and a new battle starts with them right away.
  function resetPage(keepPhoto) {
    const last = battle;
    if (battle) {
      battle.source.close();
      window.clearInterval(battle.clock);
    }
    battle = null;
    for (const key of ["a", "b"]) {
      const side = paneOf(key);
      side.answer.textContent = "";
      clearTrajectory(side);
      side.name.textContent = "";
      side.name.hidden = true;
      side.pane.classList.remove("is-revealed", "is-winner");
      setStatus(side, "Waiting", "waiting");
    }
    voteButtons.forEach((button) => {
      button.disabled = true;
      button.classList.remove("is-chosen");
      button.removeAttribute("aria-pressed");
    });
    verdictNote.classList.remove("is-error");
    verdictNote.textContent = "Voting opens when both answers are done.";
    showNext(false);
    setVoting(false);
    voteButtonsGroup.hidden = false;
    voteKeys.hidden = false;
    questionPhoto.removeAttribute("src");
    questionPrompt.textContent = "";

    photo = null;
    if (photoUrl) URL.revokeObjectURL(photoUrl);
    photoUrl = null;
    form.reset();
    preview.hidden = true;
    preview.removeAttribute("src");
    dropzone.classList.remove("has-photo");
    dropzoneTitle.textContent = "Drop a photo here";
    hideFormError();

    battleSection.hidden = true;
    root.classList.remove("is-battling");
    form.hidden = false;
    // with the photo kept, the next battle follows this one directly in the history (Back returns here)
    if (!keepPhoto && window.location.pathname !== "/") window.history.pushState({}, "", "/");
    window.scrollTo({ top: 0 });
    if (keepPhoto && last) {
      samePhoto = { battleId: last.id, url: last.imageUrl };
      preview.src = last.imageUrl;
      preview.hidden = false;
      dropzone.classList.add("has-photo");
      dropzoneTitle.textContent = "The same photo as your last battle";
      prompt.value = last.prompt;
      if (typeof form.requestSubmit === "function") form.requestSubmit();
      else submit.click();
      return;
    }
    samePhoto = null;
    input.focus();
  }

  // ---- a battle's own address: /battle/{id} ---------------------------------

  // Back and forward move between the form and battles: the page is rebuilt from the address.
  window.addEventListener("popstate", () => window.location.reload());

  async function resume(id) {
    let response;
    let data;
    try {
      response = await fetch(`/api/battles/${encodeURIComponent(id)}`, { headers: { Accept: "application/json" } });
      data = await readJson(response);
    } catch (err) {
      return showFormError("The arena could not be reached. Check your connection and reload the page.");
    }
    if (!response.ok || !data) return showFormError(serverMessage(response, data));
    startBattle(data, true);
  }

  if (root.dataset.battleId) resume(root.dataset.battleId);

  // ---- helpers --------------------------------------------------------------

  async function readJson(response) {
    const text = await response.text();
    return parseJson(text);
  }

  // The server's own words when it gave any (`message`, or FastAPI's `detail`).
  function serverMessage(response, data) {
    if (data && typeof data.message === "string" && data.message) return data.message;
    if (data && typeof data.detail === "string" && data.detail) return data.detail;
    if (data && Array.isArray(data.detail) && data.detail[0] && data.detail[0].msg) {
      return `The request was refused: ${data.detail[0].msg}.`;
    }
    if (response.status === 413) return `This photo is too large; the limit is ${MAX_MB} MB.`;
    if (response.status === 404) return "This battle no longer exists.";
    if (response.status >= 500) return "The arena hit an error. Please try again in a moment.";
    return `The request was refused (HTTP ${response.status}).`;
  }

  // A refusal comes in the question's language (Content-Language); Hebrew, Arabic and Persian read right to left.
  const RIGHT_TO_LEFT = new Set(["ar", "fa", "he"]);

  function showFormError(message, focusTarget, lang) {
    formError.textContent = message;
    formError.lang = lang || "en";
    formError.dir = RIGHT_TO_LEFT.has(formError.lang) ? "rtl" : "auto";
    formError.hidden = false;
    if (focusTarget) focusTarget.focus();
  }

  function hideFormError() {
    formError.textContent = "";
    formError.hidden = true;
  }
})();
