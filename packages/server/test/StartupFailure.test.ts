import { describe, expect, it } from "@effect/vitest"
import { DataDirectoryLock } from "@tenet/adapters-postgres"
import { StartupFailure } from "@tenet/server"
import { Cause, Config, ConfigProvider, Effect, Exit } from "effect"

const causeOf = <A, E>(effect: Effect.Effect<A, E>) => {
  const exit = Effect.runSyncExit(effect)
  if (Exit.isSuccess(exit)) throw new Error("expected a failure")
  return exit.cause
}

describe("StartupFailure", () => {
  it("a failure Tenet foresaw is its message alone, without a stack", () => {
    const held = new DataDirectoryLock.DataDirectoryInUse({
      directory: "/var/lib/tenet/pgdata",
      owner: { pid: 42, hostname: "db-1", started_at: "2026-11-23T10:00:00.000Z" }
    })
    for (const cause of [Cause.fail(held), Cause.die(held)]) {
      expect(StartupFailure.describe(cause)).toEqual({ message: held.message })
    }
    expect(StartupFailure.describe(causeOf(Effect.dieMessage("TENET_X is required")))).toEqual({
      message: "TENET_X is required"
    })
  })

  it("an invalid setting names the variable", () => {
    const cause = causeOf(
      Effect.withConfigProvider(Config.port("TENET_PORT"), ConfigProvider.fromMap(new Map([["TENET_PORT", "abc"]])))
    )
    expect(StartupFailure.describe(cause).message).toContain("TENET_PORT")
    expect(StartupFailure.describe(cause).cause).toBeUndefined()
  })

  it("every failure of a parallel start is named; an unforeseen defect keeps its stack", () => {
    const both = Cause.parallel(Cause.die(new Cause.RuntimeException("first")), Cause.die(new TypeError("second")))
    const described = StartupFailure.describe(both)
    expect(described.message).toBe("first; second")
    expect(described.cause).toContain("TypeError: second")
  })
})
