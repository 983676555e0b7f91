/** How contract suites declare tests: each runs on a fresh instance of the adapter. */
import { it } from "@effect/vitest"
import type { Layer } from "effect"
import { Effect } from "effect"

export const freshEach =
  <S, E>(make: () => Layer.Layer<S, E>, timeout?: number) => (title: string, body: Effect.Effect<void, unknown, S>) =>
    it.effect(title, () => Effect.provide(body, make()), timeout)

/** As `freshEach`, on the real clock: for tests that need time to pass. */
export const freshEachLive =
  <S, E>(make: () => Layer.Layer<S, E>, timeout?: number) => (title: string, body: Effect.Effect<void, unknown, S>) =>
    it.live(title, () => Effect.provide(body, make()), timeout)
