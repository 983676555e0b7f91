/** The provider configuration (admin): one document, created or replaced as a whole. */
import { Context, DateTime, Effect, Either, Layer, Option } from "effect"
import { Pipeline } from "../changes/Pipeline.js"
import * as Net from "../domain/Net.js"
import { toProviderConfig } from "../domain/ProviderConfig.js"
import type { ProviderConfig, ProviderConfigInput, ProviderConfigRecord } from "../domain/ProviderConfig.js"
import { InvalidInput, NotFound } from "../Errors.js"
import type { ServiceUnavailable } from "../Errors.js"
import type { InternalError } from "../Errors.js"
import type { EdgeAccount } from "../ports/EdgeTunnels.js"
import { storeUnavailable, vaultFailure } from "../ports/Failures.js"
import { Store } from "../ports/Store.js"
import { Vault } from "../ports/Vault.js"
import { ReadModel } from "../readmodel/ReadModel.js"

/** Cross-field rules the schema cannot express alone. */
export const validate = (input: ProviderConfigInput): Either.Either<void, InvalidInput> =>
  Either.flatMap(
    Either.mapLeft(
      Net.checkGateway(input.external_subnet_cidr, input.external_subnet_gateway),
      (message) => InvalidInput.field("external_subnet_gateway", message)
    ),
    () =>
      Net.overlaps(Net.cidrOf(input.external_subnet_cidr), Net.cidrOf(input.peering_subnet_cidr))
        ? Either.left(
          InvalidInput.field(
            "peering_subnet_cidr",
            `${input.peering_subnet_cidr} overlaps external_subnet_cidr ${input.external_subnet_cidr}`
          )
        )
        : Either.void
  )

export interface ProviderConfigsShape {
  readonly put: (input: ProviderConfigInput) => Effect.Effect<ProviderConfig, InvalidInput | ServiceUnavailable>
  readonly get: Effect.Effect<ProviderConfig, NotFound | ServiceUnavailable>
  /** The stored record, for use-cases that need the networks or the edge account. */
  readonly current: Effect.Effect<Option.Option<ProviderConfigRecord>, ServiceUnavailable>
  /** The decrypted edge account, when both id and token are configured. */
  readonly edgeAccount: (
    record: ProviderConfigRecord
  ) => Effect.Effect<Option.Option<EdgeAccount>, InternalError>
}

export class ProviderConfigs
  extends Context.Tag("@tenet/core/ProviderConfigs")<ProviderConfigs, ProviderConfigsShape>()
{
  static readonly layer = Layer.effect(
    ProviderConfigs,
    Effect.gen(function*() {
      const store = yield* Store
      const vault = yield* Vault
      const pipeline = yield* Pipeline

      const put = Effect.fn("ProviderConfigs.put")(function*(input: ProviderConfigInput) {
        yield* Either.match(validate(input), {
          onLeft: Effect.fail,
          onRight: () => Effect.void
        })
        const encrypted = input.edge_api_token === undefined || input.edge_api_token === null
          ? Option.none<string>()
          : Option.some(yield* vault.encrypt(input.edge_api_token))
        const record = yield* pipeline.commitGlobal(
          Effect.gen(function*() {
            const previous = yield* store.providerConfig.get
            const record: ProviderConfigRecord = {
              external_subnet_cidr: input.external_subnet_cidr,
              external_subnet_gateway: input.external_subnet_gateway,
              peering_subnet_cidr: input.peering_subnet_cidr,
              pod_dns_nameservers: input.pod_dns_nameservers,
              pod_dns_ndots: input.pod_dns_ndots,
              edge_account_id: input.edge_account_id,
              // Omitted keeps the stored token, so updating the networks never needs the secret again.
              edge_api_token_ciphertext: input.edge_api_token === undefined
                ? Option.match(previous, { onNone: () => null, onSome: (p) => p.edge_api_token_ciphertext })
                : Option.getOrNull(encrypted),
              edge_domain: input.edge_domain,
              updated_at: yield* DateTime.now
            }
            yield* store.providerConfig.put(record)
            return record
          }),
          () => null
        )
        return toProviderConfig(record)
      })

      const readModel = yield* ReadModel
      // The request's, cached at the revision its authentication read.
      const current = readModel.providerConfig.pipe(storeUnavailable)

      return ProviderConfigs.of({
        put,
        current,
        get: Effect.flatMap(
          current,
          Option.match({
            onNone: () => Effect.fail(new NotFound({ detail: "the provider configuration has not been set" })),
            onSome: (record) => Effect.succeed(toProviderConfig(record))
          })
        ),
        edgeAccount: (record) =>
          record.edge_account_id === null || record.edge_api_token_ciphertext === null
            ? Effect.succeed(Option.none())
            : Effect.map(
              vault.decrypt(record.edge_api_token_ciphertext).pipe(vaultFailure),
              (token) => Option.some({ account_id: record.edge_account_id!, api_token: token })
            )
      })
    })
  )
}
