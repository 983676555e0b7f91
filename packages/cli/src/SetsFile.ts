/**
 * An address set as a file: YAML holding the set's name, its description and its entries (each
 * a network and an optional note). `tenet sets export` writes one, `plan` and `apply` read it;
 * the API checks it (with the schema the server decodes it with).
 */
import type { AddressSet } from "@tenet/core"
import { Data, Effect } from "effect"
import * as Yaml from "yaml"

export interface SetsFile {
  readonly set: string
  readonly description: string | null
  readonly entries: ReadonlyArray<unknown>
}

export class BadSetsFile extends Data.TaggedError("BadSetsFile")<{ readonly message: string }> {}

/** The file of a set, entries in the set's order, null notes left out. */
export const render = (set: AddressSet.AddressSet): string =>
  `# Address set ${set.name}: \`tenet sets plan -f\` this file, then \`tenet sets apply\`.\n` +
  Yaml.stringify({
    set: set.name,
    ...(set.description === null ? {} : { description: set.description }),
    entries: set.entries.map((e) =>
      e.description === null ? { cidr: e.cidr } : { cidr: e.cidr, description: e.description }
    )
  })

const KEYS = new Set(["set", "description", "entries"])

export const parse = (text: string, source: string): Effect.Effect<SetsFile, BadSetsFile> =>
  Effect.try({
    try: () => Yaml.parse(text) as unknown,
    catch: (e) => new BadSetsFile({ message: `${source} is not YAML: ${e instanceof Error ? e.message : String(e)}` })
  }).pipe(
    Effect.flatMap((doc) => {
      if (typeof doc !== "object" || doc === null || !Array.isArray((doc as { entries?: unknown }).entries)) {
        return Effect.fail(new BadSetsFile({ message: `${source}: expected a mapping with a list under \`entries\`` }))
      }
      const fields = doc as { set?: unknown; description?: unknown; entries: Array<unknown> }
      const unknown = Object.keys(fields).filter((k) => !KEYS.has(k))
      if (unknown.length > 0) {
        return Effect.fail(
          new BadSetsFile({ message: `${source}: unknown key ${unknown.map((k) => `\`${k}\``).join(", ")}` })
        )
      }
      if (typeof fields.set !== "string") {
        return Effect.fail(new BadSetsFile({ message: `${source}: \`set\` must be the set's name` }))
      }
      if (fields.description !== undefined && fields.description !== null && typeof fields.description !== "string") {
        return Effect.fail(new BadSetsFile({ message: `${source}: \`description\` must be text` }))
      }
      return Effect.succeed({ set: fields.set, description: fields.description ?? null, entries: fields.entries })
    })
  )
