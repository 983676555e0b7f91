#!/usr/bin/env node
/** `tenet-server`: runs until SIGTERM or SIGINT (or its parent exits), then shuts down gracefully. */
import { Layer } from "effect"
import { MainLive } from "./Main.js"
import * as ProcessLifecycle from "./ProcessLifecycle.js"
import * as StartupFailure from "./StartupFailure.js"

ProcessLifecycle.runMain(Layer.launch(MainLive), StartupFailure.report)
