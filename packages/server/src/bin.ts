#!/usr/bin/env node
/** `tenet-server`: runs until Ctrl-C (SIGINT) or SIGTERM, then shuts down gracefully. */
import { NodeRuntime } from "@effect/platform-node"
import { Cause, Effect, Layer } from "effect"
import { MainLive } from "./Main.js"
import * as StartupFailure from "./StartupFailure.js"

Layer.launch(MainLive).pipe(
  Effect.catchAllCause((cause) =>
    Cause.isInterruptedOnly(cause)
      ? Effect.void
      : Effect.zipRight(StartupFailure.report(cause), Effect.failCause(cause))
  ),
  NodeRuntime.runMain({ disablePrettyLogger: true, disableErrorReporting: true })
)
