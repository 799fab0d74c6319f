// Keyboard triage of a review list (promotions, conflicts). Everything here has a plain-HTML
// counterpart (buttons, checkboxes, forms), so the page works without it; this only adds keys,
// selection helpers and announcements for screen readers.
//
// The page declares what it triages:
//   #triage[data-noun]          the list ("candidate", "conflict"); data-can-approve="1" allows selecting
//   .triage-card[data-label]    one item ("candidate #4"), focusable; data-memory groups X; data-cannot
//                               says why its keys do nothing (a person who may only read it)
//   input.triage-select         the card's checkbox in the bulk form (#bulk-form)
//   [data-key="a"]              what a key does: on a card, or in #bulk-form when something is selected.
//                               A button is pressed, a field focused, a <details> opened with its first
//                               field focused (data-key-toggle: opened or closed). data-announce is read
//                               out, with {card} the card's label and {n} the number selected.
// Keys of every list: j / ArrowDown, k / ArrowUp move between cards; x selects the card (X: every card
// shown of its memory); ? shows the keys; Esc leaves a field for its card.
(function () {
  "use strict";

  function triage() { return document.getElementById("triage"); }
  function noun() { return (triage() && triage().dataset.noun) || "item"; }
  function cards() { return Array.prototype.slice.call(document.querySelectorAll("#triage .triage-card")); }
  function allBoxes() { return Array.prototype.slice.call(document.querySelectorAll("input.triage-select")); }
  function selectedBoxes() { return allBoxes().filter(function (box) { return box.checked; }); }
  function plural(count) { return count + " " + noun() + (count === 1 ? "" : "s"); }

  function announce(text) {
    var live = document.getElementById("triage-status");
    if (!live) return;
    // Cleared first, so the same sentence twice in a row is still read out.
    live.textContent = "";
    window.setTimeout(function () { live.textContent = text; }, 30);
  }

  function currentCard() {
    var active = document.activeElement;
    return active && active.closest ? active.closest("#triage .triage-card") : null;
  }

  var lastCardId = null;
  document.addEventListener("focusin", function () {
    var card = currentCard();
    if (card) lastCardId = card.id;
  });

  function focusCard(card) {
    if (!card) return;
    card.focus({ preventScroll: true });
    card.scrollIntoView({ block: "nearest" });
  }

  function move(step) {
    var all = cards();
    if (!all.length) return;
    var at = all.indexOf(currentCard());
    var next = at === -1 ? (step > 0 ? 0 : all.length - 1) : Math.min(all.length - 1, Math.max(0, at + step));
    focusCard(all[next]);
  }

  function updateCount() {
    var count = document.getElementById("selected-count");
    if (count) count.textContent = String(selectedBoxes().length);
  }

  function setSelected(boxes, on) {
    boxes.forEach(function (box) { box.checked = on; });
    updateCount();
  }

  function toggle(card) {
    var box = card && card.querySelector("input.triage-select");
    if (!box) return;
    setSelected([box], !box.checked);
    announce(card.dataset.label.charAt(0).toUpperCase() + card.dataset.label.slice(1) +
             (box.checked ? " selected. " : " unselected. ") + selectedBoxes().length + " selected.");
  }

  function selectMemory(memoryId) {
    var boxes = cards().filter(function (card) { return card.dataset.memory === memoryId; })
      .map(function (card) { return card.querySelector("input.triage-select"); })
      .filter(Boolean);
    setSelected(boxes, true);
    announce(plural(boxes.length) + " of this memory selected. " + selectedBoxes().length + " selected.");
  }

  // The element a key acts on: the bulk form's while something is selected (when it has one for
  // the key), otherwise the focused card's.
  function target(key, card) {
    var selector = '[data-key="' + key + '"]';
    var bulk = selectedBoxes().length && document.querySelector("#bulk-form " + selector);
    if (bulk) return bulk;
    return card ? card.querySelector(selector) : null;
  }

  function say(element, card) {
    var text = element.dataset.announce;
    if (!text) return;
    announce(text.replace("{n}", String(selectedBoxes().length)).replace("{card}", card ? card.dataset.label : ""));
  }

  function act(key, card) {
    var element = target(key, card);
    if (!element) {
      if (!card) announce("Nothing selected: move to a card with j first.");
      else announce(card.dataset.cannot || "This " + noun() + " is decided already.");
      return;
    }
    say(element, card);
    if (element.tagName === "DETAILS") {
      element.open = element.hasAttribute("data-key-toggle") ? !element.open : true;
      var field = element.open && !element.hasAttribute("data-key-toggle") && element.querySelector("textarea, select, input:not([type=hidden])");
      if (field) field.focus();
    } else if (element.tagName === "BUTTON") {
      element.click();
    } else {
      element.focus();
    }
  }

  function toggleHelp() {
    var help = document.getElementById("keys-help");
    if (!help) return;
    help.open = !help.open;
    if (help.open) help.querySelector("summary").focus();
    announce(help.open ? "Keyboard shortcuts shown." : "Keyboard shortcuts hidden.");
  }

  function typing(element) {
    if (!element || !element.closest) return false;
    if (element.isContentEditable || element.closest("textarea, select, [contenteditable]")) return true;
    var input = element.closest("input");
    return Boolean(input) && ["checkbox", "radio", "button", "submit", "reset"].indexOf(input.type) === -1;
  }

  // Keys a card or the bulk form declares; the list's own keys are handled below.
  function declared(key) {
    return /^[A-Za-z]$/.test(key) && Boolean(document.querySelector('#triage [data-key="' + key + '"]'));
  }

  document.addEventListener("keydown", function (event) {
    if (!triage() || event.defaultPrevented || event.ctrlKey || event.metaKey || event.altKey) return;
    if (event.key === "Escape" && typing(event.target)) {
      // Back from a field to the card it belongs to, or to the last card visited.
      var back = event.target.closest(".triage-card") || (lastCardId && document.getElementById(lastCardId));
      event.preventDefault();
      if (back) focusCard(back); else event.target.blur();
      return;
    }
    if (typing(event.target)) return;
    var canSelect = triage().dataset.canApprove === "1";
    // On a page of one card (a conflict's own page) the keys act on it without moving to it first.
    var card = currentCard() || (cards().length === 1 ? cards()[0] : null);
    var actions = {
      j: function () { move(1); }, ArrowDown: function () { move(1); },
      k: function () { move(-1); }, ArrowUp: function () { move(-1); },
      "?": toggleHelp,
    };
    if (canSelect) {
      actions.x = function () { toggle(card); };
      actions.X = function () { if (card) selectMemory(card.dataset.memory); };
    }
    var action = actions[event.key];
    if (!action && declared(event.key)) action = function () { act(event.key, card); };
    if (!action) return;
    event.preventDefault();
    action();
  });

  document.addEventListener("click", function (event) {
    var button = event.target.closest ? event.target.closest("[data-select], [data-select-memory]") : null;
    if (!button) return;
    if (button.dataset.selectMemory) {
      selectMemory(button.dataset.selectMemory);
    } else {
      var boxes = allBoxes();
      setSelected(boxes, button.dataset.select === "all");
      announce(button.dataset.select === "all" ? plural(boxes.length) + " selected." : "Selection cleared.");
    }
  });

  document.addEventListener("change", function (event) {
    if (event.target.matches && event.target.matches("input.triage-select")) updateCount();
  });

  // After a decision the card comes back in its new state: keep the focus on it (when it was lost
  // with the card it was on) and read out what happened. A bulk decision's outcome is read from its own live region.
  var focusedId = null;
  document.addEventListener("htmx:beforeRequest", function () {
    var card = currentCard();
    focusedId = card ? card.id : null;
  });
  document.addEventListener("htmx:afterSettle", function () {
    if (!focusedId) return;
    var card = document.getElementById(focusedId);
    if (!card || card.contains(document.activeElement)) return;
    focusedId = null;
    var alert = card.querySelector(".alert");
    if (alert) announce(alert.textContent.trim());
    // Someone who moved on (j) while the answer came is not pulled back.
    if (!document.activeElement || document.activeElement === document.body) focusCard(card);
  });

  function init() {
    Array.prototype.slice.call(document.querySelectorAll("[data-select], [data-select-memory]"))
      .forEach(function (button) { button.hidden = false; });
    updateCount();
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
  document.addEventListener("htmx:afterSettle", init);
})();
