// Lint and format as the Effect monorepo does: typescript-eslint's recommended rules and
// dprint (through @effect/eslint-plugin) for formatting. `pnpm lint:fix` formats.
import * as effectEslint from "@effect/eslint-plugin"
import * as fs from "node:fs"
import * as path from "node:path"
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
 * `@tenet/core` in layers, bottom up: domain, rules (pure verdicts over the domain), kinds (the
 * registry of what a tenant owns and changes to it: a kind's view speaks the rules' vocabulary),
 * ports and the read model, the write path (`changes`), observability, the kinds' resources (a folder
 * per kind: strategy, service, its endpoints' group) beside the use cases that span kinds, the API.
 * The HTTP contract's shared parts (`contract`: auth, audit annotations, strict payloads) stand
 * beside kinds up to observability: they import domain and rules, and only what declares endpoints
 * imports them.
 * A folder imports nothing from a layer above it; `tenet/no-import-cycle` refuses a circle within one.
 */
const CORE_ABOVE = {
  domain: [
    "rules",
    "contract",
    "kinds",
    "ports",
    "readmodel",
    "changes",
    "observability",
    "resources",
    "usecases",
    "api"
  ],
  rules: ["contract", "kinds", "ports", "readmodel", "changes", "observability", "resources", "usecases", "api"],
  contract: ["kinds", "ports", "readmodel", "changes", "observability", "resources", "usecases", "api"],
  kinds: ["contract", "ports", "readmodel", "changes", "observability", "resources", "usecases", "api"],
  ports: ["contract", "readmodel", "changes", "observability", "resources", "usecases", "api"],
  readmodel: ["contract", "changes", "observability", "resources", "usecases", "api"],
  changes: ["contract", "observability", "resources", "usecases", "api"],
  observability: ["contract", "readmodel", "changes", "resources", "usecases", "api"],
  resources: ["api"],
  usecases: ["api"]
}

const coreLayers = Object.entries(CORE_ABOVE).map(([folder, above]) => ({
  files: [`packages/core/src/${folder}/**/*.ts`],
  rules: {
    "no-restricted-imports": ["error", {
      patterns: [...RESTRICTED, {
        // A folder's modules sit one level down (`usecases/X.ts`) or two (`resources/<kind>/X.ts`).
        group: above.flatMap((layer) => [`../${layer}/*`, `../../${layer}/*`]),
        message: `core/src/${folder} sits below ${above.join(", ")}: import downwards only`
      }]
    }]
  }
}))

/** A module's relative imports (type-only ones too: a circle of types is a circle of concepts), as paths. */
const importsOf = (() => {
  const cache = new Map()
  return (file) => {
    let found = cache.get(file)
    if (found === undefined) {
      const text = fs.existsSync(file) ? fs.readFileSync(file, "utf8") : ""
      // A statement at the start of a line: `import`/`export`, then a binding list, a namespace,
      // a name or nothing (a side-effect import), then its module; never text in a comment or string.
      const statement =
        /^(?:import|export)(?:\s+type)?\s*(?:(?:\{[^}]*\}|\*(?:\s+as\s+\w+)?|\w+)(?:\s*,\s*(?:\{[^}]*\}|\*\s+as\s+\w+))?\s*from\s*)?"(\.{1,2}\/[^"]+)"/gm
      found = [...text.matchAll(statement)].map((m) => path.resolve(path.dirname(file), m[1].replace(/\.js$/, ".ts")))
      cache.set(file, found)
    }
    return found
  }
})()

/** Refuses an import that leads back to the importing module: the layers say where a module sits, this that none sits above itself. */
const noImportCycle = {
  meta: { type: "problem", schema: [], messages: { cycle: "import circle: {{cycle}}" } },
  create: (context) => {
    const check = (node) => {
      if (node.source === null || node.source === undefined || !node.source.value.startsWith(".")) return
      const self = context.filename
      const start = path.resolve(path.dirname(self), node.source.value.replace(/\.js$/, ".ts"))
      const seen = new Set()
      const walk = (file, trail) => {
        if (file === self) return trail
        if (seen.has(file)) return undefined
        seen.add(file)
        for (const next of importsOf(file)) {
          const found = walk(next, [...trail, next])
          if (found !== undefined) return found
        }
        return undefined
      }
      const cycle = walk(start, [start])
      if (cycle !== undefined) {
        const root = path.dirname(self)
        context.report({
          node,
          messageId: "cycle",
          data: { cycle: [self, ...cycle].map((f) => path.relative(root, f) || path.basename(f)).join(" -> ") }
        })
      }
    }
    return { ImportDeclaration: check, ExportNamedDeclaration: check, ExportAllDeclaration: check }
  }
}

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
  {
    files: ["packages/core/src/**/*.ts"],
    plugins: { tenet: { rules: { "no-import-cycle": noImportCycle } } },
    rules: { "tenet/no-import-cycle": "error" }
  },
  ...coreLayers,
  {
    // Tests, test doubles and the test cluster's controllers read JSON bodies as plain records.
    files: ["**/test/**/*.ts", "**/src/testing/FakeApiServer.ts", "**/src/testing/LocalCluster.ts"],
    rules: { "@typescript-eslint/no-explicit-any": "off" }
  }
)
