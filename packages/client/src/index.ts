/** @tenet/client: the typed client for Tenet's HTTP API, as Effects or as Promises. */
export { Errors } from "@tenet/core"
export * as PromiseClient from "./PromiseClient.js"
export { createTenetClient } from "./PromiseClient.js"
export * as RetryPolicy from "./RetryPolicy.js"
export * as TenetClient from "./TenetClient.js"
