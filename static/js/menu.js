// The main menu is a <details> element, open in the HTML so it works without this script.
// On a narrow screen it starts closed (a tap opens it); on a wide one it stays open and its
// toggle is hidden by app.css.
(function () {
  var wide = window.matchMedia("(min-width: 861px)");
  function fit() {
    var menu = document.querySelector("details.menu");
    if (menu) menu.open = wide.matches;
  }
  fit();
  wide.addEventListener("change", fit);
  document.addEventListener("keydown", function (event) {
    var menu = document.querySelector("details.menu");
    if (event.key === "Escape" && menu && menu.open && !wide.matches) {
      menu.open = false;
      menu.querySelector("summary").focus();
    }
  });
})();
