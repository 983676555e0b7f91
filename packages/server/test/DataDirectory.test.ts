/**
 * One server per embedded data directory, as operators run it: a second `tenet-server` on a
 * directory another one holds exits at once, naming the owner; a server killed with -9 leaves a
 * lock that the next start takes over.
 */
import { describe, expect, it } from "@effect/vitest"
import { mkdtempSync } from "node:fs"
import { hostname, tmpdir } from "node:os"
import { join } from "node:path"
import { call, until } from "./Loopback.js"
import { spawnServer } from "./ServerProcess.js"

const embeddedOn = (dataDir: string) => ({
  TENET_STORE: "embedded",
  TENET_DATA_DIR: dataDir,
  TENET_ADMIN_PASSWORD: "data-directory-admin-password"
})

describe("the embedded data directory", () => {
  it("a second server on it exits at once naming the owner; after kill -9 the next start takes it over", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "tenet-datadir-"))
    const first = await spawnServer(embeddedOn(dataDir))
    await until(() => first.output().includes("listening on"), "the first server to listen", 60_000)

    const second = await spawnServer(embeddedOn(dataDir))
    const code = await second.exited
    expect(code).not.toBe(0)
    // One JSON line in words, no stack trace.
    const fatal = JSON.parse(second.output().trim().split("\n").at(-1)!)
    expect(fatal).toMatchObject({ logLevel: "FATAL" })
    expect(fatal.message).toContain(`is in use by process ${first.child.pid} on ${hostname()}`)
    expect(fatal.cause).toBeUndefined()
    expect(second.output()).not.toContain("listening on")
    // The first one never noticed.
    expect((await call(first.port, "GET", "/healthz")).status).toBe(200)

    first.child.kill("SIGKILL")
    await first.exited
    const third = await spawnServer(embeddedOn(dataDir))
    await until(() => third.output().includes("listening on"), "the next server to listen", 60_000)
    expect((await call(third.port, "GET", "/healthz")).status).toBe(200)
  }, 120_000)
})
