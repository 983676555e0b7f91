/**
 * The recording API server of `@tenet/adapters-k8s/testing` as these tests run it: enforcing
 * the shipped RBAC rules, and checking every applied object against its published schema (the
 * Kube-OVN kinds when the CRD bundle is at hand).
 */
import { FakeApiServer } from "@tenet/adapters-k8s/testing"
import { crdsAvailable, violations } from "./Schemas.js"

export const { Fake, externalSubnet } = FakeApiServer

/** Schema violations of an applied object, as a strict API server would report them. */
export const validate: FakeApiServer.Options["validate"] = (object) =>
  crdsAvailable || object.apiVersion !== "kubeovn.io/v1" ? violations(object) : []

export const layer = (options: Parameters<typeof FakeApiServer.layer>[0] = {}) =>
  FakeApiServer.layer({ validate, ...options })
