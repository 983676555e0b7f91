/**
 * Every use-case of the platform, composed over the ports (Store, OperationsLog, Orchestrator,
 * EdgeTunnels, Vault). The reference server serves these over HTTP; another control plane can
 * provide its own ports and call them directly.
 */
import { Layer } from "effect"
import { AuditTrail } from "../changes/Audit.js"
import { Idempotency } from "../changes/Idempotency.js"
import { Pipeline } from "../changes/Pipeline.js"
import * as Instrumented from "../observability/Instrumented.js"
import * as Metrics from "../observability/Metrics.js"
import * as ReadModel from "../readmodel/ReadModel.js"
import { AddressSets } from "../resources/addressSets/AddressSets.js"
import { Domains } from "../resources/domains/Domains.js"
import { Guardrails } from "../resources/guardrails/Guardrails.js"
import { PodConvergence } from "../resources/pods/PodConvergence.js"
import { Pods } from "../resources/pods/Pods.js"
import { RegistryCredentials } from "../resources/registryCredentials/RegistryCredentials.js"
import { Resources } from "../resources/Resources.js"
import { SecurityRules } from "../resources/securityRules/SecurityRules.js"
import { Subnets } from "../resources/subnets/Subnets.js"
import { Tunnels } from "../resources/tunnels/Tunnels.js"
import { Vpcs } from "../resources/vpcs/Vpcs.js"
import * as Fairness from "./Fairness.js"
import { Identity } from "./Identity.js"
import * as Applier from "./NetworkApplier.js"
import { ProviderConfigs } from "./ProviderConfigs.js"
import { Quotas } from "./Quotas.js"
import { ServiceTunnels } from "./ServiceTunnels.js"
import { Tenants } from "./Tenants.js"
import { Topologies } from "./Topologies.js"
import { Traffic } from "./Traffic.js"

const Foundation = Layer.mergeAll(Identity.layer, ProviderConfigs.layer, Resources.layer).pipe(
  Layer.provideMerge(Pipeline.layer),
  Layer.provideMerge(Idempotency.layer),
  Layer.provideMerge(ReadModel.layer())
)

export interface Options {
  /**
   * How VPCs and pods are converged: a request's wait for its change in force, workers, the
   * apply's timeout (unset: 10 s for a VPC, 30 s for a pod, whose apply waits for its address).
   */
  readonly applier?: Applier.Options
  /** How expensive requests share the process between tenants (`Fairness.DEFAULTS`). */
  readonly fairness?: Partial<Fairness.Options>
}

/**
 * The use-cases; they need the ports. They see the ports observed (`Instrumented`: counted,
 * timed, traced) and write through the one write path (`changes/Pipeline.ts`), and so does
 * whoever uses this layer's output (the reconciler, the server's health check).
 */
export const make = (options: Options = {}) =>
  Layer.mergeAll(
    Tenants.layer,
    Domains.layer,
    AuditTrail.layer,
    ServiceTunnels.layer,
    Subnets.layer,
    SecurityRules.layer,
    Traffic.layer,
    Guardrails.layer,
    AddressSets.layer,
    Topologies.layer,
    Layer.effectDiscard(Metrics.registerInitial)
  ).pipe(
    Layer.provideMerge(Quotas.layer),
    Layer.provideMerge(Pods.layer),
    Layer.provideMerge(PodConvergence.layer(options.applier)),
    Layer.provideMerge(Vpcs.layer),
    Layer.provideMerge(Layer.mergeAll(Tunnels.layer, RegistryCredentials.layer)),
    Layer.provideMerge(Applier.NetworkApplier.layer(options.applier).pipe(Layer.provideMerge(Foundation))),
    Layer.provideMerge(Fairness.Fairness.layer(options.fairness)),
    Layer.provide(Instrumented.layer)
  )

/** The use-cases with their defaults. */
export const layer = make()
