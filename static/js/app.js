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
