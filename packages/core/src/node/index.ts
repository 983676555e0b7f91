/** Node.js implementations of core's small platform services. */
export * as NodeProcessIdentity from "./NodeProcessIdentity.js"
export * as NodeVault from "./NodeVault.js"
