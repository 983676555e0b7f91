#!/usr/bin/env node
/**
 * `tenet-server`: runs until SIGTERM or SIGINT, then shuts down gracefully (with
 * `TENET_EXIT_WITH_PARENT=true`, also once the process that started it exits).
 */
import { Layer } from "effect"
import * as Cli from "./Cli.js"
import { MainLive } from "./Main.js"
import * as ProcessLifecycle from "./ProcessLifecycle.js"
import { VERSION } from "./Server.js"
import * as StartupFailure from "./StartupFailure.js"

const command = Cli.parse(process.argv.slice(2))
switch (command._tag) {
  case "Help":
    console.log(Cli.help(VERSION))
    break
  case "Version":
    console.log(Cli.version(VERSION))
    break
  case "Unknown":
    console.error(Cli.unknown(command.argument))
    process.exitCode = 2
    break
  case "Serve":
    ProcessLifecycle.runMain(Layer.launch(MainLive), StartupFailure.report, {
      exitWithParent: process.env.TENET_EXIT_WITH_PARENT === "true"
    })
}
