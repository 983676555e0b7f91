/**
 * The reference server: the contract's handlers, authentication, the request guard, the
 * OpenAPI document (`/openapi.json`) and the interactive docs (`/docs`), over whichever
 * ports it is given.
 */
import { HttpApiBuilder, HttpApiScalar, HttpMiddleware } from "@effect/platform"
import { Api, Identity, Platform } from "@tenet/core"
import type { Duration } from "effect"
import { Console, Effect, Layer, Option, Redacted } from "effect"
import { createRequire } from "node:module"
import * as Auth from "./Auth.js"
import {
  DomainsHandlers,
  OperationsLogHandlers,
  ProviderConfigHandlers,
  ServiceTunnelsHandlers,
  TenantsHandlers
} from "./handlers/AdminHandlers.js"
import { AdminIdentityHandlers, TenantIdentityHandlers } from "./handlers/IdentityHandlers.js"
import { SecurityRulesHandlers, SubnetsHandlers, VpcsHandlers } from "./handlers/NetworkHandlers.js"
import { SystemHandlers } from "./handlers/SystemHandlers.js"
import {
  PodsHandlers,
  RegistryCredentialsHandlers,
  TopologyHandlers,
  TunnelsHandlers
} from "./handlers/WorkloadHandlers.js"
import * as Reconciler from "./Reconciler.js"
import * as RequestGuard from "./RequestGuard.js"

/** The server's version, from its package.json (one level above both src/ and dist/). */
export const VERSION: string = (createRequire(import.meta.url)("../package.json") as { version: string }).version

/** The use-cases, over the ports. */
export const PlatformLive = Platform.layer

const HandlersLive = Layer.mergeAll(
  SystemHandlers,
  AdminIdentityHandlers,
  TenantIdentityHandlers,
  TenantsHandlers,
  DomainsHandlers,
  ProviderConfigHandlers,
  ServiceTunnelsHandlers,
  OperationsLogHandlers,
  VpcsHandlers,
  SubnetsHandlers,
  SecurityRulesHandlers,
  PodsHandlers,
  TunnelsHandlers,
  RegistryCredentialsHandlers,
  TopologyHandlers
)

export interface HttpOptions {
  /** Larger request bodies are refused with 413. */
  readonly maxBodyBytes: number
}

export interface Options extends HttpOptions {
  readonly adminUsername: string
  readonly adminPassword: Option.Option<Redacted.Redacted<string>>
  /** How often VPCs whose apply failed are applied again. */
  readonly reconcileInterval: Duration.DurationInput
}

/** The whole HTTP surface; needs the use-cases (`PlatformLive`) and an `HttpServer`. */
export const layerHttp = (options: HttpOptions) =>
  HttpApiBuilder.serve(HttpMiddleware.logger).pipe(
    Layer.provide(HttpApiScalar.layer({ path: "/docs" })),
    Layer.provide(HttpApiBuilder.middlewareOpenApi({ path: "/openapi.json" })),
    Layer.provide(RequestGuard.layer(options)),
    Layer.provide(HttpApiBuilder.api(Api.TenetApi)),
    Layer.provide(HandlersLive),
    Layer.provide(Auth.layer)
  )

/**
 * The server over the given ports: HTTP surface, use-cases, the reconciler, and the admin
 * made sure of at startup. Needs the ports, `ServerInfo` and an `HttpServer`.
 */
export const layer = (options: Options) =>
  Layer.mergeAll(
    layerHttp(options),
    bootstrapAdmin(options.adminUsername, options.adminPassword),
    Reconciler.layer(options.reconcileInterval)
  ).pipe(Layer.provideMerge(PlatformLive))

/**
 * Makes sure the admin exists. A generated password is printed once: it is not stored in
 * clear anywhere, so this is the only time it can be seen.
 */
export const bootstrapAdmin = (username: string, password: Option.Option<Redacted.Redacted<string>>) =>
  Layer.effectDiscard(
    Effect.gen(function*() {
      const identity = yield* Identity.Identity
      const { generatedPassword } = yield* identity.bootstrapAdmin(username, Option.map(password, Redacted.value))
      if (Option.isSome(generatedPassword)) {
        yield* Console.log(
          `Generated a password for admin '${username}': ${generatedPassword.value}\n` +
            "It is shown only now; set TENET_ADMIN_PASSWORD to choose your own."
        )
      }
    }).pipe(Effect.orDie)
  )
