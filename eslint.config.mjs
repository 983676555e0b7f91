// Lint and format as the Effect monorepo does: typescript-eslint's recommended rules and
// dprint (through @effect/eslint-plugin) for formatting. `pnpm lint:fix` formats.
import * as effectEslint from "@effect/eslint-plugin"
import tseslint from "typescript-eslint"

/** Imports no package may make: Effect's internals, and another package's sources. */
const RESTRICTED = [{
  group: ["@effect/*/internal/*", "effect/internal/*"],
  message: "Effect's internal modules are not its API and change without notice"
}, {
  group: ["@tenet/*/src/*"],
  message: "import another package by its exports, as its users do"
}]

/**
 * `@tenet/core` in layers, bottom up: domain, rules, ports and the read model, the write path
 * (`changes`), observability, the use cases, the API. A folder imports nothing from a layer
 * above it. One exception stands until the kinds' registry moves to the bottom (issue 67):
 * `changes/Kind` and `changes/Change`, which ports and the read model still import.
 */
const CORE_ABOVE = {
  domain: ["rules", "ports", "readmodel", "changes", "observability", "usecases", "api"],
  rules: ["ports", "readmodel", "changes", "observability", "usecases", "api"],
  ports: ["readmodel", "observability", "usecases", "api"],
  readmodel: ["observability", "usecases", "api"],
  changes: ["observability", "usecases", "api"],
  observability: ["readmodel", "changes", "usecases", "api"],
  usecases: ["api"]
}

const coreLayers = Object.entries(CORE_ABOVE).map(([folder, above]) => ({
  files: [`packages/core/src/${folder}/**/*.ts`],
  rules: {
    "no-restricted-imports": ["error", {
      patterns: [...RESTRICTED, {
        group: above.map((layer) => `../${layer}/*`),
        message: `core/src/${folder} sits below ${above.join(", ")}: import downwards only`
      }]
    }]
  }
}))

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
      "no-restricted-imports": ["error", { patterns: RESTRICTED }]
    }
  },
  ...coreLayers,
  {
    // Tests, test doubles and the test cluster's controllers read JSON bodies as plain records.
    files: ["**/test/**/*.ts", "**/src/testing/FakeApiServer.ts", "**/src/testing/LocalCluster.ts"],
    rules: { "@typescript-eslint/no-explicit-any": "off" }
  }
)
