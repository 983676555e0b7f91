/**
 * Graceful shutdown of the server as operators run it (`tenet-server`, here through tsx): on
 * SIGTERM a request already in flight is answered, and the process exits 0 once it is.
 */
import { describe, expect, it } from "@effect/vitest"
import { connect } from "node:net"
import { until } from "./Loopback.js"
import { spawnServer } from "./ServerProcess.js"

describe("graceful shutdown", () => {
  it("SIGTERM lets the request in flight finish, then the process exits 0", async () => {
    const { child: server, exited, output, port } = await spawnServer({
      TENET_STORE: "memory",
      TENET_ADMIN_PASSWORD: "shutdown-admin-password",
      TENET_SHUTDOWN_GRACE: "20 seconds",
      TENET_LOG_LEVEL: "debug"
    })
    await until(() => output().includes("listening on"), "the server to listen")

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
    await until(() => output().includes("request received"), "the request to be in flight")
    server.kill("SIGTERM")
    await until(() => output().includes("waiting for requests in flight"), "the server to start draining")
    socket.write(body.slice(10))

    const code = await exited
    expect(answer).toMatch(/^HTTP\/1\.1 200/)
    expect(answer.toLowerCase()).toContain("connection: close")
    expect(answer).toContain("api_token")
    expect(code).toBe(0)
    expect(output()).not.toMatch(/"logLevel":"(ERROR|FATAL)"/)
  }, 60_000)
})
