// Shared, type-aware lint rules for every whohas package (after create-t3-turbo tooling/eslint/base.ts).
import js from "@eslint/js";
import tseslint from "typescript-eslint";

/**
 * restrictEnvAccess bans process.env outside the one module per app that parses it (env.ts, config.ts, or the hub's
 * config/load.ts).
 */
export const restrictEnvAccess = {
  files: ["**/*.ts", "**/*.tsx"],
  ignores: ["**/env.ts", "**/config.ts", "**/config/load.ts", "**/*.test.ts", "**/test/**", "**/*.config.ts"],
  rules: {
    "no-restricted-properties": [
      "error",
      {
        object: "process",
        property: "env",
        message: "Read the environment only in env.ts / config.ts / config/load.ts and pass a typed config down.",
      },
    ],
  },
};

export default tseslint.config(
  { ignores: ["**/dist/**", "**/.next/**", "**/.cache/**", "**/node_modules/**", "**/*.js", "**/*.mjs", "**/next-env.d.ts"] },
  {
    files: ["**/*.ts", "**/*.tsx"],
    extends: [js.configs.recommended, ...tseslint.configs.recommendedTypeChecked, ...tseslint.configs.stylisticTypeChecked],
    languageOptions: { parserOptions: { projectService: true } },
    rules: {
      "@typescript-eslint/consistent-type-imports": ["error", { prefer: "type-imports", fixStyle: "separate-type-imports" }],
      "@typescript-eslint/no-non-null-assertion": "error",
      "@typescript-eslint/no-unnecessary-condition": ["error", { allowConstantLoopConditions: true }],
      "@typescript-eslint/no-misused-promises": ["error", { checksVoidReturn: { attributes: false } }],
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_" }],
      "@typescript-eslint/prefer-nullish-coalescing": "off",
      "@typescript-eslint/restrict-template-expressions": ["error", { allowNumber: true }],
    },
  },
  restrictEnvAccess,
  {
    // Asymmetric matchers (expect.objectContaining, expect.any) are typed `any`; fake async sources need no await.
    files: ["**/*.test.ts", "**/__tests__/**", "**/__integration__/**", "**/*.spec.ts"],
    rules: { "@typescript-eslint/no-unsafe-assignment": "off", "@typescript-eslint/require-await": "off" },
  },
);
