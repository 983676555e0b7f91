/**
 * Clients that misbehave at the connection level: bodies trickled in, connections opened and
 * left idle by the hundred, bodies larger than the limit without a declared length, clients
 * that hang up mid-request. The server cuts off the slow ones and keeps serving everyone else.
 */
import { HttpServer } from "@effect/platform"
import { describe, expect, it, layer } from "@effect/vitest"
import { Effect } from "effect"
import { connect, type Socket } from "node:net"
import { RequestContext, Server, TestServer } from "../src/index.js"
import { raw } from "./Harness.js"

const port = Effect.map(HttpServer.HttpServer, (server) => {
  if (server.address._tag !== "TcpAddress") throw new Error("expected a TCP address")
  return server.address.port
})

/** A raw socket to the server, collecting whatever it answers. */
const open = (port: number) =>
  Effect.async<{ readonly socket: Socket; readonly received: () => string; readonly closed: Promise<void> }>(
    (resume) => {
      const chunks: Array<Buffer> = []
      const socket = connect(port, "127.0.0.1")
      const closed = new Promise<void>((resolve) => socket.on("close", () => resolve()))
      socket.on("data", (chunk) => chunks.push(chunk))
      socket.on("error", () => undefined)
      socket.on(
        "connect",
        () => resume(Effect.succeed({ socket, received: () => Buffer.concat(chunks).toString("utf8"), closed }))
      )
    }
  )

const healthy = Effect.gen(function*() {
  const answers = yield* Effect.all(Array.from({ length: 20 }, () => raw("GET", "/healthz")), {
    concurrency: "unbounded"
  })
  return answers.every((a) => a.status === 200)
})

/** Requests still in flight once the server has had a moment: none, unless one was leaked. */
const settled = Effect.gen(function*() {
  const inFlight = yield* RequestContext.InFlight
  for (let i = 0; i < 50 && inFlight.inFlight > 0; i++) {
    yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 20)))
  }
  return inFlight.inFlight
})

/** Clients that connect, send something, and after `after` ms leave the way `leave` says. */
const hangUps = (options: {
  readonly clients: number
  readonly send: (socket: Socket) => void
  readonly after: number
  readonly leave: (socket: Socket) => void
}) =>
  Effect.gen(function*() {
    const p = yield* port
    const opened = yield* Effect.all(Array.from({ length: options.clients }, () => open(p)), {
      concurrency: options.clients
    })
    for (const c of opened) options.send(c.socket)
    yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, options.after)))
    for (const c of opened) options.leave(c.socket)
  })

describe("connections", () => {
  layer(TestServer.layer({ requestTimeout: "1 second", maxBodyBytes: 64 * 1024 }), { timeout: 60_000 })((it) => {
    it.effect("a body trickled in slower than the request timeout is cut off with 408; others are served meanwhile", () =>
      Effect.gen(function*() {
        const slow = yield* open(yield* port)
        const body = JSON.stringify({ name: "slow-tenant", password: "x".repeat(40) })
        slow.socket.write(
          `POST /tenants/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`
        )
        const trickle = setInterval(() => slow.socket.writable && slow.socket.write(" "), 200)
        expect(yield* healthy).toBe(true)
        yield* Effect.promise(() => slow.closed)
        clearInterval(trickle)
        expect(slow.received()).toMatch(/^HTTP\/1\.1 408/)
        expect(slow.received()).toContain(`{"detail":"the request did not arrive in time"}`)
      }))

    it.effect("hundreds of idle or half-sent connections do not keep others from being served", () =>
      Effect.gen(function*() {
        const p = yield* port
        const idle = yield* Effect.all(Array.from({ length: 300 }, () => open(p)), { concurrency: 50 })
        const halfSent = yield* Effect.all(Array.from({ length: 100 }, () => open(p)), { concurrency: 50 })
        for (const c of halfSent) c.socket.write("GET /healthz HTTP/1.1\r\nHost: x\r\n")
        expect(yield* healthy).toBe(true)
        // The half-sent ones are cut off at the timeout rather than held forever.
        yield* Effect.promise(() => Promise.all(halfSent.map((c) => c.closed)))
        expect(halfSent.every((c) => c.received() === "" || c.received().startsWith("HTTP/1.1 408"))).toBe(true)
        for (const c of idle) c.socket.destroy()
        expect(yield* healthy).toBe(true)
        expect(yield* settled).toBe(0)
      }))

    it.effect("a chunked body is 411 JSON: the length must be known before anything is read", () =>
      Effect.gen(function*() {
        for (const chunks of [1, 8]) {
          const c = yield* open(yield* port)
          c.socket.write(
            "POST /tenants/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" +
              "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
          )
          const chunk = "a".repeat(16 * 1024)
          for (let i = 0; i < chunks; i++) c.socket.write(`${chunk.length.toString(16)}\r\n${chunk}\r\n`)
          c.socket.write("0\r\n\r\n")
          yield* Effect.promise(() => c.closed)
          expect(c.received()).toMatch(/^HTTP\/1\.1 411/)
          expect(c.received()).toContain("\"detail\"")
        }
        expect(yield* settled).toBe(0)
      }))

    it.effect("what Node's HTTP parser refuses is answered with a JSON detail too", () =>
      Effect.gen(function*() {
        const cases: ReadonlyArray<readonly [string, number]> = [
          [`GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${"a".repeat(64 * 1024)}\r\n\r\n`, 431],
          [`GET /${"a".repeat(100 * 1024)} HTTP/1.1\r\nHost: x\r\n\r\n`, 431],
          ["GET /healthz HTTP/1.1\r\nConnection: close\r\n\r\n", 400],
          ["POST /vpcs HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n{}", 400],
          ["BREW /healthz HTTP/1.1\r\nHost: x\r\n\r\n", 400],
          ["GET /heal\u0000thz HTTP/1.1\r\nHost: x\r\n\r\n", 400]
        ]
        for (const [request, status] of cases) {
          const c = yield* open(yield* port)
          c.socket.write(request)
          yield* Effect.promise(() => c.closed)
          const [head, body] = c.received().split("\r\n\r\n")
          expect(head, request.slice(0, 40)).toMatch(new RegExp(`^HTTP/1\\.1 ${status} `))
          expect(head!.toLowerCase()).toContain("content-type: application/json")
          // Bad input names where it is, as every refusal of it does.
          expect(JSON.parse(body!)).toEqual(
            status === 400
              ? { detail: expect.any(String), errors: [{ field: expect.any(String), message: expect.any(String) }] }
              : { detail: expect.any(String) }
          )
        }
        expect(yield* healthy).toBe(true)
      }))

    it.effect("clients that hang up mid-body leave the server healthy", () =>
      Effect.gen(function*() {
        yield* hangUps({
          clients: 50,
          send: (socket) =>
            socket.write(
              "POST /vpcs HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 500\r\n\r\n{\"na"
            ),
          after: 50,
          leave: (socket) => socket.destroy()
        })
        expect(yield* healthy).toBe(true)
        expect(yield* settled).toBe(0)
      }))

    it.effect("clients that stop reading a large response and then hang up leave nothing in flight", () =>
      Effect.gen(function*() {
        yield* hangUps({
          clients: 20,
          send: (socket) => {
            socket.pause()
            // Pipelined: the responses pile up in the kernel's buffers until the writes stall.
            socket.write("GET /openapi.json HTTP/1.1\r\nHost: x\r\n\r\n".repeat(40))
          },
          after: 500,
          leave: (socket) => socket.resetAndDestroy()
        })
        expect(yield* healthy).toBe(true)
        expect(yield* settled).toBe(0)
      }))
  })

  it("while no app is attached (starting, or shut down) the listener answers 503 JSON, not silence", async () => {
    const server = Server.nodeServer({ requestTimeout: "5 seconds" })()
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()))
    const address = server.address()
    const port = typeof address === "object" && address !== null ? address.port : 0
    const response = await fetch(`http://127.0.0.1:${port}/healthz`)
    expect(response.status).toBe(503)
    expect(response.headers.get("retry-after")).toBe("1")
    expect(await response.json()).toEqual({ detail: expect.stringContaining("starting or shutting down") })
    await new Promise((resolve) => server.close(resolve))
  })
})
