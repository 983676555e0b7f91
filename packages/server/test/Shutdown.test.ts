/**
 * Graceful shutdown of the server as operators run it (`tenet-server`, here through tsx): on
 * SIGTERM a request already in flight is answered and the process exits 0 once it is; a
 * repeated signal does not cut the drain short; the grace period is a limit whatever clients
 * do; no connection is accepted once draining starts; under the development runner
 * (`TENET_EXIT_WITH_PARENT`), an orphaned server stops by itself. (An installed server started
 * by a script that exits keeps serving: the consumer test, (g).)
 */
import { HttpServer } from "@effect/platform"
import { describe, expect, it } from "@effect/vitest"
import { SimulatedCluster } from "@tenet/adapters-memory"
import { Context, Effect, Exit, Layer, Scope } from "effect"
import { spawn } from "node:child_process"
import { Agent, request } from "node:http"
import { connect, type Socket } from "node:net"
import { fileURLToPath } from "node:url"
import { onTestFinished } from "vitest"
import { RequestContext, TestServer } from "../src/index.js"
import { freePort, until } from "./Loopback.js"
import { bin, spawnProcess, spawnServer } from "./ServerProcess.js"

const memoryServer = (grace: string) =>
  spawnServer({
    TENET_STORE: "memory",
    TENET_ADMIN_PASSWORD: "shutdown-admin-password",
    TENET_SHUTDOWN_GRACE: grace,
    TENET_LOG_LEVEL: "debug"
  })

/** An open connection and what it has received. */
const open = async (port: number) => {
  const socket = connect(port, "127.0.0.1")
  let received = ""
  socket.on("data", (chunk) => (received += chunk))
  socket.on("error", () => {})
  await new Promise<void>((resolve) => socket.on("connect", () => resolve()))
  return { socket, received: () => received }
}

/** Resolves once the server on `port` answers /healthz. */
const serving = async (port: number, ms = 180_000) => {
  const deadline = Date.now() + ms
  while (Date.now() < deadline) {
    const ok = await fetch(`http://127.0.0.1:${port}/healthz`).then((r) => r.ok, () => false)
    if (ok) return
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  throw new Error(`the server on port ${port} did not start in ${ms} ms`)
}

/**
 * Each test starts a server from its sources and waits for what it does, event by event; the
 * limit catches a hang. A loaded machine (the suite run twice at once) took past two minutes.
 */
const LIMIT = 300_000

const LOGIN = JSON.stringify({ username: "admin", password: "shutdown-admin-password" })

/** Sends a login's headers and the first 10 bytes of its body: a request in flight. */
const startLogin = (socket: Socket) =>
  socket.write(
    `POST /admin/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${LOGIN.length}\r\n\r\n` +
      LOGIN.slice(0, 10)
  )

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
    // This request's line, not the health check's before it: under load the signal could otherwise
    // arrive before the login reached the server, leaving nothing in flight to wait for.
    await until(
      () => output().split("\n").some((line) => line.includes("request received") && line.includes("/admin/login")),
      "the request to be in flight"
    )
    server.kill("SIGTERM")
    await until(() => output().includes("waiting for requests in flight"), "the server to start draining")
    socket.write(body.slice(10))

    const code = await exited
    expect(answer).toMatch(/^HTTP\/1\.1 200/)
    expect(answer.toLowerCase()).toContain("connection: close")
    expect(answer).toContain("api_token")
    expect(code).toBe(0)
    expect(output()).not.toMatch(/"logLevel":"(ERROR|FATAL)"/)
    // The operator sees shutdown begin and end.
    const said = output().split("\n").filter((l) => l.startsWith("{")).map((l) => JSON.parse(l).message as string)
    expect(said).toContain("shutting down: received SIGTERM")
    expect(said.at(-1)).toMatch(/^stopped in \d+\.\d s$/)
  }, LIMIT)

  it("a change stream open at SIGTERM ends cleanly (not held until the grace runs out); exit 0", async () => {
    const { child: server, exited, output, port } = await spawnServer({
      TENET_STORE: "memory",
      TENET_ADMIN_PASSWORD: "shutdown-admin-password",
      // Far longer than the test may take: a stream held until the grace ran out fails it.
      TENET_SHUTDOWN_GRACE: "10 minutes"
    })
    await until(() => output().includes("listening on"), "the server to listen")
    const login = await fetch(`http://127.0.0.1:${port}/admin/login`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: LOGIN
    }).then((r) => r.json() as Promise<{ api_token: string }>)
    const watch = await fetch(`http://127.0.0.1:${port}/watch`, { headers: { "x-admin-token": login.api_token } })
    const reader = watch.body!.getReader()
    const first = new TextDecoder().decode((await reader.read()).value)
    expect(first).toContain("\"type\":\"BOOKMARK\"")
    server.kill("SIGTERM")
    // The stream ends (the client resumes elsewhere with its last revision), well within the grace.
    const rest = await reader.read().then((r) => r, () => ({ done: true }))
    expect(rest.done).toBe(true)
    expect(await exited).toBe(0)
  }, LIMIT)

  it("a second signal, as wrappers and process groups send, does not cut the drain short", async () => {
    const server = await memoryServer("20 seconds")
    await until(() => server.output().includes("listening on"), "the server to listen")
    const client = await open(server.port)
    startLogin(client.socket)
    await until(() => server.output().includes("request received"), "the request to be in flight")
    server.child.kill("SIGTERM")
    server.child.kill("SIGTERM")
    server.child.kill("SIGINT")
    await until(() => server.output().includes("already shutting down"), "the repeated signals to be seen")
    client.socket.write(LOGIN.slice(10))
    expect(await server.exited).toBe(0)
    expect(client.received()).toMatch(/^HTTP\/1\.1 200/)
  }, LIMIT)

  it("the grace period is a limit: a client trickling its body cannot hold shutdown", async () => {
    const server = await memoryServer("2 seconds")
    await until(() => server.output().includes("listening on"), "the server to listen")
    const client = await open(server.port)
    startLogin(client.socket)
    const trickle = setInterval(() => client.socket.write(" "), 500)
    onTestFinished(() => clearInterval(trickle))
    await until(() => server.output().includes("request received"), "the request to be in flight")
    const started = Date.now()
    server.child.kill("SIGTERM")
    await server.exited
    // The grace, the moment interrupted requests get to unwind, and the process's own exit.
    expect(Date.now() - started).toBeLessThan(6_000)
    expect(server.output()).toContain("the grace period is over")
  }, LIMIT)

  it(
    "under a steady stream of keep-alive requests, every request is answered or its connection refused, none reset",
    async () => {
      const server = await memoryServer("5 seconds")
      await until(() => server.output().includes("listening on"), "the server to listen")
      const agent = new Agent({ keepAlive: true, maxSockets: 8 })
      onTestFinished(() => agent.destroy())
      const outcomes = new Map<string, number>()
      const count = (outcome: string) => outcomes.set(outcome, (outcomes.get(outcome) ?? 0) + 1)
      let stopping = false
      const one = () =>
        new Promise<void>((resolve) => {
          const req = request({ agent, host: "127.0.0.1", port: server.port, path: "/version" }, (response) => {
            let body = ""
            response.on("data", (chunk) => (body += chunk))
            response.on("end", () => {
              const json = response.headers["content-type"]?.includes("application/json") === true && body.includes("{")
              count(`${response.statusCode}${json ? "" : " without JSON"}`)
              resolve()
            })
          })
          req.on("error", (e: NodeJS.ErrnoException) => {
            count(e.code ?? e.message)
            resolve()
          })
          req.end()
        })
      const client = async () => {
        while (!stopping) await one()
      }
      const clients = Array.from({ length: 8 }, client)
      // The stream is steady when the signal comes: a hundred answers first, however long a busy
      // machine takes to give them.
      await until(() => (outcomes.get("200") ?? 0) > 100, "a hundred answered requests")
      server.child.kill("SIGTERM")
      expect(await server.exited).toBe(0)
      stopping = true
      await Promise.all(clients)
      const seen = Object.fromEntries(outcomes)
      expect(Object.keys(seen).filter((o) => !["200", "503", "ECONNREFUSED"].includes(o)), JSON.stringify(seen))
        .toEqual(
          []
        )
    },
    LIMIT
  )

  it("draining refuses new connections and answers requests on open ones with 503 and Connection: close", async () => {
    const server = await memoryServer("20 seconds")
    await until(() => server.output().includes("listening on"), "the server to listen")
    const inFlight = await open(server.port)
    const idle = await open(server.port)
    startLogin(inFlight.socket)
    await until(() => server.output().includes("request received"), "the request to be in flight")
    server.child.kill("SIGTERM")
    await until(() => server.output().includes("waiting for requests in flight"), "the server to start draining")
    const refused = await new Promise<string>((resolve) => {
      const probe = connect(server.port, "127.0.0.1")
      probe.on("connect", () => resolve("connected"))
      probe.on("error", (e: NodeJS.ErrnoException) => resolve(e.code ?? "error"))
    })
    expect(refused).toBe("ECONNREFUSED")
    idle.socket.write("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
    await until(() => idle.received().includes("}"), "the answer on the open connection")
    expect(idle.received()).toMatch(/^HTTP\/1\.1 503/)
    expect(idle.received().toLowerCase()).toContain("connection: close")
    expect(idle.received()).toContain(`"detail":"the server is shutting down`)
    inFlight.socket.write(LOGIN.slice(10))
    expect(await server.exited).toBe(0)
    expect(inFlight.received()).toMatch(/^HTTP\/1\.1 200/)
  }, LIMIT)

  it("under pnpm start (TENET_EXIT_WITH_PARENT), a server whose parent is killed shuts down", async () => {
    // A parent that starts the server, prints its pid, and waits.
    const port = await freePort()
    const parent = spawn(process.execPath, [
      "-e",
      `const c = require("node:child_process").spawn(process.execPath, ["--conditions=@tenet/source", "--import", "tsx", ${
        JSON.stringify(bin)
      }], ` +
      `{ stdio: "ignore", env: { ...process.env, TENET_STORE: "memory", TENET_PORT: "${port}", TENET_ADMIN_PASSWORD: "x-password", TENET_EXIT_WITH_PARENT: "true" } });` +
      `console.log(c.pid); setInterval(() => {}, 1000)`
    ], { stdio: ["ignore", "pipe", "inherit"] })
    let out = ""
    parent.stdout.on("data", (chunk) => (out += chunk))
    await until(() => out.includes("\n"), "the server's pid")
    const pid = Number(out.trim())
    const running = () => {
      try {
        process.kill(pid, 0)
        return true
      } catch {
        return false
      }
    }
    onTestFinished(() => {
      if (running()) process.kill(pid, "SIGKILL")
    })
    // Killed once the server serves: a parent gone before the server even started (on a busy
    // machine, while tsx compiles) leaves it nothing to watch.
    await serving(port)
    expect(running()).toBe(true)
    parent.kill("SIGKILL")
    await until(() => !running(), "the orphaned server to exit", 60_000)
  }, 300_000)
})

describe("graceful shutdown, in process", () => {
  it.live(
    "a request still running when the grace period ends is answered 503 with a JSON detail",
    () =>
      Effect.gen(function*() {
        const scope = yield* Scope.make()
        const server = yield* Layer.buildWithScope(TestServer.layer({ shutdownGrace: "300 millis" }), scope)
        const address = Context.get(server, HttpServer.HttpServer).address
        const base = `http://127.0.0.1:${address._tag === "TcpAddress" ? address.port : 0}`
        const send = (method: string, path: string, headers: Record<string, string>, body?: unknown) =>
          fetch(`${base}${path}`, {
            method,
            headers: { "content-type": "application/json", ...headers },
            ...(body === undefined ? {} : { body: JSON.stringify(body) })
          })
        const json = (response: Response) => response.json() as Promise<Record<string, string>>
        const admin = yield* Effect.promise(() =>
          send("POST", "/admin/login", {}, { username: TestServer.ADMIN_USERNAME, password: TestServer.ADMIN_PASSWORD })
            .then(json)
        )
        yield* Effect.promise(() =>
          send("POST", "/tenants", { "x-admin-token": admin.api_token! }, { name: "cut", password: "cut-password-1" })
        )
        const tenant = yield* Effect.promise(() =>
          send("POST", "/tenants/login", {}, { name: "cut", password: "cut-password-1" }).then(json)
        )
        // Every cluster call now takes a minute: the VPC's apply outlasts the grace period.
        yield* Context.get(server, SimulatedCluster.ClusterSwitches).setLatency("1 minute")
        const answer = send("POST", "/vpcs", { "x-auth-token": tenant.api_token! }, {
          name: "slow",
          enable_internet: false,
          tenant_id: tenant.id,
          token: tenant.api_token
        })
        const inFlight = Context.get(server, RequestContext.InFlight)
        while (inFlight.inFlight === 0) yield* Effect.sleep("10 millis")
        yield* Scope.close(scope, Exit.void)
        const response = yield* Effect.promise(() => answer)
        expect(response.status).toBe(503)
        expect(response.headers.get("connection")).toBe("close")
        expect(yield* Effect.promise(() => json(response))).toEqual({
          detail: "the server shut down before this request finished; it may or may not have taken effect, retry it"
        })
      }),
    LIMIT
  )
})

describe("pnpm start", () => {
  it("Ctrl+C (SIGINT to the terminal's process group) stops the server cleanly: exit 0, no ELIFECYCLE", async () => {
    const port = await freePort()
    const repo = fileURLToPath(new URL("../../..", import.meta.url))
    // A process group of its own, as a terminal's foreground job is.
    const { child, exited, output } = spawnProcess("pnpm", ["start"], {
      cwd: repo,
      detached: true,
      env: { TENET_STORE: "memory", TENET_PORT: String(port), TENET_ADMIN_PASSWORD: "ctrl-c-password" }
    })
    await serving(port)
    process.kill(-child.pid!, "SIGINT")
    expect(await exited).toBe(0)
    expect(output()).not.toContain("ELIFECYCLE")
    expect(output()).toContain("shutting down: received SIGINT")
    expect(output()).toMatch(/"message":"stopped in /)
  }, LIMIT)
})
