/**
 * `ProcessIdentity` on Node: a server is its host, its pid and an incarnation (a random id per
 * server made in the process; tests run several in one process, and a container restarted
 * runs as the same pid). A server named by a mark is gone when it ran on this host and its
 * process no longer runs, or ran in this very process and has been stopped; of another host's
 * nothing can be told.
 */
import { Effect, Layer } from "effect"
import { randomUUID } from "node:crypto"
import { hostname } from "node:os"
import * as ProcessIdentity from "../ports/ProcessIdentity.js"

/** The incarnations of servers running in this process. */
const running = new Set<string>()

const runs = (pid: number) => {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    // EPERM: it runs, as another user.
    return (error as NodeJS.ErrnoException).code === "EPERM"
  }
}

/** A server as a mark names it. */
export interface Marker {
  readonly host: string
  readonly pid: number
  readonly incarnation: string
}

const encode = (marker: Marker) => JSON.stringify([marker.host, marker.pid, marker.incarnation])

const decode = (text: string): Marker | undefined => {
  try {
    const [host, pid, incarnation] = JSON.parse(text) as [unknown, unknown, unknown]
    return typeof host === "string" && typeof pid === "number" && typeof incarnation === "string"
      ? { host, pid, incarnation }
      : undefined
  } catch {
    return undefined
  }
}

/** Whether the server `marker` names is gone, seen from `self`. */
export const goneFrom = (self: Marker, isRunning: (pid: number) => boolean = runs) => (marker: string): boolean => {
  const other = decode(marker)
  if (other === undefined || other.host !== self.host) return false
  return other.pid === self.pid ? !running.has(other.incarnation) : !isRunning(other.pid)
}

/** This server's identity, for as long as the layer lives. */
export const layer = Layer.scoped(
  ProcessIdentity.ProcessIdentity,
  Effect.acquireRelease(
    Effect.sync(() => {
      const self = { host: hostname(), pid: process.pid, incarnation: randomUUID() }
      running.add(self.incarnation)
      return { self, shape: { self: encode(self), gone: goneFrom(self) } }
    }),
    ({ self }) => Effect.sync(() => running.delete(self.incarnation))
  ).pipe(Effect.map(({ shape }) => shape))
)
