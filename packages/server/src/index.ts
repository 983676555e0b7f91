/** @tenet/server: the reference HTTP server, embeddable as a Layer. */
export * as Auth from "./Auth.js"
export * as Config from "./Config.js"
export * as Main from "./Main.js"
export * as Reconciler from "./Reconciler.js"
export * as RequestContext from "./RequestContext.js"
export * as RequestGuard from "./RequestGuard.js"
export * as Server from "./Server.js"
export * as TestServer from "./TestServer.js"
