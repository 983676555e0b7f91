import { describe, expect, it } from "@effect/vitest"
import * as Changeset from "../src/Changeset.js"
import * as Gate from "../src/Gate.js"
import * as ReportDiff from "../src/ReportDiff.js"

const report = (body: string) =>
  `## API Report File for "@tenet/x"\n\n\`\`\`ts\n\nimport { Effect } from 'effect';\n\n${body}\n\n\`\`\`\n`

const RELEASED = report(
  [
    "// @public",
    "export const plan: (rules: ReadonlyArray<Rule>) => Plan;",
    "",
    "// @public (undocumented)",
    "export interface Rule {",
    "    readonly name: string;",
    "    readonly port: number;",
    "}",
    "",
    "// @public",
    "const etagOf_2: (rule: Rule) => string;"
  ].join("\n")
)

const changeset = (text: string, file = ".changeset/a.md") => Changeset.parse(file, text)

const versions = new Map([["@tenet/core", "0.2.0"], ["@tenet/server", "0.2.0"], ["@tenet/client", "1.1.0"]])

const openapi = { paths: { "/things": { get: { responses: { "200": {} } } } } }

const input = (
  generated: string,
  changesets: ReadonlyArray<Changeset.Changeset>,
  committed = generated
): Gate.Input => ({
  reports: [{ pkg: "@tenet/core", path: "packages/core/etc/core.api.md", generated, committed, released: RELEASED }],
  openapi: { generated: openapi, released: openapi },
  changesets,
  versions
})

const BREAKING = `---
"@tenet/core": minor
---

**Breaking**: \`Rule.port\` is now \`ports\`.

Migration: read \`rule.ports[0]\`.
`

describe("ReportDiff", () => {
  it("sees a member changed or a declaration removed, not one added or renumbered", () => {
    expect(ReportDiff.removed(RELEASED, RELEASED)).toEqual([])
    const added = RELEASED.replace(
      "    readonly port: number;",
      "    readonly port: number;\n    readonly note?: string;"
    )
    expect(ReportDiff.removed(RELEASED, added)).toEqual([])
    expect(ReportDiff.removed(RELEASED, RELEASED.replace("etagOf_2", "etagOf_3"))).toEqual([])
    expect(ReportDiff.removed(RELEASED, RELEASED.replace("port: number", "port: string"))).toEqual([
      "export interface Rule { … readonly port: number;"
    ])
    expect(ReportDiff.removed(RELEASED, RELEASED.replace(/\/\/ @public\nexport const plan.*\n/, ""))).toEqual([
      "export const plan: (rules: ReadonlyArray<Rule>) => Plan;"
    ])
  })
})

describe("Changeset", () => {
  it("reads the packages, their bumps and the summary", () => {
    const c = changeset(BREAKING)
    expect([...c.bumps]).toEqual([["@tenet/core", "minor"]])
    expect(Changeset.isBreaking(c)).toBe(true)
    expect(Changeset.breakingProblems(c, versions)).toEqual([])
  })

  it("refuses a front matter that is not package: bump", () => {
    expect(() => changeset("---\n\"@tenet/core\": huge\n---\n\nx")).toThrow(/patch\|minor\|major/)
    expect(() => changeset("no front matter")).toThrow(/front matter/)
  })

  it("holds a breaking change to a migration note and a bump its version needs", () => {
    const noMigration = changeset("---\n\"@tenet/core\": minor\n---\n\n**Breaking**: gone.")
    expect(Changeset.breakingProblems(noMigration, versions)).toEqual([
      ".changeset/a.md: a breaking change says what to do, in a paragraph beginning \"Migration:\""
    ])
    const patch = changeset(
      "---\n\"@tenet/core\": patch\n\"@tenet/client\": minor\n---\n\n**Breaking**: x\n\nMigration: y"
    )
    expect(Changeset.breakingProblems(patch, versions)).toEqual([
      ".changeset/a.md: a breaking change to @tenet/core 0.2.0 is a minor bump, not patch",
      ".changeset/a.md: a breaking change to @tenet/client 1.1.0 is a major bump, not minor"
    ])
  })
})

describe("Gate", () => {
  const changedType = RELEASED.replace("port: number", "port: string")
  const addition = RELEASED.replace(
    "    readonly port: number;",
    "    readonly port: number;\n    readonly note?: string;"
  )

  it("passes what the release had, with no changeset", () => {
    expect(Gate.decide(input(RELEASED, [])).failures).toEqual([])
  })

  it("fails a report that is not the build's", () => {
    expect(Gate.decide(input(addition, [changeset("---\n\"@tenet/core\": patch\n---\n\nNote.")], RELEASED)).failures)
      .toEqual([
        "packages/core/etc/core.api.md is not the public API of the build: run `pnpm contract:update` and commit the report"
      ])
  })

  it("asks an addition for a changeset, of any kind", () => {
    expect(Gate.decide(input(addition, [])).failures).toEqual([
      "@tenet/core's public API changed since the release with no changeset naming it: run `pnpm changeset`"
    ])
    expect(Gate.decide(input(addition, [changeset("---\n\"@tenet/core\": patch\n---\n\nA note.")])).failures).toEqual(
      []
    )
  })

  it("asks a removal for a breaking changeset that names it", () => {
    const withoutPlan = RELEASED.replace(/\/\/ @public\nexport const plan.*\n/, "")
    const plain = changeset("---\n\"@tenet/core\": minor\n---\n\n`plan` is gone.")
    expect(Gate.decide(input(withoutPlan, [plain])).failures).toEqual([
      "@tenet/core's public API removes what the release had, and no changeset naming @tenet/core marks it **Breaking**:\n    export const plan: (rules: ReadonlyArray<Rule>) => Plan;"
    ])
    expect(Gate.decide(input(withoutPlan, [changeset(BREAKING)])).failures).toEqual([
      "@tenet/core's public API removes `plan`, which no **Breaking** changeset naming @tenet/core mentions"
    ])
    expect(Gate.decide(input(withoutPlan, [changeset(BREAKING.replace("`Rule.port`", "`plan`"))])).failures).toEqual([])
  })

  it("asks a changed declaration for a changeset that names it", () => {
    const plain = changeset("---\n\"@tenet/core\": minor\n---\n\nPorts are strings.")
    expect(Gate.decide(input(changedType, [plain])).failures).toEqual([
      "@tenet/core's public API changes `Rule`, which no changeset naming @tenet/core mentions (mark it **Breaking** if callers must change)"
    ])
    expect(Gate.decide(input(changedType, [changeset(BREAKING)])).failures).toEqual([])
  })

  it("asks the same of the HTTP contract, of the server's changesets", () => {
    const released = { paths: { "/things": { get: { responses: { "200": {}, "404": {} } } } } }
    const generated = { paths: { "/things": { get: { responses: { "200": {} } } } } }
    const of = (changesets: ReadonlyArray<Changeset.Changeset>) =>
      Gate.decide({ ...input(RELEASED, changesets), openapi: { generated, released } }).failures
    expect(of([])).toEqual([
      "the HTTP contract changed since the release with no changeset naming @tenet/server: run `pnpm changeset`",
      "the HTTP contract removes what the release had, and no changeset naming @tenet/server marks it **Breaking**:\n    breaking GET /things 404: status no longer answered"
    ])
    const things = "---\n\"@tenet/server\": minor\n---\n\n**Breaking**: no more 404 from `GET /things`.\n\nMigration: x"
    expect(of([changeset(things)])).toEqual([])
  })

  it("asks each thing a change breaks to be named by a breaking changeset, not only one of them", () => {
    const both = changedType.replace(/\/\/ @public\nexport const plan.*\n/, "")
    expect(Gate.decide(input(both, [changeset(BREAKING)])).failures).toEqual([
      "@tenet/core's public API removes `plan`, which no **Breaking** changeset naming @tenet/core mentions"
    ])
    const released = {
      paths: { "/things": { get: { responses: { "200": {} } } }, "/others": { get: { responses: {} } } }
    }
    const generated = { paths: {} }
    const failures = Gate.decide({
      ...input(RELEASED, [
        changeset(BREAKING.replace("@tenet/core", "@tenet/server").replace("Rule.port", "GET /things"))
      ]),
      openapi: { generated, released }
    }).failures
    expect(failures).toEqual([
      "the HTTP contract removes `GET /others`, which no **Breaking** changeset naming @tenet/server mentions"
    ])
  })
})

describe("ReportDiff.normalize", () => {
  it("puts the members of a type argument's union in one order, and leaves the rest as it was", () => {
    const a =
      "const layer: (o: Options) => Layer.Layer<SqlClient_2 | Store_2 | PgClient, SqlError | Migrator.MigrationError, never>;"
    const b =
      "const layer: (o: Options) => Layer.Layer<Store_2 | PgClient | SqlClient_2, Migrator.MigrationError | SqlError, never>;"
    expect(ReportDiff.normalize(a)).toBe(ReportDiff.normalize(b))
    expect(ReportDiff.normalize(a)).toBe(
      "const layer: (o: Options) => Layer.Layer<PgClient | SqlClient_2 | Store_2, Migrator.MigrationError | SqlError, never>;"
    )
    const fn = "const f: Effect<(a: A) => B | C, never>;"
    expect(ReportDiff.normalize(fn)).toBe(fn)
    const nested = "type T = Map<string, Array<B | A>>;"
    expect(ReportDiff.normalize(nested)).toBe("type T = Map<string, Array<A | B>>;")
  })
})
