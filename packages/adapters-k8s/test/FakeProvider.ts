/**
 * A local stand-in for the tunnel provider's API speaking its documented request and error
 * shapes: the `{success, errors, messages, result}` envelope, bearer tokens, remotely-managed
 * tunnels with whole-configuration PUTs, zones and DNS records, and the error codes for a
 * taken tunnel name (1013), a tunnel with live connections (1022) and a taken hostname (81053).
 */
import { Context, Effect, Layer } from "effect"
import * as Http from "node:http"
import type { AddressInfo } from "node:net"

export const ACCOUNT = "acct-1"
export const TOKEN = "token-1"

interface TunnelState {
  id: string
  name: string
  ingress: Array<{ hostname?: string; service: string }>
  token: string
  connections: number
  deleted: boolean
}

interface RecordState {
  id: string
  zone: string
  type: string
  name: string
  content: string
  proxied: boolean
  comment: string | null
}

export interface Request {
  readonly method: string
  readonly path: string
  /** The query's parameter names. */
  readonly query: ReadonlyArray<string>
  readonly body: unknown
}

export interface FakeProvider {
  readonly url: string
  readonly requests: Array<Request>
  readonly tunnels: Map<string, TunnelState>
  readonly records: Map<string, RecordState>
  readonly zones: ReadonlyArray<{ id: string; name: string }>
  /** The next `count` requests matching fail with the status and provider error code. */
  readonly failNext: (count: number, status: number, code: number, match?: (r: Request) => boolean) => void
  /** The next listing of tunnels omits this one (another writer created it meanwhile). */
  readonly hideOnce: (name: string) => void
  readonly addRecord: (record: Omit<RecordState, "id">) => void
  /** Another writer makes the next DNS record created first, identically: the create itself is 81057. */
  readonly raceNextRecord: () => void
}

export class Provider extends Context.Tag("test/FakeProvider")<Provider, FakeProvider>() {}

const envelope = (result: unknown) => ({ success: true, errors: [], messages: [], result })

/** One page of a list, counted as the published schema describes (`total_count`, no `total_pages`). */
const paged = (items: ReadonlyArray<unknown>, url: URL) => {
  const page = Number(url.searchParams.get("page") ?? "1")
  const perPage = Number(url.searchParams.get("per_page") ?? "20")
  const result = items.slice((page - 1) * perPage, page * perPage)
  return {
    ...envelope(result),
    result_info: { page, per_page: perPage, count: result.length, total_count: items.length }
  }
}
const failure = (code: number, message: string) => ({
  success: false,
  errors: [{ code, message }],
  messages: [],
  result: null
})

const STAMP = "2026-01-01T00:00:00Z"

/** A zone as the provider answers it: every field its schema requires. */
const zoneAnswer = (zone: { id: string; name: string }) => ({
  ...zone,
  account: { id: ACCOUNT, name: "Tenet test account" },
  activated_on: STAMP,
  created_on: STAMP,
  modified_on: STAMP,
  development_mode: 0,
  meta: { cdn_only: false, dns_only: false, foundation_dns: false, phishing_detected: false, step: 2 },
  name_servers: ["ada.ns.example.net", "bob.ns.example.net"],
  original_dnshost: "",
  original_name_servers: [],
  original_registrar: "",
  owner: { id: ACCOUNT, name: "Tenet test account", type: "organization" }
})

/** A DNS record as the provider answers it (no `comment` when it has none). */
const recordAnswer = ({ comment, zone: _zone, ...record }: RecordState) => ({
  ttl: 1,
  ...record,
  ...(comment === null ? {} : { comment }),
  proxiable: true,
  tags: [],
  meta: { auto_added: false, source: "primary" },
  created_on: STAMP,
  modified_on: STAMP
})

const MESSAGES: Record<number, string> = {
  1013:
    "You already have a tunnel with this name. Delete the existing tunnel, or choose a different name for your new tunnel",
  1022: "Cannot delete tunnel because it has active connections",
  81053: "An A, AAAA, or CNAME record with that host already exists.",
  81057: "Record already exists.",
  9021: "Invalid TTL. Must be between 60 and 86400 seconds, or 1 for Automatic.",
  10000: "Authentication error"
}

export const make = Effect.acquireRelease(
  Effect.async<{ server: Http.Server; fake: FakeProvider }>((resume) => {
    const requests: Array<Request> = []
    const tunnels = new Map<string, TunnelState>()
    const records = new Map<string, RecordState>()
    const zones = [{ id: "zone-example", name: "example.com" }, { id: "zone-apps", name: "apps.example.net" }]
    let failures: Array<{ status: number; code: number; match: (r: Request) => boolean }> = []
    const hidden = new Set<string>()
    let racing = false
    let next = 1
    // Tunnels are named by UUIDs, DNS records by 32 hex digits, as the provider's schema says.
    const newId = () => `00000000-0000-4000-9000-${(next++).toString().padStart(12, "0")}`
    const newRecordId = () => (next++).toString(16).padStart(32, "0")

    const handle = async (method: string, url: URL, body: any): Promise<{ code: number; json: unknown }> => {
      const path = url.pathname
      const request = { method, path, query: [...new Set(url.searchParams.keys())], body }
      requests.push(request)
      const injected = failures.find((f) => f.match(request))
      if (injected !== undefined) {
        failures = failures.filter((f) => f !== injected)
        return { code: injected.status, json: failure(injected.code, MESSAGES[injected.code] ?? "injected failure") }
      }
      let m: RegExpExecArray | null
      const tunnelBase = `/accounts/${ACCOUNT}/cfd_tunnel`
      if (path === tunnelBase && method === "GET") {
        const name = url.searchParams.get("name")
        const found = [...tunnels.values()].filter((t) => !t.deleted && (name === null || t.name === name))
        const visible = found.filter((t) => !hidden.delete(t.name))
        return { code: 200, json: paged(visible.map(({ id, name }) => ({ id, name, status: "inactive" })), url) }
      }
      if (path === tunnelBase && method === "POST") {
        if ([...tunnels.values()].some((t) => !t.deleted && t.name === body.name)) {
          return { code: 409, json: failure(1013, MESSAGES[1013]!) }
        }
        const tunnel = {
          id: newId(),
          name: body.name,
          ingress: [],
          token: `token-of-${body.name}`,
          connections: 0,
          deleted: false
        }
        tunnels.set(tunnel.id, tunnel)
        return { code: 200, json: envelope({ id: tunnel.id, name: tunnel.name }) }
      }
      if ((m = new RegExp(`^${tunnelBase}/([^/]+)(/[a-z]+)?$`).exec(path)) !== null) {
        const tunnel = tunnels.get(m[1]!)
        if (tunnel === undefined || tunnel.deleted) return { code: 404, json: failure(1003, "Tunnel not found") }
        switch (`${method} ${m[2] ?? ""}`) {
          case "GET /configurations":
            // A slow read widens the window in which unserialized writers would lose updates.
            await new Promise((r) => setTimeout(r, 5))
            return { code: 200, json: envelope({ tunnel_id: tunnel.id, config: { ingress: tunnel.ingress } }) }
          case "PUT /configurations":
            tunnel.ingress = body.config.ingress
            return { code: 200, json: envelope({ tunnel_id: tunnel.id, config: body.config }) }
          case "GET /token":
            return { code: 200, json: envelope(tunnel.token) }
          case "DELETE /connections":
            tunnel.connections = 0
            return { code: 200, json: envelope({}) }
          case "DELETE ":
            if (tunnel.connections > 0) return { code: 400, json: failure(1022, MESSAGES[1022]!) }
            tunnel.deleted = true
            return { code: 200, json: envelope({ id: tunnel.id }) }
        }
      }
      if (path === "/zones" && method === "GET") {
        const name = url.searchParams.get("name")
        const account = url.searchParams.get("account.id")
        const mine = account === null || account === ACCOUNT ? zones : []
        return { code: 200, json: paged(mine.filter((z) => name === null || z.name === name).map(zoneAnswer), url) }
      }
      if ((m = /^\/zones\/([^/]+)\/dns_records(?:\/([^/]+))?$/.exec(path)) !== null) {
        const zone = m[1]!
        if (!zones.some((z) => z.id === zone)) return { code: 404, json: failure(7003, "Could not route to zone") }
        if (m[2] === undefined && method === "GET") {
          // The current API filters a name by `name.exact` (a plain `name` filters nothing here).
          const name = url.searchParams.get("name.exact")
          const tagged = url.searchParams.get("comment.startswith")
          const found = [...records.values()].filter((r) =>
            r.zone === zone && (name === null || r.name === name) &&
            (tagged === null || (r.comment ?? "").startsWith(tagged))
          )
          return { code: 200, json: paged(found.map(recordAnswer), url) }
        }
        if (m[2] === undefined && method === "POST") {
          // The published contract requires `ttl`: 1 (automatic) or 60-86400 seconds.
          if (typeof body.ttl !== "number" || (body.ttl !== 1 && (body.ttl < 60 || body.ttl > 86400))) {
            return { code: 400, json: failure(9021, MESSAGES[9021]!) }
          }
          if (racing) {
            racing = false
            const first = { id: newRecordId(), zone, comment: null, ...body }
            records.set(first.id, first)
          }
          const same = [...records.values()].filter((r) => r.zone === zone && r.name === body.name)
          if (same.some((r) => r.type === body.type && r.content === body.content)) {
            return { code: 400, json: failure(81057, MESSAGES[81057]!) }
          }
          if (same.length > 0) return { code: 400, json: failure(81053, MESSAGES[81053]!) }
          const record = { id: newRecordId(), zone, comment: null, ...body }
          records.set(record.id, record)
          return { code: 200, json: envelope(recordAnswer(record)) }
        }
        if (m[2] !== undefined && method === "DELETE") {
          return records.delete(m[2])
            ? { code: 200, json: envelope({ id: m[2] }) }
            : { code: 404, json: failure(81044, "Record does not exist.") }
        }
      }
      return { code: 404, json: failure(7003, `No route for ${method} ${path}`) }
    }

    const server = Http.createServer((req, res) => {
      let text = ""
      req.on("data", (chunk) => (text += chunk))
      req.on("end", async () => {
        const url = new URL(req.url ?? "/", "http://fake")
        let answer: { code: number; json: unknown }
        if (req.headers.authorization !== `Bearer ${TOKEN}`) {
          answer = { code: 403, json: failure(10000, MESSAGES[10000]!) }
        } else {
          try {
            answer = await handle(req.method ?? "GET", url, text === "" ? undefined : JSON.parse(text))
          } catch (e) {
            answer = { code: 500, json: failure(1000, String(e)) }
          }
        }
        res.writeHead(answer.code, { "content-type": "application/json" })
        res.end(JSON.stringify(answer.json))
      })
    })
    server.listen(0, "127.0.0.1", () =>
      resume(Effect.succeed({
        server,
        fake: {
          url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
          requests,
          tunnels,
          records,
          zones,
          failNext: (count, status, code, match = () => true) => {
            for (let i = 0; i < count; i++) failures.push({ status, code, match })
          },
          hideOnce: (name) => void hidden.add(name),
          raceNextRecord: () => {
            racing = true
          },
          addRecord: (record) => {
            const id = newRecordId()
            records.set(id, { id, ...record })
          }
        }
      })))
  }),
  ({ server }) => Effect.async<void>((resume) => void server.close(() => resume(Effect.void)))
).pipe(Effect.map(({ fake }) => fake))

export const layer = Layer.scoped(Provider, make)
