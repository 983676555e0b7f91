/**
 * `tenet`: a VPC's security rules as code. `login` keeps a session; `rules export` writes a
 * VPC's rules as a file, `rules plan` shows what applying a file would change (exit 0: no
 * change, 2: changes, 1: an error or a guardrail it would break, as `terraform plan
 * -detailed-exitcode`), `rules apply` makes the VPC's rules exactly the file's; `sets export`,
 * `plan` and `apply` do the same for an address set, its plan showing the edit's impact in every
 * VPC that uses it; `guardrails check`, `explain` and `reach` answer what holds and what gets where. `--output json` prints
 * the API's answer instead of text. Every call goes through the typed client.
 */
import { Command, HelpDoc, Options, Prompt, ValidationError } from "@effect/cli"
import { FetchHttpClient, FileSystem } from "@effect/platform"
import { TenetClient } from "@tenet/client"
import {
  AddressSet,
  Api,
  Errors,
  Etag,
  FlowExplanation,
  Guardrail,
  InputProblems,
  ReachabilityMatrix,
  SecurityRule
} from "@tenet/core"
import { Chunk, Config, Console, Data, Effect, Option, Redacted, Schema, Stream } from "effect"
import type { Console as ConsoleService } from "effect"
import { createRequire } from "node:module"
import * as Credentials from "./Credentials.js"
import * as Render from "./Render.js"
import * as RulesFile from "./RulesFile.js"
import * as SetsFile from "./SetsFile.js"

/** The process's exit code once the command ends (0 unless set). */
const exitWith = (code: number) =>
  Effect.sync(() => {
    process.exitCode = code
  })

/**
 * An option that takes one of `values`, its refusal naming the option and what it got
 * (`--protocol: must be one of tcp, udp, icmp; got "TCP"; did you mean "tcp"?`), where
 * `Options.choice` names neither.
 */
const oneOf = <const A extends string>(name: string, values: ReadonlyArray<A>) =>
  Options.text(name).pipe(
    Options.mapEffect((given) => {
      const found = values.find((v) => v === given)
      if (found !== undefined) return Effect.succeed(found)
      const meant = values.find((v) => v.toLowerCase() === given.toLowerCase())
      return Effect.fail(ValidationError.invalidValue(HelpDoc.p(
        `--${name}: must be one of ${values.join(", ")}; got ${JSON.stringify(given)}${
          meant === undefined ? "" : `; did you mean ${JSON.stringify(meant)}?`
        }`
      )))
    })
  )

const output = oneOf("output", ["text", "json"]).pipe(
  Options.withAlias("o"),
  Options.withDefault("text" as const),
  Options.withDescription("text (default) or json: the API's answer as it is")
)
const vpcOption = Options.text("vpc").pipe(Options.withDescription("The VPC's name (or id)"))
const fileOption = Options.file("file", { exists: "yes" }).pipe(
  Options.withAlias("f"),
  Options.withDescription(
    "A rules file: YAML, as `tenet rules export` writes; or, ending in .csv, the API's CSV export of a VPC's rules"
  )
)

/** The answer as JSON, as the API wrote it. */
const printJson = <A, I>(schema: Schema.Schema<A, I>, value: A) =>
  Console.log(JSON.stringify(Schema.encodeSync(schema)(value), null, 2))

/** The client of the kept session. */
const client = Effect.flatMap(
  Credentials.load,
  (session) =>
    TenetClient.make({ baseUrl: session.url, tenantToken: session.token }).pipe(Effect.provide(FetchHttpClient.layer))
)

type Client = Effect.Effect.Success<typeof client>

class UnknownVpc extends Data.TaggedError("UnknownVpc")<{ readonly message: string }> {}

class AmbiguousName extends Data.TaggedError("AmbiguousName")<{ readonly message: string }> {}

/** A VPC of the caller's, by name or id. */
const vpcNamed = (api: Client, name: string) =>
  Effect.flatMap(api.vpcs.list(), (vpcs) => {
    const found = vpcs.find((v) => v.name === name || v.id === name)
    return found === undefined
      ? Effect.fail(new UnknownVpc({ message: `you have no VPC named ${name}` }))
      : Effect.succeed(found)
  })

/** Names of everything an answer may name by id: VPCs, subnets, pods, address sets. */
const namesOf = (api: Client) =>
  Effect.map(
    Effect.all([api.vpcs.list(), api.subnets.list(), api.pods.list(), api.addressSets.list({ urlParams: {} })], {
      concurrency: 4
    }),
    ([vpcs, subnets, pods, sets]) =>
      new Map<string, string>([...vpcs, ...subnets, ...pods, ...sets].map((r) => [r.id as string, r.name]))
  )

class UnknownSet extends Data.TaggedError("UnknownSet")<{ readonly message: string }> {}

/** An address set of the caller's, by name or id, if there is one. */
const setNamed = (api: Client, name: string) =>
  Effect.map(
    api.addressSets.list({ urlParams: {} }),
    (sets) => Option.fromNullable(sets.find((s) => s.name === name || s.id === name))
  )

const login = Command.make(
  "login",
  {
    url: Options.text("url").pipe(Options.withDescription("Where the server is, e.g. http://127.0.0.1:8080")),
    tenant: Options.text("tenant").pipe(Options.withDescription("The tenant's name")),
    password: Options.redacted("password").pipe(
      Options.withFallbackConfig(Config.redacted("TENET_PASSWORD")),
      Options.optional,
      Options.withDescription("The tenant's password (else TENET_PASSWORD, else asked)")
    )
  },
  ({ password, tenant, url }) =>
    Effect.gen(function*() {
      const secret = Option.isSome(password)
        ? password.value
        : yield* Prompt.password({ message: `Password of tenant ${tenant}` })
      const anonymous = yield* TenetClient.make({ baseUrl: url }).pipe(Effect.provide(FetchHttpClient.layer))
      const session = yield* anonymous.tenantIdentity.login({
        payload: { name: tenant, password: Redacted.value(secret) }
      })
      const kept = yield* Credentials.save({ url, tenant, tenant_id: session.id, token: session.api_token })
      yield* Console.log(`Logged in to ${url} as tenant ${tenant}; the session is in ${kept}.`)
    })
).pipe(Command.withDescription("Log in as a tenant and keep the session (mode 0600) for the other commands"))

const exportRules = Command.make(
  "export",
  { vpc: vpcOption, output },
  ({ output, vpc }) =>
    Effect.gen(function*() {
      const api = yield* client
      const found = yield* vpcNamed(api, vpc)
      const list = yield* api.securityRules.list({ urlParams: { vpc_id: found.id } })
      if (output === "json") {
        return yield* Console.log(JSON.stringify(
          {
            rules: list.rules.map((r) => {
              // A rules file declares what should hold, not the version it was read at.
              const { created_at: _c, etag: _e, status: _s, updated_at: _u, vpc_id: _v, ...rest } = Schema.encodeSync(
                SecurityRule.SecurityRule
              )(r)
              return rest
            })
          },
          null,
          2
        ))
      }
      const sets = yield* api.addressSets.list({ urlParams: {} })
      yield* Console.log(RulesFile.render(found.name, list.rules, new Map(sets.map((s) => [s.id as string, s.name]))))
    })
).pipe(Command.withDescription("Print a VPC's rules as a rules file (YAML: the body of PUT /vpcs/{id}/security-rules)"))

/** The file's rules, for the VPC it names (or `--vpc`). */
const declared = (api: Client, file: string, vpc: Option.Option<string>) =>
  Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    const parsed = yield* RulesFile.parse(yield* fs.readFileString(file), file)
    const name = Option.getOrElse(vpc, () => parsed.vpc)
    if (name === undefined) {
      const how = file.toLowerCase().endsWith(".csv") ? "pass --vpc" : "add `vpc:` or pass --vpc"
      return yield* new RulesFile.BadRulesFile({ message: `${file} names no VPC: ${how}` })
    }
    const found = yield* vpcNamed(api, name)
    // Checked with the schema the server decodes it with, every problem named as the API names it.
    const schema = Api.Payloads["securityRules.replace"]
    const body = yield* Schema.decodeUnknown(schema)({ rules: parsed.rules }).pipe(
      Effect.mapError((e) => Errors.refusal("RuleValidation", InputProblems.fromParseError(e)))
    )
    return { vpc: found, payload: Schema.encodeSync(schema)(body) }
  })

const planRules = Command.make(
  "plan",
  { file: fileOption, vpc: Options.optional(vpcOption), output },
  ({ file, output, vpc }) =>
    Effect.gen(function*() {
      const api = yield* client
      const { payload, vpc: target } = yield* declared(api, file, vpc)
      const before = yield* api.securityRules.list({ urlParams: { vpc_id: target.id } })
      const planned = yield* api.securityRules.replace({
        path: { vpc_id: target.id },
        payload,
        urlParams: { dry_run: true }
      })
      if (output === "json") yield* printJson(SecurityRule.RulesPlan, planned)
      else yield* Console.log(Render.plan(target.name, planned, before.rules, yield* namesOf(api)))
      const changes = planned.created.length + planned.updated.length + planned.deleted.length
      yield* exitWith(planned.impact.violations.length > 0 ? 1 : changes > 0 ? 2 : 0)
    })
).pipe(
  Command.withDescription(
    "Show what applying a rules file would change, with its impact. Exit 0: no change; 2: changes; 1: an error or a guardrail it would break"
  )
)

const applyRules = Command.make(
  "apply",
  {
    file: fileOption,
    vpc: Options.optional(vpcOption),
    ifMatch: Options.text("if-match").pipe(
      Options.optional,
      Options.withDescription("Apply only while the rules are at this ETag (the one a plan printed; quotes optional)")
    ),
    output
  },
  ({ file, ifMatch, output, vpc }) =>
    Effect.gen(function*() {
      const api = yield* client
      const { payload, vpc: target } = yield* declared(api, file, vpc)
      const before = yield* api.securityRules.list({ urlParams: { vpc_id: target.id } })
      const applied = yield* api.securityRules.replace({
        path: { vpc_id: target.id },
        payload,
        ...(Option.isSome(ifMatch) ? { headers: { "if-match": Etag.quoted(ifMatch.value) } } : {})
      })
      if (output === "json") yield* printJson(SecurityRule.RulesReplaced, applied)
      else yield* Console.log(Render.plan(target.name, applied, before.rules, yield* namesOf(api)))
    })
).pipe(Command.withDescription("Make the VPC's rules exactly the file's, in one change"))

const rules = Command.make("rules").pipe(
  Command.withSubcommands([exportRules, planRules, applyRules]),
  Command.withDescription("A VPC's security rules as code")
)

const setOption = Options.text("set").pipe(Options.withDescription("The address set's name (or id)"))
const setFileOption = Options.file("file", { exists: "yes" }).pipe(
  Options.withAlias("f"),
  Options.withDescription("An address set file (YAML), as `tenet sets export` writes")
)

const exportSet = Command.make(
  "export",
  { set: setOption, output },
  ({ output, set }) =>
    Effect.gen(function*() {
      const api = yield* client
      const found = yield* setNamed(api, set)
      if (Option.isNone(found)) return yield* new UnknownSet({ message: `you have no address set named ${set}` })
      if (output === "json") return yield* printJson(AddressSet.AddressSet, found.value)
      yield* Console.log(SetsFile.render(found.value))
    })
).pipe(Command.withDescription("Print an address set as a file (YAML: its name, description and entries)"))

/** A body checked with the schema the server decodes it with, every problem named as the API names it. */
const checked = <A, I>(schema: Schema.Schema<A, I>, body: unknown) =>
  Schema.decodeUnknown(schema)(body).pipe(
    Effect.mapError((e) => Errors.refusal("RuleValidation", InputProblems.fromParseError(e)))
  )

/** The file's set: its name, and the body of its edit (or its create, when it is new). */
const declaredSet = (file: string) =>
  Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    const parsed = yield* SetsFile.parse(yield* fs.readFileString(file), file)
    const fields = { description: parsed.description, entries: parsed.entries }
    return {
      name: parsed.set,
      payload: yield* checked(Api.Payloads["addressSets.update"], fields),
      creating: yield* checked(Api.Payloads["addressSets.create"], { name: parsed.set, ...fields })
    }
  })

const planSet = Command.make(
  "plan",
  { file: setFileOption, output },
  ({ file, output }) =>
    Effect.gen(function*() {
      const api = yield* client
      const { creating, name, payload } = yield* declaredSet(file)
      const found = yield* setNamed(api, name)
      if (Option.isNone(found)) {
        if (output === "json") {
          yield* Console.log(JSON.stringify(
            { dry_run: true, create: Schema.encodeSync(Api.Payloads["addressSets.create"])(creating) },
            null,
            2
          ))
        } else {
          yield* Console.log(
            `Plan for address set ${name}:\n  + create it with ${
              payload.entries?.length ?? 0
            } entries (no rule names it yet)\n\nPlan: the set is created.`
          )
        }
        return yield* exitWith(2)
      }
      const planned = yield* api.addressSets.update({
        path: { address_set_id: found.value.id },
        urlParams: { dry_run: true },
        headers: {},
        payload
      }) as Effect.Effect<AddressSet.AddressSetPlan>
      if (output === "json") yield* printJson(AddressSet.AddressSetPlan, planned)
      else yield* Console.log(Render.setPlan(found.value, planned, yield* namesOf(api)))
      const broken = planned.vpcs.some((v) => v.violations.length > 0)
      yield* exitWith(broken ? 1 : Render.setChanges(found.value, planned.address_set) ? 2 : 0)
    })
).pipe(
  Command.withDescription(
    "Show what applying an address set file would change, with its impact in every VPC that uses the set. Exit 0: no change; 2: changes; 1: an error or a guardrail it would break"
  )
)

const applySet = Command.make(
  "apply",
  {
    file: setFileOption,
    ifMatch: Options.text("if-match").pipe(
      Options.optional,
      Options.withDescription("Apply only while the set is at this ETag (the one a plan printed; quotes optional)")
    ),
    output
  },
  ({ file, ifMatch, output }) =>
    Effect.gen(function*() {
      const api = yield* client
      const { creating, name, payload } = yield* declaredSet(file)
      const found = yield* setNamed(api, name)
      const saved = Option.isNone(found)
        ? yield* api.addressSets.create({ payload: creating })
        : (yield* api.addressSets.update({
          path: { address_set_id: found.value.id },
          urlParams: {},
          headers: Option.isSome(ifMatch) ? { "if-match": Etag.quoted(ifMatch.value) } : {},
          payload
        })) as AddressSet.AddressSetChanged
      if (output === "json") {
        return yield* printJson(Schema.Union(AddressSet.AddressSetChanged, AddressSet.AddressSet), saved)
      }
      const usage = yield* api.addressSets.usage({ path: { address_set_id: saved.id } })
      const vpcs = new Set(usage.rules.map((r) => r.vpc_id)).size
      yield* Console.log(
        `${Option.isNone(found) ? "Created" : "Applied to"} address set ${saved.name} (now at ${saved.etag}):\n${
          [
            ...Render.entriesDiff(Option.match(found, { onNone: () => [], onSome: (s) => s.entries }), saved.entries),
            ""
          ]
            .join("\n")
        }\nApplied: ${saved.entries.length} entries; ${usage.rules.length} rule(s) in ${vpcs} VPC(s) use it${
          // A new set no rule names yet has nothing to be in force with.
          saved instanceof AddressSet.AddressSetChanged ? `; ${Render.inForce(saved)}` : ""}.`
      )
    })
).pipe(Command.withDescription("Make the address set exactly the file's (created when new), with every VPC using it"))

const sets = Command.make("sets").pipe(
  Command.withSubcommands([exportSet, planSet, applySet]),
  Command.withDescription("Address sets as code: named lists of networks rules use as their remote")
)

const check = Command.make(
  "check",
  { vpc: vpcOption, file: Options.optional(fileOption), output },
  ({ file, output, vpc }) =>
    Effect.gen(function*() {
      const api = yield* client
      const names = yield* namesOf(api)
      if (Option.isNone(file)) {
        const found = yield* vpcNamed(api, vpc)
        const list = yield* api.guardrails.list({ path: { vpc_id: found.id } })
        if (output === "json") return yield* printJson(Schema.Array(Guardrail.Guardrail), list)
        return yield* Console.log(
          `${
            Render.guardrails(list, names)
          }\n${list.length} guardrail(s) of VPC ${found.name} hold: every change is checked against them.`
        )
      }
      const { payload, vpc: target } = yield* declared(api, file.value, Option.some(vpc))
      const planned = yield* api.securityRules.replace({
        path: { vpc_id: target.id },
        payload,
        urlParams: { dry_run: true }
      })
      const violations = planned.impact.violations
      if (output === "json") yield* printJson(Schema.Array(SecurityRule.GuardrailViolation), violations)
      else {
        yield* Console.log(
          violations.length === 0
            ? `${file.value} keeps every guardrail of VPC ${target.name}.`
            : `${file.value} would break:\n${violations.map((v) => `  ${Render.violation(v, names)}`).join("\n")}`
        )
      }
      yield* exitWith(violations.length > 0 ? 1 : 0)
    })
).pipe(
  Command.withDescription("The VPC's guardrails; with -f, whether a rules file keeps them (exit 1 when it would not)")
)

const guardrails = Command.make("guardrails").pipe(
  Command.withSubcommands([check]),
  Command.withDescription("Invariants on verdicts")
)

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

const explain = Command.make(
  "explain",
  {
    vpc: vpcOption,
    from: Options.text("from").pipe(
      Options.withDescription("A pod, subnet or VPC (name or id), internet, or an IPv4 address")
    ),
    to: Options.text("to").pipe(Options.withDescription("As --from")),
    protocol: oneOf("protocol", ["tcp", "udp", "icmp"]),
    port: Options.integer("port").pipe(Options.optional),
    output
  },
  ({ from, output, port, protocol, to, vpc }) =>
    Effect.gen(function*() {
      const api = yield* client
      const found = yield* vpcNamed(api, vpc)
      const [vpcs, subnets, pods] = yield* Effect.all([api.vpcs.list(), api.subnets.list(), api.pods.list()])
      const vpcName = new Map(vpcs.map((v) => [v.id as string, v.name]))
      const endpoints = [
        ...pods.map((p) => ({ id: p.id as string, name: p.name as string, kind: "pod", vpc: p.vpc_id as string })),
        ...subnets.map((s) => ({
          id: s.id as string,
          name: s.name as string,
          kind: "subnet",
          vpc: s.vpc_id as string
        })),
        ...vpcs.map((v) => ({ id: v.id as string, name: v.name as string, kind: "VPC", vpc: v.id as string }))
      ]
      // A name is looked up among the pods, subnets and VPCs of every VPC of the tenant: the
      // one in this VPC when there is exactly one there, else the only one anywhere.
      const idOf = (end: string) => {
        if (end === "internet" || UUID.test(end) || /^\d+\.\d+\.\d+\.\d+$/.test(end)) return Effect.succeed(end)
        const named = endpoints.filter((e) => e.name === end)
        const here = named.filter((e) => e.kind !== "VPC" && e.vpc === found.id)
        const only = here.length === 1 ? here : named
        if (only.length <= 1) return Effect.succeed(only[0]?.id ?? end)
        return Effect.fail(
          new AmbiguousName({
            message: `'${end}' names ${only.length} things: ${
              only.map((e) => e.kind === "VPC" ? `VPC ${e.name}` : `${e.kind} in VPC ${vpcName.get(e.vpc)}`).join(", ")
            }; give the id instead`
          })
        )
      }
      const answer = yield* api.vpcs.explain({
        path: { vpc_id: found.id },
        urlParams: {
          from: yield* idOf(from),
          to: yield* idOf(to),
          protocol,
          ...(Option.isSome(port) ? { port: port.value } : {})
        }
      })
      if (output === "json") return yield* printJson(FlowExplanation.FlowExplanation, answer)
      yield* Console.log(
        Render.explanation(answer, yield* namesOf(api), new Map(subnets.map((s) => [s.id as string, s.cidr as string])))
      )
    })
).pipe(Command.withDescription("Would this flow get through, end to end, and what decides each side?"))

const reach = Command.make(
  "reach",
  {
    vpc: vpcOption,
    pods: Options.boolean("pods").pipe(
      Options.withDescription("Each pod as an endpoint too (the subnets only without it)")
    ),
    endpoint: Options.optional(Options.text("endpoint")).pipe(
      Options.withDescription("Only the pairs one endpoint is an end of: a subnet, pod or VPC id, or internet")
    ),
    output
  },
  ({ endpoint, output, pods, vpc }) =>
    Effect.gen(function*() {
      const api = yield* client
      const found = yield* vpcNamed(api, vpc)
      const detail = pods ? "pods" as const : "subnets" as const
      // Every page, in order: the server answers a bounded page at a time.
      const pairs = yield* Stream.runCollect(api.pages.stream("vpcs.reachability", {
        path: { vpc_id: found.id },
        urlParams: { detail, ...Option.match(endpoint, { onNone: () => ({}), onSome: (e) => ({ endpoint: e }) }) }
      }, { limit: ReachabilityMatrix.MAX_PAIRS }))
      const matrix = ReachabilityMatrix.ReachabilityMatrix.make({
        vpc_id: found.id,
        detail,
        pairs: Chunk.toReadonlyArray(pairs)
      })
      if (output === "json") return yield* printJson(ReachabilityMatrix.ReachabilityMatrix, matrix)
      yield* Console.log(Render.reachability(matrix))
    })
).pipe(
  Command.withDescription(
    "What gets where: each pair of the VPC's subnets (--pods: and pods), the internet and other VPCs, and the ports " +
      "open end to end"
  )
)

export const tenet = Command.make("tenet").pipe(
  Command.withSubcommands([login, rules, sets, guardrails, explain, reach]),
  Command.withDescription("Tenet's security rules as code: plan, apply, address sets, guardrails, explain, reach")
)

/**
 * A failure in words, as the API stated it (every field of bad input named), each VPC it names
 * by id named by its name where `vpcs` (ids to names) has it.
 */
export const describe = (error: unknown, vpcs: ReadonlyMap<string, string> = new Map()): string =>
  Render.vpcsNamed(stated(error), vpcs)

const stated = (error: unknown): string => {
  const e = error as {
    readonly _tag?: string
    readonly message?: string
    readonly detail?: unknown
    readonly errors?: ReadonlyArray<{ field: string; message: string }>
    readonly violations?: ReadonlyArray<SecurityRule.GuardrailViolation>
  }
  if (e.errors !== undefined) return e.errors.map((p) => `${p.field}: ${p.message}`).join("\n")
  if (e._tag === "Unauthorized") {
    return `${e.message ?? "not logged in"}: the session is no longer valid (a rotated token?); run \`tenet login\``
  }
  if (e.violations !== undefined) {
    return `${e.message}\n${e.violations.map((v) => `  ${Render.violation(v, new Map())}`).join("\n")}`
  }
  return e.message ?? String(error)
}

/** Whether to print colour: on a terminal only, and never with `NO_COLOR` set (no-color.org). */
export const colourful = (isTTY: boolean | undefined, env: Readonly<Record<string, string | undefined>>) =>
  isTTY === true && (env.NO_COLOR ?? "") === ""

const ANSI = /\u001b\[[0-9;]*[A-Za-z]/g

const plain = (value: unknown) => (typeof value === "string" ? value.replace(ANSI, "") : value)

/** A console that writes what it is given without its colours (`@effect/cli`'s help has them). */
const withoutColour = (console: ConsoleService.Console): ConsoleService.Console => ({
  ...console,
  log: (...args) => console.log(...args.map(plain)),
  error: (...args) => console.error(...args.map(plain)),
  info: (...args) => console.info(...args.map(plain)),
  warn: (...args) => console.warn(...args.map(plain))
})

/**
 * The caller's VPCs' names by id, for a failure that names VPCs by id: none when they cannot be
 * read (not logged in, the server away or slow), and the failure is said with the ids.
 */
const vpcNames = Effect.flatMap(client, (api) => api.vpcs.list()).pipe(
  Effect.map((vpcs) => new Map(vpcs.map((v) => [v.id as string, v.name as string]))),
  Effect.timeout("5 seconds"),
  Effect.orElseSucceed(() => new Map<string, string>())
)

/** A failure printed, with the VPCs it names by id named by their names (as plans name them). */
const report = (error: unknown) =>
  Effect.gen(function*() {
    const vpcs = Render.namesVpcById(describe(error)) ? yield* vpcNames : new Map<string, string>()
    yield* Console.error(`tenet: ${describe(error, vpcs)}`)
    yield* exitWith(1)
  })

/** The CLI's version, from its package.json (one level above both src/ and dist/). */
const VERSION: string = (createRequire(import.meta.url)("../package.json") as { version: string }).version

/**
 * The CLI on `argv`, its failures printed and its exit code set. A command line it cannot read
 * is reported by `@effect/cli` itself, and fails the run (exit 1). Colour only when
 * `colour` (by default: standard output is a terminal and `NO_COLOR` is not set).
 */
export const run = (argv: ReadonlyArray<string>, colour = colourful(process.stdout.isTTY, process.env)) => {
  const program = Command.run(tenet, { name: "tenet", version: VERSION })(argv).pipe(
    Effect.catchIf((e) => !ValidationError.isValidationError(e), report)
  )
  return colour ? program : Console.consoleWith((console) => Console.withConsole(program, withoutColour(console)))
}
