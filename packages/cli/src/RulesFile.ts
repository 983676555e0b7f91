/**
 * A VPC's rules as a file: YAML holding the VPC's name and the body of
 * `PUT /vpcs/{vpc_id}/security-rules` (`rules`, each the fields of a rule, optionally its
 * `id`). `tenet rules export` writes one, `plan` and `apply` read it; the API checks it. A file
 * ending in `.csv` is read as the API's CSV export of a VPC's rules (`Accept: text/csv`), edited
 * in a spreadsheet perhaps: its rows are the rules, by id, and it names no VPC (`--vpc` does).
 */
import type { SecurityRule } from "@tenet/core"
import { Declaration, Exports } from "@tenet/core"
import { Data, Effect, Either } from "effect"
import * as Yaml from "yaml"

export interface RulesFile {
  readonly vpc: string | undefined
  readonly rules: ReadonlyArray<Record<string, unknown>>
}

export class BadRulesFile extends Data.TaggedError("BadRulesFile")<{ readonly message: string }> {}

const FIELDS = ["id", ...Declaration.FIELDS] as const

/**
 * The file of a VPC's rules, in evaluation order, null fields left out, an address set named by
 * its name (`setNames`: the tenant's sets' names by id). Rules are matched by name when applied;
 * a name the VPC has more than once keeps its ids, so each stays the rule it is.
 */
export const render = (
  vpc: string,
  rules: ReadonlyArray<SecurityRule.SecurityRule>,
  setNames: ReadonlyMap<string, string> = new Map()
): string => {
  const counts = new Map<string, number>()
  for (const r of rules) counts.set(r.name, (counts.get(r.name) ?? 0) + 1)
  const items = rules.map((rule) =>
    Object.fromEntries(
      FIELDS.flatMap((field): Array<readonly [string, unknown]> => {
        if (field === "id") return counts.get(rule.name)! > 1 ? [[field, rule.id]] : []
        const value: unknown = rule[field]
        if (field === "remote_address_set_id" && value !== null && setNames.has(value as string)) {
          return [["remote_address_set_name", setNames.get(value as string)]]
        }
        return value === null ? [] : [[field, value]]
      })
    )
  )
  return `# The security rules of VPC ${vpc}: \`tenet rules plan -f\` this file, then \`tenet rules apply\`.\n` +
    Yaml.stringify({ vpc, rules: items })
}

export const parse = (text: string, source: string): Effect.Effect<RulesFile, BadRulesFile> =>
  source.toLowerCase().endsWith(".csv") ? parseCsv(text, source) : parseYaml(text, source)

const parseCsv = (text: string, source: string): Effect.Effect<RulesFile, BadRulesFile> =>
  Either.match(Exports.rulesFromCsv(text), {
    onLeft: (problem) => Effect.fail(new BadRulesFile({ message: `${source} is not a rules CSV: ${problem}` })),
    onRight: (rules) => Effect.succeed({ vpc: undefined, rules })
  })

const parseYaml = (text: string, source: string): Effect.Effect<RulesFile, BadRulesFile> =>
  Effect.try({
    try: () => Yaml.parse(text) as unknown,
    catch: (e) => new BadRulesFile({ message: `${source} is not YAML: ${e instanceof Error ? e.message : String(e)}` })
  }).pipe(
    Effect.flatMap((doc) => {
      if (typeof doc !== "object" || doc === null || !Array.isArray((doc as { rules?: unknown }).rules)) {
        return Effect.fail(new BadRulesFile({ message: `${source}: expected a mapping with a list under \`rules\`` }))
      }
      const { rules, vpc, ...rest } = doc as { rules: Array<Record<string, unknown>>; vpc?: unknown }
      const unknown = Object.keys(rest)
      if (unknown.length > 0) {
        return Effect.fail(
          new BadRulesFile({ message: `${source}: unknown key ${unknown.map((k) => `\`${k}\``).join(", ")}` })
        )
      }
      if (vpc !== undefined && typeof vpc !== "string") {
        return Effect.fail(new BadRulesFile({ message: `${source}: \`vpc\` must be a VPC's name` }))
      }
      return Effect.succeed({ vpc, rules })
    })
  )
