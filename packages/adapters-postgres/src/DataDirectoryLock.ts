/**
 * One process per embedded data directory. PGlite takes no lock of its own, and two processes
 * on one directory each keep their own copy of the database in memory and overwrite each other's
 * files: acknowledged writes of one are lost when the other flushes.
 *
 * The owner creates `tenet.lock` in the directory (an exclusive create, so two starting at once
 * cannot both win) holding its pid, host and start time, refreshes its modification time every
 * few seconds while it runs, and removes it when it stops. A lock is stale, and taken over, when
 * its owner is gone: on the same host when its pid no longer runs (or is ours: a container's
 * server restarted as the same pid), on another host when it has not been refreshed for
 * `STALE_AFTER` (a process on a shared volume that died without removing it). Within one
 * process, a directory is held once: a second `hold` fails like another process's would.
 */
import { NodeProcessIdentity } from "@tenet/core/node"
import { Duration, Effect, Option, Schedule, Schema } from "effect"
import { closeSync, openSync, readFileSync, renameSync, statSync, unlinkSync, utimesSync, writeSync } from "node:fs"
import { hostname } from "node:os"
import { join, resolve } from "node:path"

export const FILE = "tenet.lock"

/** How often the owner refreshes the lock. */
export const REFRESH = Duration.seconds(5)

/** A lock of another host not refreshed for this long is stale. */
export const STALE_AFTER = Duration.seconds(30)

export const Owner = Schema.Struct({
  pid: Schema.Int,
  hostname: Schema.String,
  started_at: Schema.String
})
export type Owner = typeof Owner.Type

export class DataDirectoryInUse extends Schema.TaggedError<DataDirectoryInUse>()("DataDirectoryInUse", {
  directory: Schema.String,
  owner: Owner
}) {
  override get message() {
    return `the data directory ${this.directory} is in use by process ${this.owner.pid} on ${this.owner.hostname} ` +
      `(running since ${this.owner.started_at}): one Tenet server per data directory. Stop that server first, ` +
      `give this one another TENET_DATA_DIR, or use TENET_STORE=postgres to run several servers on one database`
  }
}

const me: Owner = { pid: process.pid, hostname: hostname(), started_at: new Date().toISOString() }

/** The directories this process holds. */
const heldHere = new Set<string>()

const decodeOwner = Schema.decodeUnknownOption(Schema.parseJson(Owner))

const isRunning = NodeProcessIdentity.processRuns

/** Whether the lock's owner may still be running. An unreadable lock is a crash mid-write: stale. */
export const isHeld = (owner: Owner | undefined, ageMillis: number, self: Owner = me): boolean => {
  if (owner === undefined) return false
  if (owner.hostname !== self.hostname) return ageMillis < Duration.toMillis(STALE_AFTER)
  return owner.pid !== self.pid && isRunning(owner.pid)
}

const read = (path: string): { owner: Owner | undefined; ageMillis: number } | undefined => {
  try {
    const text = readFileSync(path, "utf8")
    const ageMillis = Date.now() - statSync(path).mtimeMs
    return { owner: Option.getOrUndefined(decodeOwner(text)), ageMillis }
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") return undefined
    throw e
  }
}

/** Writes this process as the owner; `wx` creates the file only if it does not exist yet. */
const writeOwner = (path: string, flags: "wx" | "w") => {
  const fd = openSync(path, flags, 0o600)
  try {
    writeSync(fd, JSON.stringify(me))
  } finally {
    closeSync(fd)
  }
}

const isMine = (path: string) => {
  const found = read(path)?.owner
  return found?.pid === me.pid && found.hostname === me.hostname && found.started_at === me.started_at
}

/** Takes the lock, or fails with who holds it. */
const take = (directory: string) =>
  Effect.try({
    try: () => {
      if (heldHere.has(directory)) throw new DataDirectoryInUse({ directory, owner: me })
      const path = join(directory, FILE)
      for (let attempt = 0; attempt < 5; attempt++) {
        try {
          writeOwner(path, "wx")
          heldHere.add(directory)
          return
        } catch (e) {
          if ((e as NodeJS.ErrnoException).code !== "EEXIST") throw e
        }
        const found = read(path)
        if (found === undefined) continue
        if (isHeld(found.owner, found.ageMillis)) {
          throw new DataDirectoryInUse({ directory, owner: found.owner! })
        }
        // Stale: replace it atomically, then check that no other process replaced it after us.
        const mine = `${path}.${process.pid}`
        writeOwner(mine, "w")
        renameSync(mine, path)
        if (isMine(path)) {
          heldHere.add(directory)
          return
        }
      }
      const found = read(path)?.owner
      if (found !== undefined) throw new DataDirectoryInUse({ directory, owner: found })
      throw new Error(`could not take the lock ${path}`)
    },
    catch: (e) => e
  }).pipe(
    // Anything but a held lock (a directory Tenet may not write, say) is a defect to report as is.
    Effect.catchAll((e) => e instanceof DataDirectoryInUse ? Effect.fail(e) : Effect.die(e))
  )

/**
 * Holds the directory's lock for the scope: taken at once (failing with `DataDirectoryInUse`
 * when another process holds it), refreshed while the scope lives, removed when it closes.
 */
export const hold = (dataDir: string) =>
  Effect.gen(function*() {
    const directory = resolve(dataDir)
    const path = join(directory, FILE)
    yield* Effect.acquireRelease(
      take(directory),
      () =>
        Effect.sync(() => {
          heldHere.delete(directory)
          if (isMine(path)) unlinkSync(path)
        })
    )
    yield* Effect.sync(() => {
      const now = new Date()
      utimesSync(path, now, now)
    }).pipe(
      Effect.ignore,
      Effect.repeat(Schedule.spaced(REFRESH)),
      Effect.forkScoped
    )
  })
