/**
 * Graceful shutdown of the server as operators run it (`tenet-server`, here through tsx): on
 * SIGTERM a request already in flight is answered, and the process exits 0 once it is.
 */
import { describe, expect, it } from "@effect/vitest"
import { spawn } from "node:child_process"
import { connect } from "node:net"
import { fileURLToPath } from "node:url"
import { onTestFinished } from "vitest"

import { freePort } from "./Loopback.js"

const bin = fileURLToPath(new URL("../src/bin.ts", import.meta.url))

const until = (check: () => boolean, what: string, ms = 30_000) =>
  new Promise<void>((resolve, reject) => {
    const started = Date.now()
    const tick = setInterval(() => {
      if (check()) {
        clearInterval(tick)
        resolve()
      } else if (Date.now() - started > ms) {
        clearInterval(tick)
        reject(new Error(`timed out waiting for ${what}`))
      }
    }, 20)
  })

describe("graceful shutdown", () => {
  it("SIGTERM lets the request in flight finish, then the process exits 0", async () => {
    const port = await freePort()
    const server = spawn(process.execPath, ["--import", "tsx", bin], {
      env: {
        ...process.env,
        TENET_STORE: "memory",
        TENET_PORT: String(port),
        TENET_ADMIN_PASSWORD: "shutdown-admin-password",
        TENET_SHUTDOWN_GRACE: "20 seconds",
        TENET_LOG_LEVEL: "debug"
      },
      stdio: ["ignore", "pipe", "pipe"]
    })
    let output = ""
    server.stdout.on("data", (chunk) => (output += chunk))
    server.stderr.on("data", (chunk) => (output += chunk))
    const exited = new Promise<number | null>((resolve) => server.on("exit", (code) => resolve(code)))
    // A failed run must not leave the server behind.
    onTestFinished(() => {
      if (server.exitCode === null) server.kill("SIGKILL")
    })
    await until(() => output.includes("listening on"), "the server to listen")

    expect((await fetch(`http://127.0.0.1:${port}/healthz`)).status).toBe(200)
    // Headers and half the body: the request is in flight when the signal arrives.
    const body = JSON.stringify({ username: "admin", password: "shutdown-admin-password" })
    const socket = connect(port, "127.0.0.1")
    let answer = ""
    socket.on("data", (chunk) => (answer += chunk))
    await new Promise<void>((resolve) => socket.on("connect", () => resolve()))
    socket.write(
      `POST /admin/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n` +
        body.slice(0, 10)
    )
    await until(() => output.includes("request received"), "the request to be in flight")
    server.kill("SIGTERM")
    await until(() => output.includes("waiting for requests in flight"), "the server to start draining")
    socket.write(body.slice(10))

    const code = await exited
    expect(answer).toMatch(/^HTTP\/1\.1 200/)
    expect(answer.toLowerCase()).toContain("connection: close")
    expect(answer).toContain("api_token")
    expect(code).toBe(0)
    expect(output).not.toMatch(/"logLevel":"(ERROR|FATAL)"/)
  }, 60_000)
})
