#!/usr/bin/env node
/** `tenet-server`: runs until Ctrl-C (SIGINT) or SIGTERM, then shuts down gracefully. */
import { NodeRuntime } from "@effect/platform-node"
import { Layer } from "effect"
import { MainLive } from "./Main.js"

Layer.launch(MainLive).pipe(NodeRuntime.runMain({ disablePrettyLogger: true }))
