/**
 * How the `tenet-server` process starts and stops, whoever runs it (a terminal, systemd, a
 * container runtime, npx or pnpm):
 *
 * - The first SIGTERM or SIGINT starts a graceful shutdown. Later ones are logged and ignored:
 *   wrappers and process-group signals deliver the same signal twice, and Node's default for a
 *   second one (what `NodeRuntime.runMain` leaves in place) kills the process with its requests
 *   in flight. The shutdown is bounded anyway (`deadline`), so nothing needs a second signal.
 * - It runs until a signal stops it, whoever started it: a script that starts it in the
 *   background and exits leaves it serving (its parent becomes init), as a service manager or a
 *   container runtime expects. Only the development runner asks otherwise (`exitWithParent`:
 *   `pnpm start` sets `TENET_EXIT_WITH_PARENT`), so a server whose `pnpm start` was killed on its
 *   own does not run on orphaned, holding the port and the data directory.
 * - The exit code is 0 after a shutdown that was asked for, 1 after a failure.
 */
import { Cause, Duration, Effect, Exit, Layer } from "effect"
import * as JsonLogs from "./JsonLogs.js"

/** How often the parent process is looked at. */
const PARENT_CHECK = Duration.seconds(1)

/** Runs the server program until a signal (or, with `exitWithParent`, its parent's exit) stops it. */
export const runMain = <E>(
  program: Effect.Effect<never, E>,
  onFailure: (cause: Cause.Cause<E>) => Effect.Effect<void>,
  options: { readonly exitWithParent?: boolean } = {}
) => {
  const fiber = Effect.runFork(program)
  let stopping: number | undefined
  const stop = (why: string) => {
    if (stopping !== undefined) {
      console.log(JsonLogs.line("INFO", `${why}: already shutting down`))
      return
    }
    stopping = performance.now()
    console.log(JsonLogs.line("INFO", `shutting down: ${why}`))
    fiber.unsafeInterruptAsFork(fiber.id())
  }
  const onSignal = (signal: NodeJS.Signals) => stop(`received ${signal}`)
  process.on("SIGINT", onSignal)
  process.on("SIGTERM", onSignal)

  // A parent of pid 1 (or none) is init or a container runtime: it does not go away.
  const parent = process.ppid
  const parentCheck = options.exitWithParent === true && parent > 1
    ? setInterval(() => {
      if (process.ppid !== parent) stop(`the parent process ${parent} exited`)
    }, Duration.toMillis(PARENT_CHECK)).unref()
    : undefined

  fiber.addObserver((exit) => {
    clearInterval(parentCheck)
    const failed = Exit.isFailure(exit) && !Cause.isInterruptedOnly(exit.cause)
    const report = failed ? onFailure(exit.cause) : Effect.sync(() => {
      const took = stopping === undefined ? "" : ` in ${((performance.now() - stopping) / 1000).toFixed(1)} s`
      console.log(JsonLogs.line("INFO", `stopped${took}`))
    })
    Effect.runPromise(report).finally(() => process.exit(failed ? 1 : 0))
  })
}

/**
 * The layer with a bound on its release: once shutdown starts (the layer's finalizers begin), a
 * timer ends the process if they take longer than `limit` (the grace period plus a margin for
 * closing). A release that ends in time clears the timer, so a server run inside a longer-lived
 * process (a test runner, a program that embeds it) leaves no exit behind.
 */
export const withDeadline = (limit: Duration.DurationInput) => <A, E, R>(layer: Layer.Layer<A, E, R>) =>
  Layer.scopedContext(Effect.gen(function*() {
    let timer: ReturnType<typeof setTimeout> | undefined
    // Finalizers run last-added first: the timer starts before the layer's release, and is
    // cleared after it.
    yield* Effect.addFinalizer(() => Effect.sync(() => clearTimeout(timer)))
    const context = yield* Layer.build(layer)
    yield* Effect.addFinalizer(() =>
      Effect.sync(() => {
        timer = setTimeout(() => {
          console.error(
            JsonLogs.line("ERROR", `shutdown took longer than ${Duration.format(limit)}: exiting with what is left`)
          )
          process.exit(1)
        }, Duration.toMillis(limit)).unref()
      })
    )
    return context
  }))
