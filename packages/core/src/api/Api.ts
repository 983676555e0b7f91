/**
 * The whole HTTP contract, shared by the server (which implements it), the client (which is
 * derived from it) and the OpenAPI document (which is generated from it).
 */
import { HttpApi, type HttpApiGroup, HttpApiSchema, OpenApi } from "@effect/platform"
import { Context, Option, type Schema, SchemaAST as AST } from "effect"
import * as Audited from "../contract/Audited.js"
import * as Exports from "../contract/Exports.js"
import {
  Conflict,
  Forbidden,
  Gone,
  IdempotencyKeyReused,
  InternalError,
  InvalidInput,
  LengthRequired,
  NotFound,
  PayloadTooLarge,
  RuleValidation,
  ServiceUnavailable,
  TooManyRequests,
  UnsupportedMediaType
} from "../Errors.js"
import { AddressSetsApi } from "../resources/addressSets/AddressSetApi.js"
import { GuardrailsApi, TenantGuardrailsApi } from "../resources/guardrails/GuardrailApi.js"
import {
  DomainsApi,
  OperationsLogApi,
  ProviderConfigApi,
  QuotasApi,
  ServiceTunnelsApi,
  TenantsApi
} from "./AdminApi.js"
import { AuditLogApi } from "./AuditApi.js"
import * as Deprecation from "./Deprecation.js"
import { AdminIdentityApi, TenantIdentityApi } from "./IdentityApi.js"
import { MatchedEndpoint } from "./MatchedEndpoint.js"
import { SecurityRulesApi, SubnetsApi, VpcsApi } from "./NetworkApi.js"
import { SystemApi } from "./SystemApi.js"
import { WatchApi } from "./WatchApi.js"
import { PodsApi, RegistryCredentialsApi, TopologyApi, TunnelsApi } from "./WorkloadApi.js"

interface Operation {
  operationId?: string
  requestBody?: unknown
  parameters?: Array<unknown>
  responses?: Record<
    string,
    { content?: Record<string, { schema?: Record<string, unknown>; description?: string }> }
  >
}

type Operations = Record<string, Record<string, Operation>>

const KEY_REUSED = "#/components/schemas/IdempotencyKeyReused"

/** The `Idempotency-Key` header, as the server reads it (see `Idempotency`). */
const idempotencyKeyParameter = {
  name: "Idempotency-Key",
  in: "header",
  required: false,
  schema: { type: "string", minLength: 1, maxLength: 255, pattern: "^[\\x21-\\x7E]+$" },
  description: "Names this request so that it can be sent again safely: a repeat within 24 hours answers " +
    "with what the first one made instead of doing it again; the same key with a different request is " +
    "refused with 422. Creates and replica changes honour it; other writes are safe to repeat as they are."
}

/** Takes the idempotency-key failure out of an operation's 422, leaving any other 422 it has. */
const withoutKeyReused = (operation: Operation) => {
  const schema = operation.responses?.["422"]?.content?.["application/json"]?.schema
  if (schema === undefined) return
  if (schema.$ref === KEY_REUSED) {
    delete operation.responses!["422"]
    return
  }
  const anyOf = schema.anyOf as Array<{ $ref?: string }> | undefined
  if (anyOf !== undefined) {
    const rest = anyOf.filter((s) => s.$ref !== KEY_REUSED)
    operation.responses!["422"]!.content!["application/json"]!.schema = rest.length === 1 ? rest[0]! : { anyOf: rest }
  }
}

/** A page's `Link` header (`Page`), declared on every list that takes `page_token`. */
const linkHeader = {
  description: "With `limit` or `page_token`, when another page follows: `<the next page's URL>; rel=\"next\"`",
  schema: { type: "string" }
}

/**
 * Failures declared for the whole API (so the client decodes them wherever they come from)
 * that only some operations can meet: the body failures (411, 413, 415) where there is a body,
 * and a reused `Idempotency-Key` (422) on POST and DELETE, which alone read the header.
 */
const failuresWhereTheyHappen = (spec: Record<string, unknown>): Record<string, unknown> => {
  // Made when the document is, after the contract (and `endpoints`, read from it) is whole.
  const formatsOf = new Map(endpoints.map((e) => [e.endpoint, e.formats]))
  for (const operations of Object.values(spec.paths as Operations)) {
    for (const [method, operation] of Object.entries(operations)) {
      if (method === "post" || method === "delete") {
        operation.parameters = [...(operation.parameters ?? []), idempotencyKeyParameter]
      } else {
        withoutKeyReused(operation)
      }
      for (const format of formatsOf.get(operation.operationId ?? "") ?? []) {
        const content = operation.responses?.["200"]?.content
        if (content !== undefined) {
          content[format.type] = { schema: { type: "string", description: format.description } }
        }
      }
      const answer = operation.responses?.["200"] as { headers?: Record<string, unknown> } | undefined
      if (
        answer !== undefined &&
        (operation.parameters ?? []).some((p) => (p as { readonly name?: string }).name === "page_token")
      ) {
        answer.headers = { ...answer.headers, Link: linkHeader }
      }
      if (operation.requestBody !== undefined) continue
      for (const status of ["411", "413", "415"]) delete operation.responses?.[status]
    }
  }
  return spec
}

/** The version of this contract, reported by `GET /version`. */
export const API_VERSION = "2026-11-22"

// Every endpoint's first middleware is `MatchedEndpoint` (added last, so it runs first).
export class TenetApi extends HttpApi.make("tenet")
  .add(SystemApi.middlewareEndpoints(MatchedEndpoint))
  .add(AdminIdentityApi.middlewareEndpoints(MatchedEndpoint))
  .add(TenantIdentityApi.middlewareEndpoints(MatchedEndpoint))
  .add(TenantsApi.middlewareEndpoints(MatchedEndpoint))
  .add(QuotasApi.middlewareEndpoints(MatchedEndpoint))
  .add(DomainsApi.middlewareEndpoints(MatchedEndpoint))
  .add(ProviderConfigApi.middlewareEndpoints(MatchedEndpoint))
  .add(ServiceTunnelsApi.middlewareEndpoints(MatchedEndpoint))
  .add(OperationsLogApi.middlewareEndpoints(MatchedEndpoint))
  .add(AuditLogApi.middlewareEndpoints(MatchedEndpoint))
  .add(VpcsApi.middlewareEndpoints(MatchedEndpoint))
  .add(SubnetsApi.middlewareEndpoints(MatchedEndpoint))
  .add(SecurityRulesApi.middlewareEndpoints(MatchedEndpoint))
  .add(PodsApi.middlewareEndpoints(MatchedEndpoint))
  .add(TunnelsApi.middlewareEndpoints(MatchedEndpoint))
  .add(RegistryCredentialsApi.middlewareEndpoints(MatchedEndpoint))
  .add(TopologyApi.middlewareEndpoints(MatchedEndpoint))
  .add(GuardrailsApi.middlewareEndpoints(MatchedEndpoint))
  .add(TenantGuardrailsApi.middlewareEndpoints(MatchedEndpoint))
  .add(AddressSetsApi.middlewareEndpoints(MatchedEndpoint))
  .add(WatchApi.middlewareEndpoints(MatchedEndpoint))
  // Failures any request can meet, whatever its endpoint.
  .addError(InvalidInput.Wire)
  .addError(NotFound.Wire)
  .addError(LengthRequired.Wire)
  .addError(PayloadTooLarge.Wire)
  .addError(UnsupportedMediaType.Wire)
  .addError(InternalError.Wire)
  .addError(ServiceUnavailable.Wire)
  .addError(IdempotencyKeyReused.Wire)
  .annotate(OpenApi.Transform, failuresWhereTheyHappen)
  .annotate(OpenApi.Title, "Tenet")
  .annotate(OpenApi.Version, API_VERSION)
  .annotate(
    OpenApi.Description,
    "Multi-tenant cloud networking and workloads: tenants, VPCs, subnets, security rules, pods, " +
      "tunnels, registry credentials, address sets, custom domains, provider configuration and topology. " +
      "Every error is a JSON object with a `detail` field."
  )
{}

/** Whether `member` is `ast` or one of its union's members. */
const declares = (ast: AST.AST, member: AST.AST): boolean =>
  ast === member || (AST.isUnion(ast) && ast.types.some((type) => declares(type, member)))

/** A path, query or headers schema, as the contract declares it (its fields are strings on the wire). */
export type Parameters = Schema.Schema<unknown, Readonly<Record<string, string | undefined>>>

/** One endpoint of the contract, as the server routes it and the client checks what it sends. */
export interface Endpoint {
  /** `group.endpoint`, as the client names it (e.g. `vpcs.create`). */
  readonly endpoint: string
  readonly method: string
  /** The path as the contract writes it (`/vpcs/:vpc_id`). */
  readonly path: string
  /**
   * How it refuses a body it cannot accept, as its declared errors say: with `RuleValidation`
   * (422, naming the field) where it declares it (the spec asks it of the security-rule
   * endpoints), with `InvalidInput` (400) everywhere else. Its parameters' problems (path,
   * query, headers) are `InvalidInput` on every endpoint: invalid parameters (the spec's 400).
   */
  readonly error: "RuleValidation" | "InvalidInput"
  /** The status of its success (the lowest, for an endpoint with several). */
  readonly success: number
  /** Every status it succeeds with (a create's 201 and its dry run's 200). */
  readonly successes: ReadonlyArray<number>
  /** Its path parameters' schema, when it has any. */
  readonly pathSchema: Parameters | undefined
  /** Its query's schema, when it takes one. */
  readonly querySchema: Parameters | undefined
  /** The query parameters it takes; any other is refused. */
  readonly query: ReadonlyArray<string>
  /** Its headers' schema, when it reads any (`If-Match`, `Last-Event-ID`). */
  readonly headersSchema: Parameters | undefined
  /** The headers it reads, as the platform names them (lower case). */
  readonly headers: ReadonlyArray<string>
  /** Whether it reads a body: one sent to an endpoint that takes none is refused. */
  readonly takesBody: boolean
  /** What it leaves in the audit trail (`Audited`); none for an endpoint that changes nothing. */
  readonly audit: Audited.Subject | undefined
  /** The formats it answers besides JSON (`Exports.Formats`), asked for with `Accept`. */
  readonly formats: ReadonlyArray<Exports.Offered>
  /** Whether it is on its way out, and what replaces it (`Deprecation`). */
  readonly deprecation: Deprecation.Deprecation | undefined
}

const fieldNames = (schema: Schema.Schema.Any): ReadonlyArray<string> =>
  AST.getPropertySignatures(AST.encodedAST(schema.ast)).map((p) => String(p.name))

/** Every endpoint of an API, in the order its groups declare them. */
export const endpointsOf = (api: HttpApi.HttpApi.Any): ReadonlyArray<Endpoint> => {
  const entries: Array<Endpoint> = []
  HttpApi.reflect(api as HttpApi.HttpApi<string, HttpApiGroup.HttpApiGroup.Any, unknown, unknown>, {
    onGroup: () => {},
    onEndpoint: ({ endpoint, group, successes }) => {
      const querySchema = Option.getOrUndefined(endpoint.urlParamsSchema) as Parameters | undefined
      const headersSchema = Option.getOrUndefined(endpoint.headersSchema) as Parameters | undefined
      entries.push({
        success: Math.min(...successes.keys()),
        successes: [...successes.keys()].sort(),
        endpoint: `${group.identifier}.${endpoint.name}`,
        method: endpoint.method,
        path: endpoint.path,
        error: declares(endpoint.errorSchema.ast, RuleValidation.Wire.ast) ? "RuleValidation" : "InvalidInput",
        pathSchema: Option.getOrUndefined(endpoint.pathSchema) as Parameters | undefined,
        querySchema,
        query: querySchema === undefined ? [] : fieldNames(querySchema),
        headersSchema,
        headers: headersSchema === undefined ? [] : fieldNames(headersSchema),
        takesBody: Option.isSome(endpoint.payloadSchema),
        audit: Option.getOrUndefined(Context.getOption(endpoint.annotations, Audited.Audited)),
        formats: Option.getOrElse(Context.getOption(endpoint.annotations, Exports.Formats), () => []),
        deprecation: Option.getOrUndefined(Context.getOption(endpoint.annotations, Deprecation.Deprecated))
      })
    }
  })
  return entries
}

/** Every endpoint of the contract, in the order the groups declare them. */
export const endpoints: ReadonlyArray<Endpoint> = endpointsOf(TenetApi)

export { type PayloadKey, Payloads } from "../contract/Payloads.js"

/** The contract errors by their status, read from their own wire schemas. */
const errorsByStatus: ReadonlyMap<number, string> = new Map(
  [
    InvalidInput,
    Forbidden,
    NotFound,
    Conflict,
    LengthRequired,
    PayloadTooLarge,
    UnsupportedMediaType,
    RuleValidation,
    TooManyRequests,
    Gone,
    InternalError,
    ServiceUnavailable
  ].map((error) => [HttpApiSchema.getStatusErrorAST(error.Wire.ast), error._tag] as const)
)

/**
 * The contract error a failure status stands for (e.g. `Conflict` for 409), for answers made
 * without one in hand (a body the request guard or the decoder refused).
 */
export const errorOfStatus = (status: number): string =>
  errorsByStatus.get(status) ?? (status >= 500 ? "InternalError" : "InvalidInput")
