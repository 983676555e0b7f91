/**
 * `ProcessIdentity` on Node: a server is its host, its pid namespace (with the machine's boot),
 * its pid and an incarnation (a random id per server made in the process; tests run several in
 * one process). A server named by a mark is gone when it ran in this pid namespace of this boot
 * and its process no longer runs, or ran in this very process and has been stopped. Of another
 * namespace nothing can be told: containers sharing a host name (host networking, a fixed
 * `hostname:`) each run their own pids, and a container restarted runs in a new namespace; a
 * machine without `/proc` tells only of its own process.
 */
import { Effect, Layer } from "effect"
import { randomUUID } from "node:crypto"
import { readFileSync, readlinkSync } from "node:fs"
import { hostname } from "node:os"
import * as ProcessIdentity from "../ports/ProcessIdentity.js"

/** The incarnations of servers running in this process. */
const running = new Set<string>()

/** Whether a process of this pid namespace runs (EPERM: it does, as another user). */
export const processRuns = (pid: number) => {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    // EPERM: it runs, as another user.
    return (error as NodeJS.ErrnoException).code === "EPERM"
  }
}

/** A server as a mark names it; `pids` is null where its pid namespace cannot be read. */
export interface Marker {
  readonly host: string
  readonly pids: string | null
  readonly pid: number
  readonly incarnation: string
}

/** This boot's pid namespace (`/proc/self/ns/pid` and the boot id), or null without `/proc`. */
const pidNamespace = (): string | null => {
  try {
    return `${readFileSync("/proc/sys/kernel/random/boot_id", "utf8").trim()}/${readlinkSync("/proc/self/ns/pid")}`
  } catch {
    return null
  }
}

const encode = (marker: Marker) => JSON.stringify([marker.host, marker.pids, marker.pid, marker.incarnation])

const decode = (text: string): Marker | undefined => {
  try {
    const [host, pids, pid, incarnation] = JSON.parse(text) as [unknown, unknown, unknown, unknown]
    return typeof host === "string" && (typeof pids === "string" || pids === null) && typeof pid === "number" &&
        typeof incarnation === "string"
      ? { host, pids, pid, incarnation }
      : undefined
  } catch {
    return undefined
  }
}

/** Whether the server `marker` names is gone, seen from `self`: only what can be told for certain. */
export const goneFrom =
  (self: Marker, isRunning: (pid: number) => boolean = processRuns) => (marker: string): boolean => {
    const other = decode(marker)
    if (other === undefined || other.host !== self.host || other.pids !== self.pids) return false
    if (other.pid === self.pid) return !running.has(other.incarnation)
    return self.pids !== null && !isRunning(other.pid)
  }

/** This server's identity, for as long as the layer lives. */
export const layer = Layer.scoped(
  ProcessIdentity.ProcessIdentity,
  Effect.acquireRelease(
    Effect.sync(() => {
      const self = { host: hostname(), pids: pidNamespace(), pid: process.pid, incarnation: randomUUID() }
      running.add(self.incarnation)
      return { self, shape: { self: encode(self), gone: goneFrom(self) } }
    }),
    ({ self }) => Effect.sync(() => running.delete(self.incarnation))
  ).pipe(Effect.map(({ shape }) => shape))
)
