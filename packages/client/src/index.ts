/** @tenet/client: the typed client for Tenet's HTTP API. */
export * as TenetClient from "./TenetClient.js"
