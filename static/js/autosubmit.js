// A <select data-autosubmit> submits its form when it changes. Kept out of the markup so the
// Content-Security-Policy can refuse every inline script.
document.addEventListener("change", function (event) {
  var field = event.target;
  if (field.matches && field.matches("select[data-autosubmit]") && field.form) {
    field.form.submit();
  }
});
