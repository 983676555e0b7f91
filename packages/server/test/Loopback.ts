/**
 * Plain helpers for tests and benchmarks that run a server as a separate program (the binary,
 * `Main.MainLive`) and talk to it with fetch over loopback.
 */
import { createServer } from "node:net"

/** A TCP port nothing listens on right now. */
export const freePort = () =>
  new Promise<number>((resolve) => {
    const probe = createServer().listen(0, "127.0.0.1", () => {
      const address = probe.address()
      probe.close(() => resolve(typeof address === "object" && address !== null ? address.port : 0))
    })
  })

/** One JSON request; the status, the raw text and the parsed body (undefined when empty). */
export const call = async (
  port: number,
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {}
) => {
  const response = await fetch(`http://127.0.0.1:${port}${path}`, {
    method,
    headers: { "content-type": "application/json", ...headers },
    ...(body === undefined ? {} : { body: JSON.stringify(body) })
  })
  const text = await response.text()

  return { status: response.status, text, body: text === "" ? undefined : JSON.parse(text) }
}

/** Resolves once `check` holds, polling every 20 ms; rejects after `ms`. */
export const until = (check: () => boolean, what: string, ms = 120_000) =>
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
