// The theme: the person's choice (remembered) or the system's, applied as
// data-theme on <html> before first paint — a classic script, so it runs
// before the page renders. It also wires the toggle: system → light → dark.
(function () {
  var KEY = "local-mcp-theme";
  var media = window.matchMedia("(prefers-color-scheme: dark)");
  var root = document.documentElement;

  function stored() {
    try {
      var t = localStorage.getItem(KEY);
      return t === "light" || t === "dark" ? t : null;
    } catch {
      return null; // storage may be off: follow the system
    }
  }
  var choice = stored();

  function apply() {
    root.dataset.theme = choice || (media.matches ? "dark" : "light");
    var btn = document.getElementById("theme-toggle");
    if (btn) btn.setAttribute("aria-label", choice ? "Theme: " + choice + " (click to change)" : "Theme: follows the system (click to change)");
  }
  apply();
  media.addEventListener("change", apply);

  document.addEventListener("DOMContentLoaded", function () {
    var btn = document.getElementById("theme-toggle");
    if (!btn) return;
    apply();
    btn.addEventListener("click", function () {
      choice = choice === null ? "light" : choice === "light" ? "dark" : null;
      try {
        if (choice) localStorage.setItem(KEY, choice);
        else localStorage.removeItem(KEY);
      } catch {
        /* the choice lasts for this page */
      }
      apply();
    });
  });
})();
