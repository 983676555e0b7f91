/**
 * Traces as an operator's collector receives them: `tenet-server` with OpenTelemetry's
 * standard variables exports over OTLP/HTTP to a receiver in this process, while a tenant's
 * automation calls it with `@tenet/client` inside a trace of its own. One request's spans form
 * a tree under the caller's trace, its log line names the trace, and no span holds a secret.
 * Without the variables the server records no spans and its log lines carry no trace id.
 */
import { FetchHttpClient } from "@effect/platform"
import { describe, expect, it } from "@effect/vitest"
import { TenetClient } from "@tenet/client"
import { Effect } from "effect"
import { spawn } from "node:child_process"
import { mkdtempSync } from "node:fs"
import { createServer } from "node:http"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { onTestFinished } from "vitest"

interface OtlpSpan {
  readonly traceId: string
  readonly spanId: string
  readonly parentSpanId?: string
  readonly name: string
  readonly kind: number
  readonly attributes: ReadonlyArray<{ readonly key: string; readonly value: Record<string, unknown> }>
  readonly links?: ReadonlyArray<{ readonly traceId: string; readonly spanId: string }>
}

interface Received {
  readonly serviceName: string
  readonly span: OtlpSpan
}

/** An OTLP/HTTP receiver (JSON) on a free loopback port, collecting what it is sent. */
const receiver = async () => {
  const received: Array<Received> = []
  const paths = new Set<string>()
  const server = createServer((request, response) => {
    let body = ""
    request.on("data", (chunk) => (body += chunk))
    request.on("end", () => {
      paths.add(request.url ?? "")
      const payload = JSON.parse(body) as {
        resourceSpans: ReadonlyArray<{
          resource: { attributes: OtlpSpan["attributes"] }
          scopeSpans: ReadonlyArray<{ spans: ReadonlyArray<OtlpSpan> }>
        }>
      }
      for (const resource of payload.resourceSpans) {
        const serviceName = String(
          resource.resource.attributes.find((a) => a.key === "service.name")?.value.stringValue
        )
        for (const scope of resource.scopeSpans) for (const span of scope.spans) received.push({ serviceName, span })
      }
      response.writeHead(200, { "content-type": "application/json" }).end("{}")
    })
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const address = server.address()
  const port = typeof address === "object" && address !== null ? address.port : 0
  return { port, received, paths, close: () => server.close() }
}

const SERVER_BIN = fileURLToPath(new URL("../../server/src/bin.ts", import.meta.url))

/** `tenet-server` from the workspace's `@tenet/server` (its sources, through tsx), on a free port. */
const startServer = async (env: Record<string, string>) => {
  const port = await new Promise<number>((resolve) => {
    const probe = createServer().listen(0, "127.0.0.1", () => {
      const address = probe.address()
      probe.close(() => resolve(typeof address === "object" && address !== null ? address.port : 0))
    })
  })
  const child = spawn(process.execPath, ["--conditions=@tenet/source", "--import", "tsx", SERVER_BIN], {
    env: { ...process.env, TENET_PORT: String(port), ...env },
    stdio: ["ignore", "pipe", "pipe"]
  })
  let output = ""
  child.stdout.on("data", (chunk) => (output += chunk))
  child.stderr.on("data", (chunk) => (output += chunk))
  onTestFinished(() => void child.kill("SIGKILL"))
  await waitFor(() => output.includes("listening on"), () => `the server to listen:\n${output}`)
  return { baseUrl: `http://127.0.0.1:${port}`, output: () => output }
}

const waitFor = async (done: () => boolean, what: () => string, ms = 60_000) => {
  const deadline = Date.now() + ms
  while (!done()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what()}`)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

const ADMIN_PASSWORD = "tracing-admin-password"
const TENANT_PASSWORD = "tracing tenant password"
const ENV_SECRET = "env-value-never-in-a-span"
const EDGE_TOKEN = "edge-token-never-in-a-span"

/** The default store: embedded PostgreSQL, whose SQL statements are spans too. */
const storeSettings = (): Record<string, string> => ({
  TENET_STORE: "embedded",
  TENET_DATA_DIR: mkdtempSync(join(tmpdir(), "tenet-tracing-"))
})

/** A tenant's automation: the admin makes a tenant, the tenant a VPC, a subnet and a pod with a secret. */
const automation = (baseUrl: string) =>
  Effect.gen(function*() {
    const anonymous = yield* TenetClient.make({ baseUrl })
    const adminSession = yield* anonymous.adminIdentity.login({
      payload: { username: "admin", password: ADMIN_PASSWORD }
    })
    const admin = yield* TenetClient.make({ baseUrl, adminToken: adminSession.api_token })
    yield* admin.providerConfig.put({
      payload: {
        external_subnet_cidr: "203.0.113.0/24",
        external_subnet_gateway: "203.0.113.1",
        peering_subnet_cidr: "100.64.0.0/16",
        edge_account_id: "acct",
        edge_api_token: EDGE_TOKEN,
        edge_domain: "apps.example.com"
      }
    })
    const name = `traced-${Math.random().toString(36).slice(2, 8)}`
    yield* admin.tenants.create({ payload: { name, password: TENANT_PASSWORD } })
    const tenantSession = yield* anonymous.tenantIdentity.login({ payload: { name, password: TENANT_PASSWORD } })
    const tenant = yield* TenetClient.make({
      baseUrl,
      tenantToken: tenantSession.api_token,
      tenantId: tenantSession.id
    })
    const { traceId } = yield* Effect.currentSpan
    const vpc = yield* tenant.vpcs.create({ payload: { name: "web", enable_internet: true } }).pipe(
      Effect.withSpan("create the VPC")
    )
    const subnet = yield* tenant.subnets.create({
      payload: { vpc_id: vpc.id, name: "apps", cidr: "10.0.1.0/24", gateway_ip: "10.0.1.1" }
    })
    yield* tenant.pods.create({
      payload: {
        vpc_id: vpc.id,
        subnet_id: subnet.id,
        name: "shop",
        container_image: "nginx:1.27",
        env_vars: { DB_PASSWORD: ENV_SECRET }
      }
    })
    return { traceId, tokens: [adminSession.api_token, tenantSession.api_token] }
  }).pipe(Effect.withSpan("tenant automation"), Effect.provide(FetchHttpClient.layer))

describe("tracing", () => {
  it.live(
    "a request's spans join the caller's trace under one server span, and hold no secret",
    () =>
      Effect.gen(function*() {
        const otlp = yield* Effect.promise(receiver)
        yield* Effect.addFinalizer(() => Effect.sync(otlp.close))
        const server = yield* Effect.promise(() =>
          startServer({
            ...storeSettings(),
            TENET_ADMIN_PASSWORD: ADMIN_PASSWORD,
            OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${otlp.port}/`,
            OTEL_SERVICE_NAME: "tenet-under-test",
            OTEL_BSP_SCHEDULE_DELAY: "100"
          })
        )
        const { tokens, traceId } = yield* automation(server.baseUrl)

        const inTrace = () => otlp.received.filter((r) => r.span.traceId === traceId).map((r) => r.span)
        const named = (name: string) => inTrace().find((s) => s.name === name)
        const attribute = (span: OtlpSpan, key: string) => span.attributes.find((a) => a.key === key)?.value
        // The platform names a server span before routing (`http.server POST`); its router adds `http.route`.
        const served = (method: string, route: string) =>
          inTrace().find((s) =>
            s.name === `http.server ${method}` && JSON.stringify(attribute(s, "http.route")) === JSON.stringify({
                stringValue: route
              })
          )
        const everySpan = () => otlp.received.map((r) => r.span)
        /** The convergence linked to a request's wait, and the cluster call in its own trace. */
        const convergedFor = (waitName: string, convergeName: string, call: string) => {
          const wait = named(waitName)
          const convergence = wait === undefined ?
            undefined :
            everySpan().find((s) => s.name === convergeName && (s.links ?? []).some((l) => l.spanId === wait.spanId))
          const applied = convergence === undefined ?
            undefined :
            everySpan().find((s) => s.name === call && s.traceId === convergence.traceId)
          return { wait, convergence, applied }
        }
        yield* Effect.promise(() =>
          waitFor(
            () =>
              served("POST", "/pods") !== undefined &&
              convergedFor("PodConvergence.wait", "PodConvergence.converge", "Orchestrator.applyPod").applied !==
                undefined &&
              convergedFor("NetworkApplier.wait", "NetworkApplier.converge", "Orchestrator.applyVpc").applied !==
                undefined,
            () => "the spans"
          )
        )
        expect([...otlp.paths]).toEqual(["/v1/traces"])
        expect(new Set(otlp.received.map((r) => r.serviceName))).toEqual(new Set(["tenet-under-test"]))

        // The VPC's request: a server span whose parent is the client's (in the caller's process),
        // the use-case beneath it, and the store and cluster calls beneath that.
        const spans = inTrace()
        const byId = new Map(spans.map((s) => [s.spanId, s]))
        const ancestors = (span: OtlpSpan): ReadonlyArray<string> => {
          const parent = span.parentSpanId === undefined ? undefined : byId.get(span.parentSpanId)
          return parent === undefined ? [] : [parent.name, ...ancestors(parent)]
        }
        const request = served("POST", "/vpcs")!
        expect(request.kind).toBe(2) // SERVER
        expect(request.parentSpanId).toMatch(/^[0-9a-f]{16}$/)
        expect(byId.has(request.parentSpanId!)).toBe(false)
        expect(attribute(request, "http.route")).toEqual({ stringValue: "/vpcs" })
        // A VPC's create answers 200, as the span records (an int attribute, however the JSON spells it).
        expect(Number(Object.values(attribute(request, "http.response.status_code") ?? {})[0])).toBe(200)
        const within = (span: OtlpSpan, ancestor: OtlpSpan): boolean => {
          const parent = span.parentSpanId === undefined ? undefined : byId.get(span.parentSpanId)
          return parent !== undefined && (parent === ancestor || within(parent, ancestor))
        }
        const underRequest = spans.filter((s) => within(s, request))
        const names = new Set(underRequest.map((s) => s.name))
        for (const expected of ["Vpcs.create", "Store.commit", "NetworkApplier.wait"]) {
          expect(names, expected).toContain(expected)
        }
        expect(ancestors(underRequest.find((s) => s.name === "Store.commit")!)).toContain("Vpcs.create")
        // The request does not touch the cluster: it waits for its VPC's convergence, which runs
        // on the replica's queue in a trace of its own, linked to each request it answers.
        expect(names).not.toContain("Orchestrator.applyVpc")
        const vpcConverged = convergedFor("NetworkApplier.wait", "NetworkApplier.converge", "Orchestrator.applyVpc")
        expect(underRequest).toContain(vpcConverged.wait)
        expect(vpcConverged.convergence?.traceId).not.toBe(traceId)
        // A pod's the same way.
        const podRequest = served("POST", "/pods")!
        const podConverged = convergedFor("PodConvergence.wait", "PodConvergence.converge", "Orchestrator.applyPod")
        expect(within(podConverged.wait!, podRequest)).toBe(true)
        expect(spans.filter((s) => within(s, podRequest)).map((s) => s.name)).not.toContain("Orchestrator.applyPod")
        // The store calls say which backend, and nothing about their arguments.
        expect(attribute(named("Store.commit")!, "tenet.backend")).toEqual({ stringValue: "embedded" })

        // No secret anywhere in what was exported: passwords, tokens, env values, the provider token.
        const exported = JSON.stringify(otlp.received)
        for (const secret of [ADMIN_PASSWORD, TENANT_PASSWORD, ENV_SECRET, EDGE_TOKEN, ...tokens]) {
          expect(exported).not.toContain(secret)
        }
        // The token headers are named, their values redacted.
        const tokenHeaders = otlp.received.flatMap((r) =>
          r.span.attributes.filter((a) => /^http\.request\.header\.x-(auth|admin|api)-token$/.test(a.key))
        )
        expect(tokenHeaders.length).toBeGreaterThan(0)
        for (const header of tokenHeaders) expect(header.value).toEqual({ stringValue: "<redacted>" })

        // The request's log line names its trace next to its request id.
        const line = server.output().split("\n").filter((l) => l.startsWith("{")).map((l) => JSON.parse(l)).find((
          entry
        ) => entry.span_id === request.spanId)
        expect(line).toMatchObject({ trace_id: traceId, request_id: expect.any(String) })
      }).pipe(Effect.scoped),
    90_000
  )

  it.live("without OpenTelemetry's variables no trace is recorded or logged", () =>
    Effect.gen(function*() {
      const server = yield* Effect.promise(() =>
        startServer({ ...storeSettings(), TENET_ADMIN_PASSWORD: ADMIN_PASSWORD, TENET_LOG_LEVEL: "debug" })
      )
      const health = yield* Effect.promise(() =>
        fetch(`${server.baseUrl}/healthz`, {
          headers: { traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01" }
        })
      )
      expect(health.status).toBe(200)
      yield* Effect.promise(() => waitFor(() => server.output().includes("/healthz"), () => "the request's log line"))
      expect(server.output()).toContain("request_id")
      expect(server.output()).not.toContain("trace_id")
    }), 90_000)
})
