/**
 * Which marks a server can tell are orphaned: its own host's servers whose process no longer
 * runs, or servers of this very process that have stopped; never another host's.
 */
import { describe, expect, it } from "@effect/vitest"
import { ProcessIdentity } from "@tenet/core"
import { NodeProcessIdentity } from "@tenet/core/node"
import { Context, Effect, FastCheck as fc, Layer } from "effect"

const marker = (host: string, pids: string | null, pid: number, incarnation: string) =>
  JSON.stringify([host, pids, pid, incarnation])

describe("NodeProcessIdentity", () => {
  it.prop(
    "another host's or pid namespace's server is never known gone; this namespace's is when its process does not run",
    [fc.string({ minLength: 1 }), fc.integer({ min: 2, max: 1 << 22 }), fc.boolean()],
    ([other, pid, running]) => {
      const self = { host: "here", pids: "boot/pid:[1]", pid: 1, incarnation: "self" }
      const gone = NodeProcessIdentity.goneFrom(self, () => running)
      const elsewhere = other === "here" || other === self.pids ? `${other}!` : other
      expect(gone(marker(elsewhere, self.pids, pid, "x"))).toBe(false)
      // Containers sharing a host name, each with its own pids (pid 1 in both, as often).
      expect(gone(marker("here", elsewhere, pid, "x"))).toBe(false)
      expect(gone(marker("here", elsewhere, 1, "x"))).toBe(false)
      expect(gone(marker("here", self.pids, pid, "x"))).toBe(!running)
      expect(gone("not a marker")).toBe(false)
      // Without /proc, only this process's own servers can be told of.
      expect(NodeProcessIdentity.goneFrom({ ...self, pids: null }, () => running)(marker("here", null, pid, "x")))
        .toBe(false)
    }
  )

  it.scoped("in one process: a server that stopped is gone, one that runs is not", () =>
    Effect.gen(function*() {
      const identityOf = (context: Context.Context<ProcessIdentity.ProcessIdentity>) =>
        Context.get(context, ProcessIdentity.ProcessIdentity)
      const stopped = identityOf(yield* Effect.scoped(Layer.build(Layer.fresh(NodeProcessIdentity.layer))))
      const running = identityOf(yield* Layer.build(Layer.fresh(NodeProcessIdentity.layer)))
      expect(running.self).not.toBe(stopped.self)
      expect(running.gone(stopped.self!)).toBe(true)
      expect(running.gone(running.self!)).toBe(false)
    }))
})
