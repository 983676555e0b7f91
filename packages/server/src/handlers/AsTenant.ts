import { Principal } from "@tenet/core"
import { Effect } from "effect"

/** Runs a use-case as the calling tenant (set by the TenantAuth middleware). */
export const asTenant = <A, E, R>(f: (caller: Principal.TenantPrincipal) => Effect.Effect<A, E, R>) =>
  Effect.flatMap(Principal.CurrentTenant, f)
