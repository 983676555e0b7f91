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
      "@typescript-eslint/no-empty-object-type": "off",
      // Casts that switch the type checker off, and reaching into another package's internals:
      // each one is a place a dependency's upgrade breaks silently. The few that are justified
      // say why inline (`eslint-disable-next-line ... -- why`).
      "no-restricted-syntax": ["error", {
        selector: "TSAsExpression[typeAnnotation.type='TSAnyKeyword']",
        message: "`as any` switches type checking off; narrow the value or type it properly"
      }, {
        selector: "TSAsExpression[expression.type='TSAsExpression'][expression.typeAnnotation.type='TSUnknownKeyword']",
        message: "`as unknown as` claims a type the checker cannot see; narrow the value or type it properly"
      }],
      "no-restricted-imports": ["error", {
        patterns: [{
          group: ["@effect/*/internal/*", "effect/internal/*"],
          message: "Effect's internal modules are not its API and change without notice"
        }, {
          group: ["@tenet/*/src/*"],
          message: "import another package by its exports, as its users do"
        }]
      }]
    }
  },
  {
    // Tests, test doubles and the test cluster's controllers read JSON bodies as plain records.
    files: ["**/test/**/*.ts", "**/src/testing/FakeApiServer.ts", "**/src/testing/LocalCluster.ts"],
    rules: { "@typescript-eslint/no-explicit-any": "off" }
  }
)
