// ESLint for the page (ui/js) and its browser tests (tests/ui). It lives here
// because this is the folder whose node tooling the test command installs with
// `npm ci`; `npm run lint:ui` runs it from the repository root with this file
// as --config, so the paths below are relative to the root.
import js from "@eslint/js";
import globals from "globals";

export default [
  js.configs.recommended,
  {
    files: ["ui/js/**/*.js"],
    languageOptions: { sourceType: "module", globals: globals.browser },
  },
  {
    // The one classic script: it sets the theme before first paint, which a
    // deferred module could not (ui/index.html loads it without type=module).
    files: ["ui/js/theme.js"],
    languageOptions: { sourceType: "script" },
  },
  {
    // Node's test runner drives Chromium, and the callbacks handed to
    // page.evaluate, waitForFunction and addInitScript run inside the page,
    // so both sets of globals are real here.
    files: ["tests/ui/**/*.{js,mjs}"],
    languageOptions: {
      sourceType: "module",
      globals: { ...globals.node, ...globals.browser },
    },
  },
];
