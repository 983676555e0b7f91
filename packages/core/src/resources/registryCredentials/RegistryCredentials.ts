/**
 * Registry credentials (tenant, own tenant only): what pods pull private images with. The
 * password is encrypted at rest and never returned; the cluster receives it as an image
 * pull secret, applied again before every pod that uses it.
 */
import { Context, DateTime, Effect, Layer, Option } from "effect"
import { creating, Pipeline, removing } from "../../changes/Pipeline.js"
import type { TenantId } from "../../domain/Ids.js"
import type { DnsLabel } from "../../domain/Net.js"
import type { TenantPrincipal } from "../../domain/Principal.js"
import type {
  RegistryCredential,
  RegistryCredentialCreate,
  RegistryCredentialRecord
} from "../../domain/RegistryCredential.js"
import { etagOf, toRegistryCredential } from "../../domain/RegistryCredential.js"
import { Conflict, NotFound, PreconditionFailed } from "../../Errors.js"
import type { IdempotencyKeyReused, InternalError, ServiceUnavailable } from "../../Errors.js"
import { storeUnavailable, vaultFailure } from "../../ports/Failures.js"
import type { OrchestratorError } from "../../ports/Orchestrator.js"
import { Orchestrator } from "../../ports/Orchestrator.js"
import { Vault } from "../../ports/Vault.js"
import { ownTenant } from "../../readmodel/Ownership.js"
import { ReadModel } from "../../readmodel/ReadModel.js"
import { Resources } from "../Resources.js"

type Failure = NotFound | ServiceUnavailable

export interface RegistryCredentialsShape {
  readonly create: (
    caller: TenantPrincipal,
    tenantId: TenantId,
    input: RegistryCredentialCreate
  ) => Effect.Effect<RegistryCredential, Failure | Conflict | IdempotencyKeyReused>
  readonly list: (
    caller: TenantPrincipal,
    tenantId: TenantId
  ) => Effect.Effect<ReadonlyArray<RegistryCredential>, Failure>
  /** `ifMatch`: the credential's `etag` the delete was made against; 412 when it moved since. */
  readonly delete: (
    caller: TenantPrincipal,
    tenantId: TenantId,
    name: DnsLabel,
    ifMatch?: string
  ) => Effect.Effect<RegistryCredential, Failure | PreconditionFailed>
  /**
   * Puts the tenant's credentials into the cluster and returns their names: what a pod that
   * uses registry credentials pulls with.
   */
  readonly ensureInCluster: (
    tenantId: TenantId
  ) => Effect.Effect<ReadonlyArray<string>, ServiceUnavailable | InternalError | OrchestratorError>
}

export class RegistryCredentials extends Context.Tag("@tenet/core/RegistryCredentials")<
  RegistryCredentials,
  RegistryCredentialsShape
>() {
  static readonly layer = Layer.effect(
    RegistryCredentials,
    Effect.gen(function*() {
      const readModel = yield* ReadModel
      const stateOf = (tenantId: TenantId) => readModel.stateOf(tenantId).pipe(storeUnavailable)
      const vault = yield* Vault
      const resources = yield* Resources
      const pipeline = yield* Pipeline
      const orchestrator = yield* Orchestrator

      const toCluster = (record: RegistryCredentialRecord) =>
        Effect.flatMap(
          vault.decrypt(record.password_ciphertext).pipe(vaultFailure),
          (password) =>
            orchestrator.applyRegistrySecret({
              tenant_id: record.tenant_id,
              name: record.name,
              server: record.server,
              username: record.username,
              password
            })
        )

      const create = Effect.fn("RegistryCredentials.create")(
        function*(caller: TenantPrincipal, tenantId: TenantId, input: RegistryCredentialCreate) {
          yield* ownTenant(caller, tenantId)
          const earlier = yield* resources.replay(tenantId, "credentials", caller.tenant_id)
          const record = Option.isSome(earlier) ? earlier.value : yield* insert(tenantId, input)
          // Pods apply it again before they pull, so a cluster hiccup here is not fatal.
          yield* toCluster(record).pipe(
            Effect.catchAll((e) => Effect.logWarning("registry secret not applied yet", input.name, e.message))
          )
          return toRegistryCredential(record)
        }
      )

      /** Saves a new credential, its password encrypted, with the request's idempotency key. */
      const insert = Effect.fn("RegistryCredentials.insert")(
        function*(tenantId: TenantId, input: RegistryCredentialCreate) {
          const record: RegistryCredentialRecord = {
            tenant_id: tenantId,
            name: input.name,
            server: input.server,
            username: input.username,
            password_ciphertext: yield* vault.encrypt(input.password),
            created_at: yield* DateTime.now
          }
          yield* pipeline.record(
            tenantId,
            () => Effect.succeed(creating({ part: "credentials", record })),
            "keyed",
            ["UniqueViolation"]
          )
            .pipe(
              Effect.catchTag(
                "UniqueViolation",
                () => new Conflict({ detail: `a registry credential named '${input.name}' exists` })
              )
            )
          return record
        }
      )

      const remove = Effect.fn("RegistryCredentials.delete")(
        function*(caller: TenantPrincipal, tenantId: TenantId, name: DnsLabel, ifMatch?: string) {
          yield* ownTenant(caller, tenantId)
          const found = (yield* stateOf(tenantId)).credential(name)
          if (found === undefined) return yield* new NotFound({ detail: `registry credential '${name}' not found` })
          yield* pipeline.record(tenantId, (state) =>
            removing(
              state,
              "credentials",
              name,
              `registry credential '${name}' not found`,
              undefined,
              (current) => PreconditionFailed.unmoved(`registry credential '${name}'`, etagOf(current), ifMatch)
            ))
          yield* orchestrator.deleteRegistrySecret(tenantId, name).pipe(
            Effect.catchAll((e) => Effect.logWarning("registry secret left in the cluster", name, e.message))
          )
          return toRegistryCredential(found)
        }
      )

      return RegistryCredentials.of({
        create,
        list: (caller, tenantId) =>
          Effect.zipRight(
            ownTenant(caller, tenantId),
            Effect.map(stateOf(tenantId), (state) => state.credentials.map(toRegistryCredential))
          ),
        delete: remove,
        ensureInCluster: (tenantId) =>
          Effect.flatMap(
            stateOf(tenantId),
            ({ credentials }) =>
              Effect.as(Effect.forEach(credentials, toCluster, { discard: true }), credentials.map((r) => r.name))
          )
      })
    })
  )
}
