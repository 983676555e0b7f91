/** Node.js implementations of core's small platform services. */
export * as NodeVault from "./NodeVault.js"
