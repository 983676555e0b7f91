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

/**
 * A tenant made by the admin (signing in with `adminPassword`) on the server at `port` and signed
 * into, its VPC quota raised to `vpcs` when given: the admin's token, the session (`id`,
 * `api_token`) and the headers that authenticate as it.
 */
export const tenantOver = async (
  port: number,
  adminPassword: string,
  name: string,
  options: { readonly vpcs?: number } = {}
) => {
  const admin = (await call(port, "POST", "/admin/login", { username: "admin", password: adminPassword })).body
    .api_token as string
  const password = `${name}-password`
  await call(port, "POST", "/tenants", { name, password }, { "x-admin-token": admin })
  const session = (await call(port, "POST", "/tenants/login", { name, password })).body as {
    readonly id: string
    readonly api_token: string
  }
  if (options.vpcs !== undefined) {
    await call(port, "PUT", `/tenants/${session.id}/quotas`, { vpcs: options.vpcs }, { "x-admin-token": admin })
  }
  return { admin, session, headers: { "x-auth-token": session.api_token } }
}
