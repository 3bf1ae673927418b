// The one formatting of the repository: `pnpm format` checks it (the test command runs it), `pnpm format:fix` writes it.
/** @type {import("prettier").Config} */
export default {
  printWidth: 140,
  trailingComma: "all",
  arrowParens: "always",
};
