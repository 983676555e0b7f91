/**
 * The shutdown deadline: a release that outlasts it ends the process; one that ends in time
 * leaves nothing behind, so a server run inside a longer-lived process cannot end that process
 * later.
 */
import { expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { afterEach, vi } from "vitest"
import { ProcessLifecycle } from "../src/index.js"

afterEach(() => {
  vi.restoreAllMocks()
})

/** Builds the layer, releases it, then waits past the deadline; the exit codes asked for. */
const exitsAfterRelease = (releaseMillis: number) =>
  Effect.gen(function*() {
    const exits: Array<unknown> = []
    vi.spyOn(process, "exit").mockImplementation(
      ((code?: number) => {
        exits.push(code)
      }) as typeof process.exit
    )
    vi.spyOn(console, "error").mockImplementation(() => {})
    const slowRelease = Layer.scopedDiscard(Effect.addFinalizer(() => Effect.sleep(releaseMillis)))
    yield* Effect.scoped(Layer.build(ProcessLifecycle.withDeadline("100 millis")(slowRelease)))
    yield* Effect.sleep("250 millis")
    return exits
  })

it.live("a release longer than the deadline ends the process with 1", () =>
  Effect.map(exitsAfterRelease(400), (exits) => expect(exits).toEqual([1])))

it.live("a release within the deadline clears it: nothing ends the process afterwards", () =>
  Effect.map(exitsAfterRelease(0), (exits) => expect(exits).toEqual([])))
