// Small behaviours kept out of the markup, so the Content-Security-Policy can refuse every inline
// script and every eval (htmx trigger filters such as keyup[key=='Escape'] are evaluated as code).

// A <select data-autosubmit> submits its form when it changes.
document.addEventListener("change", function (event) {
  var field = event.target;
  if (field.matches && field.matches("select[data-autosubmit]") && field.form) {
    field.form.submit();
  }
});

// Escape inside an element with data-escape-event fires that event on it (htmx listens for it).
document.addEventListener("keyup", function (event) {
  if (event.key !== "Escape" || !event.target.closest) {
    return;
  }
  var owner = event.target.closest("[data-escape-event]");
  if (owner) {
    owner.dispatchEvent(new CustomEvent(owner.dataset.escapeEvent));
  }
});

// "/" outside a text field jumps to the search box (the nav's, or the search page's own).
document.addEventListener("keydown", function (event) {
  if (event.key !== "/" || event.ctrlKey || event.metaKey || event.altKey) {
    return;
  }
  var target = event.target;
  if (target && (target.isContentEditable || (target.closest && target.closest("input, textarea, select")))) {
    return;
  }
  var box = document.getElementById("id_q") || document.getElementById("nav-q");
  if (!box) {
    return;
  }
  var menu = box.closest("details");
  if (menu && !menu.open) {
    menu.open = true;
  }
  event.preventDefault();
  box.focus();
  box.select();
});

// An htmx action the server refuses (403 once a role was taken away, 404 for something deleted
// meanwhile, a server error) swaps nothing, so without this the click would seem to do nothing.
// The reason goes into a live region (role="alert" in base.html), which screen readers announce.
function requestErrorMessage(xhr) {
  var title = "", detail = "";
  var type = xhr.getResponseHeader("Content-Type") || "";
  if (type.indexOf("text/html") !== -1 && xhr.responseText) {
    var doc = new DOMParser().parseFromString(xhr.responseText, "text/html");
    var heading = doc.querySelector(".error-page h1, main h1");
    var explanation = doc.querySelector(".error-page h1 + p, .alert-error");
    title = heading ? heading.textContent.trim() : "";
    detail = explanation ? explanation.textContent.trim() : "";
  } else if (type.indexOf("json") !== -1) {
    try { detail = String(JSON.parse(xhr.responseText).detail || ""); } catch (e) { detail = ""; }
  }
  if (!title) {
    title = xhr.status === 403 ? "Your account cannot do this"
      : xhr.status === 404 ? "This item no longer exists"
      : xhr.status === 429 ? "Too many requests: wait a moment and try again"
      : "The server could not do this (error " + xhr.status + ")";
  }
  return {title: title, detail: detail};
}

function showRequestError(title, detail) {
  var region = document.getElementById("request-error");
  if (!region) {
    return;
  }
  region.textContent = "";
  var box = document.createElement("div");
  box.className = "alert alert-error request-error-box";
  var strong = document.createElement("strong");
  strong.textContent = title;
  box.appendChild(strong);
  if (detail) {
    var p = document.createElement("p");
    p.textContent = detail;
    box.appendChild(p);
  }
  var close = document.createElement("button");
  close.type = "button";
  close.className = "btn btn-sm";
  close.textContent = "Dismiss";
  close.addEventListener("click", function () { region.textContent = ""; });
  box.appendChild(close);
  region.appendChild(box);
}

document.addEventListener("htmx:responseError", function (event) {
  var message = requestErrorMessage(event.detail.xhr);
  showRequestError(message.title, message.detail);
});

document.addEventListener("htmx:sendError", function () {
  showRequestError("The server could not be reached", "Check the connection and try again; nothing was changed.");
});

// A new successful request clears an old error message.
document.addEventListener("htmx:beforeRequest", function () {
  var region = document.getElementById("request-error");
  if (region) {
    region.textContent = "";
  }
});
