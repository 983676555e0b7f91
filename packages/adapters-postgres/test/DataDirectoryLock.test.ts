import { describe, expect, it } from "@effect/vitest"
import { DataDirectoryLock } from "@tenet/adapters-postgres"
import { Duration, Effect, Exit, Scope } from "effect"
import { existsSync, mkdtempSync, readFileSync, utimesSync, writeFileSync } from "node:fs"
import { hostname, tmpdir } from "node:os"
import { join } from "node:path"

const freshDir = () => mkdtempSync(join(tmpdir(), "tenet-lock-"))
const lockOf = (dir: string) => join(dir, DataDirectoryLock.FILE)
const owner = (pid: number, host = hostname()) => ({ pid, hostname: host, started_at: "2026-01-01T00:00:00.000Z" })

/** A pid that runs no process here: past the kernel's largest. */
const GONE = 2 ** 22 + 1

describe("DataDirectoryLock", () => {
  it("a running process on this host holds its lock; a gone one, or this very pid, does not", () => {
    const self = owner(process.pid)
    expect(DataDirectoryLock.isHeld(owner(process.ppid), 0, { ...self, started_at: "now" })).toBe(true)
    expect(DataDirectoryLock.isHeld(owner(GONE), 0, self)).toBe(false)
    expect(DataDirectoryLock.isHeld(owner(process.pid), 0, { ...self, started_at: "now" })).toBe(false)
    expect(DataDirectoryLock.isHeld(undefined, 0, self)).toBe(false)
  })

  it("another host's lock is held until it has not been refreshed for STALE_AFTER", () => {
    const stale = Duration.toMillis(DataDirectoryLock.STALE_AFTER)
    expect(DataDirectoryLock.isHeld(owner(1, "elsewhere"), stale - 1)).toBe(true)
    expect(DataDirectoryLock.isHeld(owner(1, "elsewhere"), stale)).toBe(false)
  })

  it.effect("holding writes the lock, a second holder fails naming the owner, closing removes it", () =>
    Effect.gen(function*() {
      const dir = freshDir()
      const scope = yield* Scope.make()
      yield* DataDirectoryLock.hold(dir).pipe(Scope.extend(scope))
      expect(JSON.parse(readFileSync(lockOf(dir), "utf8"))).toMatchObject({ pid: process.pid, hostname: hostname() })
      const second = yield* Effect.flip(Effect.scoped(DataDirectoryLock.hold(dir)))
      expect(second).toBeInstanceOf(DataDirectoryLock.DataDirectoryInUse)
      expect(second.message).toContain(`in use by process ${process.pid} on ${hostname()}`)
      yield* Scope.close(scope, Exit.void)
      expect(existsSync(lockOf(dir))).toBe(false)
      // Free again.
      yield* Effect.scoped(DataDirectoryLock.hold(dir))
    }))

  it.effect("a lock left by a process that is gone is taken over", () =>
    Effect.gen(function*() {
      const dir = freshDir()
      writeFileSync(lockOf(dir), JSON.stringify(owner(GONE)))
      yield* Effect.scoped(Effect.gen(function*() {
        yield* DataDirectoryLock.hold(dir)
        expect(JSON.parse(readFileSync(lockOf(dir), "utf8")).pid).toBe(process.pid)
      }))
    }))

  it.effect("a fresh lock of another host is respected; an old one is taken over", () =>
    Effect.gen(function*() {
      const dir = freshDir()
      writeFileSync(lockOf(dir), JSON.stringify(owner(1, "another-host")))
      const error = yield* Effect.flip(Effect.scoped(DataDirectoryLock.hold(dir)))
      expect(error.message).toContain("in use by process 1 on another-host")
      const old = new Date(Date.now() - Duration.toMillis(DataDirectoryLock.STALE_AFTER) - 1000)
      utimesSync(lockOf(dir), old, old)
      yield* Effect.scoped(DataDirectoryLock.hold(dir))
    }))

  it.effect("a torn lock (a crash while writing it) is stale", () =>
    Effect.gen(function*() {
      const dir = freshDir()
      writeFileSync(lockOf(dir), "{\"pid\":")
      yield* Effect.scoped(DataDirectoryLock.hold(dir))
    }))
})
