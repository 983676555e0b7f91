// Lint and format as the Effect monorepo does: typescript-eslint's recommended rules and
// dprint (through @effect/eslint-plugin) for formatting. `pnpm lint:fix` formats.
import * as effectEslint from "@effect/eslint-plugin"
import tseslint from "typescript-eslint"

export default tseslint.config(
  { ignores: ["**/dist/**", "**/build/**", "**/node_modules/**", "**/.tenet/**"] },
  ...tseslint.configs.recommended,
  ...effectEslint.configs.dprint,
  {
    languageOptions: { parserOptions: { ecmaVersion: 2022, sourceType: "module" } },
    rules: {
      "@effect/dprint": ["error", {
        config: {
          indentWidth: 2,
          lineWidth: 120,
          semiColons: "asi",
          quoteStyle: "alwaysDouble",
          trailingCommas: "never",
          operatorPosition: "maintain",
          "arrowFunction.useParentheses": "force"
        }
      }],
      "@typescript-eslint/no-unused-vars": ["error", {
        argsIgnorePattern: "^_",
        varsIgnorePattern: "^_",
        destructuredArrayIgnorePattern: "^_"
      }],
      "@typescript-eslint/no-explicit-any": "error",
      "@typescript-eslint/consistent-type-imports": "error",
      "@typescript-eslint/no-namespace": "off",
      "@typescript-eslint/no-empty-object-type": "off"
    }
  },
  {
    // Tests, test doubles and the test cluster's controllers read JSON bodies as plain records.
    files: ["**/test/**/*.ts", "**/src/testing/FakeApiServer.ts", "**/src/testing/LocalCluster.ts"],
    rules: { "@typescript-eslint/no-explicit-any": "off" }
  }
)
