/**
 * A full disk under the embedded store, on a small tmpfs of its own: writes answer 503 saying
 * the disk is full (no file paths), `/healthz` says so too, both recover without a restart once
 * space is freed, and a start on a full disk exits with one line that says why. Needs root to
 * mount (CI runs as root); skipped elsewhere.
 */
import { describe, expect, it } from "@effect/vitest"
import { execFileSync } from "node:child_process"
import { closeSync, mkdtempSync, openSync, rmSync, writeSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { call, until } from "./Loopback.js"
import { spawnServer } from "./ServerProcess.js"

const canMount = (() => {
  if (process.getuid?.() !== 0) return false
  const probe = mkdtempSync(join(tmpdir(), "tenet-mount-probe-"))
  try {
    execFileSync("mount", ["-t", "tmpfs", "-o", "size=1m", "tmpfs", probe], { stdio: "pipe" })
    execFileSync("umount", [probe], { stdio: "pipe" })
    return true
  } catch {
    return false
  } finally {
    rmSync(probe, { recursive: true, force: true })
  }
})()

/** Fills the filesystem holding `dir` to the last byte; answers the filler's path. */
const fill = (dir: string) => {
  const path = join(dir, "filler")
  const fd = openSync(path, "a")
  const chunk = Buffer.alloc(1024 * 1024)
  try {
    for (let size = chunk.length; size > 0;) {
      try {
        writeSync(fd, chunk, 0, size)
      } catch {
        size = Math.floor(size / 2)
      }
    }
  } finally {
    closeSync(fd)
  }
  return path
}

const PASSWORD = "full-disk-admin-password"

describe.skipIf(!canMount && process.env.CI === undefined)("a full disk under the embedded store", () => {
  it("writes and /healthz say the disk is full, recover once it is freed; a start on it says why", async () => {
    const mountPoint = mkdtempSync(join(tmpdir(), "tenet-full-disk-"))
    execFileSync("mount", ["-t", "tmpfs", "-o", "size=160m", "tmpfs", mountPoint])
    try {
      const env = { TENET_STORE: "embedded", TENET_DATA_DIR: mountPoint, TENET_ADMIN_PASSWORD: PASSWORD }
      const server = await spawnServer(env)
      await until(() => server.output().includes("listening on"), "the server to listen", 120_000)
      const admin = (await call(server.port, "POST", "/admin/login", { username: "admin", password: PASSWORD })).body
      const headers = { "x-admin-token": admin.api_token }
      const tenant = (name: string) =>
        call(server.port, "POST", "/tenants", { name, password: "tenant-password" }, headers)
      expect((await tenant("before")).status).toBe(201)

      const filler = fill(mountPoint)
      // Enough writes to need new pages, whatever the last page had room for.
      const statuses: Array<number> = []
      const details: Array<string> = []
      for (let i = 0; i < 40 && !statuses.includes(503); i++) {
        const r = await tenant(`full-${i}-${"x".repeat(50)}`.slice(0, 60))
        statuses.push(r.status)
        if (r.status !== 201) details.push(r.body.detail)
      }
      expect(statuses).toContain(503)
      expect(statuses.filter((s) => s !== 201 && s !== 503)).toEqual([])
      for (const detail of details) {
        expect(detail).toMatch(/disk is full/)
        expect(detail).not.toContain(mountPoint)
        expect(detail).not.toMatch(/base\/\d+/)
      }
      const health = await call(server.port, "GET", "/healthz")
      expect(health.status).toBe(503)
      expect(health.body.detail).toMatch(/disk .* is full/)

      rmSync(filler)
      // Health follows the free space at once: no restart, no wait.
      expect((await call(server.port, "GET", "/healthz")).status).toBe(200)
      expect((await tenant("after")).status).toBe(201)

      server.child.kill("SIGTERM")
      expect(await server.exited).toBe(0)

      fill(mountPoint)
      const refused = await spawnServer(env)
      expect(await refused.exited).not.toBe(0)
      const fatal = JSON.parse(refused.output().trim().split("\n").at(-1)!)
      expect(fatal).toMatchObject({ logLevel: "FATAL" })
      expect(fatal.message).toMatch(/disk .* is full/)
      expect(fatal.cause).toBeUndefined()
    } finally {
      execFileSync("umount", ["-l", mountPoint])
      rmSync(mountPoint, { recursive: true, force: true })
    }
  }, 240_000)
})
