/** @tenet/cli: the `tenet` command, and its parts for embedding. */
export * as Cli from "./Cli.js"
export * as Credentials from "./Credentials.js"
export * as Render from "./Render.js"
export * as RulesFile from "./RulesFile.js"
