// Applies the remembered theme before first paint. A classic script (not a
// module) so it runs before the page renders; the toggle lives in app.js.
(function () {
  try {
    var t = localStorage.getItem("local-mcp-theme");
    if (t === "light" || t === "dark") document.documentElement.dataset.theme = t;
  } catch (e) { /* storage may be off: follow the system */ }
})();
