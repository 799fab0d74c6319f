// Keyboard triage of the promotion inbox. Everything here has a plain-HTML counterpart (buttons,
// checkboxes, forms), so the page works without it; this only adds keys, selection helpers and
// announcements for screen readers.
//   j / ArrowDown, k / ArrowUp  move between cards      x  select the card (X: all shown of its memory)
//   a  approve the selection, or the card               e  edit the card, then approve
//   r  reject: focus the reason (selection's or card's)  o  open or close the supporting lessons
//   ?  show or hide the list of keys
(function () {
  "use strict";

  function triage() { return document.getElementById("triage"); }
  function cards() { return Array.prototype.slice.call(document.querySelectorAll("#triage article.promotion")); }
  function selectedBoxes() { return Array.prototype.slice.call(document.querySelectorAll("input.select-candidate:checked")); }

  function announce(text) {
    var live = document.getElementById("triage-status");
    if (!live) return;
    // Cleared first, so the same sentence twice in a row is still read out.
    live.textContent = "";
    window.setTimeout(function () { live.textContent = text; }, 30);
  }

  function currentCard() {
    var active = document.activeElement;
    return active && active.closest ? active.closest("#triage article.promotion") : null;
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
    var box = card && card.querySelector("input.select-candidate");
    if (!box) return;
    setSelected([box], !box.checked);
    announce("Candidate #" + card.dataset.candidate + (box.checked ? " selected. " : " unselected. ") +
             selectedBoxes().length + " selected.");
  }

  function selectMemory(memoryId) {
    var boxes = cards().filter(function (card) { return card.dataset.memory === memoryId; })
      .map(function (card) { return card.querySelector("input.select-candidate"); })
      .filter(Boolean);
    setSelected(boxes, true);
    announce(boxes.length + (boxes.length === 1 ? " candidate" : " candidates") + " of this memory selected. " +
             selectedBoxes().length + " selected.");
  }

  function bulkButton(action) {
    return document.querySelector('#bulk-form button[name=action][value="' + action + '"]');
  }

  function approve(card) {
    if (selectedBoxes().length) {
      announce("Approving " + selectedBoxes().length + " selected candidates.");
      bulkButton("approve").click();
      return;
    }
    var button = card && card.querySelector(".promotion-actions button[name=approve]");
    if (button) {
      announce("Approving candidate #" + card.dataset.candidate + ".");
      button.click();
    } else {
      announce(card ? "This candidate is decided already." : "Nothing selected: move to a card with j first.");
    }
  }

  function editThenApprove(card) {
    var details = card && card.querySelector("details.edit-approve");
    if (!details) return;
    details.open = true;
    var text = details.querySelector("textarea");
    if (text) text.focus();
  }

  function reject(card) {
    var field = selectedBoxes().length ? document.getElementById("bulk-reason")
      : card && card.querySelector(".reject-form input[name=reason]");
    if (!field) {
      announce(card ? "This candidate is decided already." : "Nothing selected: move to a card with j first.");
      return;
    }
    field.focus();
    announce(selectedBoxes().length ? "Reason for rejecting the " + selectedBoxes().length +
             " selected candidates; Enter rejects them." : "Reason for rejecting this candidate; Enter rejects it.");
  }

  function toggleLessons(card) {
    var details = card && card.querySelector("details.supporting");
    if (details) details.open = !details.open;
  }

  function toggleHelp() {
    var help = document.getElementById("keys-help");
    if (!help) return;
    help.open = !help.open;
    if (help.open) help.querySelector("summary").focus();
    announce(help.open ? "Keyboard shortcuts shown." : "Keyboard shortcuts hidden.");
  }

  function typing(target) {
    if (!target || !target.closest) return false;
    if (target.isContentEditable || target.closest("textarea, select, [contenteditable]")) return true;
    var input = target.closest("input");
    return Boolean(input) && ["checkbox", "radio", "button", "submit", "reset"].indexOf(input.type) === -1;
  }

  document.addEventListener("keydown", function (event) {
    if (!triage() || event.defaultPrevented || event.ctrlKey || event.metaKey || event.altKey) return;
    if (event.key === "Escape" && typing(event.target)) {
      // Back from a field to the card it belongs to, or to the last card visited.
      var back = event.target.closest("article.promotion") || (lastCardId && document.getElementById(lastCardId));
      event.preventDefault();
      if (back) focusCard(back); else event.target.blur();
      return;
    }
    if (typing(event.target)) return;
    var canApprove = triage().dataset.canApprove === "1";
    var card = currentCard();
    var actions = {
      j: function () { move(1); }, ArrowDown: function () { move(1); },
      k: function () { move(-1); }, ArrowUp: function () { move(-1); },
      o: function () { toggleLessons(card); },
      "?": toggleHelp,
    };
    if (canApprove) {
      actions.x = function () { toggle(card); };
      actions.X = function () { if (card) selectMemory(card.dataset.memory); };
      actions.a = function () { approve(card); };
      actions.e = function () { editThenApprove(card); };
      actions.r = function () { reject(card); };
    }
    var action = actions[event.key];
    if (!action) return;
    event.preventDefault();
    action();
  });

  document.addEventListener("click", function (event) {
    var target = event.target.closest ? event.target.closest("[data-select], [data-select-memory]") : null;
    if (!target) return;
    if (target.dataset.selectMemory) {
      selectMemory(target.dataset.selectMemory);
    } else {
      var boxes = Array.prototype.slice.call(document.querySelectorAll("input.select-candidate"));
      setSelected(boxes, target.dataset.select === "all");
      announce(target.dataset.select === "all" ? boxes.length + " candidates selected." : "Selection cleared.");
    }
  });

  document.addEventListener("change", function (event) {
    if (event.target.matches && event.target.matches("input.select-candidate")) updateCount();
  });

  // After a decision the card comes back in its new state: keep the focus on it and read out what
  // happened. A bulk decision's outcome is read from its own live region.
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
    focusCard(card);
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
