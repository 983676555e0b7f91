/**
 * Scale on the memory store: one topology of 50 VPCs, 200 subnets and 1,000 pods deployed
 * through the API; then 10,000 tenants with a VPC and 10 rules each, created through the
 * use-cases, with the heap they take and list latency at that size; then every one of them
 * authenticated once, which fills the read model to its capacity, and the heap that takes.
 */
import { HttpClient, HttpClientRequest } from "@effect/platform"
import type { Principal } from "@tenet/core"
import { Identity, ReadModel, SecurityRule, SecurityRules, Store, Tenant, Tenants, Vault, Vpc, Vpcs } from "@tenet/core"
import { Effect, ManagedRuntime, Schema } from "effect"
import { TestServer } from "../src/index.js"
import { heapMb } from "./Soak.js"

export interface ScaleReport {
  readonly topologyMs: number
  readonly topologyPods: number
  readonly tenants: number
  readonly heapPerTenantKb: number
  readonly readModel: { readonly views: number; readonly capacity: number; readonly heapPerViewKb: number }
  readonly lists: ReadonlyArray<{ readonly name: string; readonly p50: number; readonly p99: number }>
}

type Json = Record<string, any> // eslint-disable-line @typescript-eslint/no-explicit-any -- JSON answers

const send = (method: "GET" | "POST", path: string, headers: Record<string, string>, body?: unknown) =>
  Effect.gen(function*() {
    const http = yield* HttpClient.HttpClient
    let request = HttpClientRequest.make(method)(path).pipe(HttpClientRequest.setHeaders(headers))
    if (body !== undefined) request = HttpClientRequest.bodyUnsafeJson(request, body)
    const response = yield* http.execute(request)
    const text = yield* response.text
    if (response.status >= 300) return yield* Effect.dieMessage(`${method} ${path}: ${response.status} ${text}`)
    return JSON.parse(text) as Json
  }).pipe(Effect.scoped)

/** A `POST /tenants/{id}/topology` body: `pods` spread over the subnets in turn. */
export const topology = (vpcs: number, subnetsPerVpc: number, pods: number) => ({
  vpcs: Array.from({ length: vpcs }, (_, v) => ({ name: `v${v}`, enable_internet: v % 2 === 0 })),
  subnets: Array.from({ length: vpcs * subnetsPerVpc }, (_, i) => {
    const v = Math.floor(i / subnetsPerVpc)
    const s = i % subnetsPerVpc
    return { name: `s${s}`, vpc_name: `v${v}`, cidr: `10.${s}.0.0/16`, gateway_ip: `10.${s}.0.1` }
  }),
  pods: Array.from({ length: pods }, (_, i) => {
    const subnet = i % (vpcs * subnetsPerVpc)
    return {
      name: `p${i}`,
      vpc_name: `v${Math.floor(subnet / subnetsPerVpc)}`,
      subnet_name: `s${subnet % subnetsPerVpc}`,
      container_image: "nginx:1.27"
    }
  })
})

/** `run` `times` times, one after another: the p50 and p99 of its durations (ms). */
export const timed = async (times: number, run: () => Promise<unknown>) => {
  const samples: Array<number> = []
  for (let i = 0; i < times; i++) {
    const started = performance.now()
    await run()
    samples.push(performance.now() - started)
  }
  samples.sort((a, b) => a - b)
  return { p50: samples[Math.floor(times / 2)]!, p99: samples[Math.min(times - 1, Math.floor(times * 0.99))]! }
}

/**
 * `count` tenants, each with a VPC and 10 rules, created through the use-cases; the last one's
 * VPC and caller, and every tenant's token.
 */
export const fillTenants = (count: number, prefix = "t") =>
  Effect.gen(function*() {
    const decodeTenant = Schema.decodeUnknownSync(Tenant.TenantCreate)
    const decodeVpc = Schema.decodeUnknownSync(Vpc.VpcCreate)
    const decodeRule = Schema.decodeUnknownSync(SecurityRule.SecurityRuleCreate)
    const tenants = yield* Tenants.Tenants
    const identity = yield* Identity.Identity
    const vpcs = yield* Vpcs.Vpcs
    const rules = yield* SecurityRules.SecurityRules
    let lastVpc = ""
    let lastCaller: Principal.TenantPrincipal | undefined
    const tokens: Array<string> = []
    for (let t = 0; t < count; t++) {
      const tenant = yield* tenants.create(decodeTenant({ name: `${prefix}${t}`, password: "scale-password" }))
      const caller: Principal.TenantPrincipal = { _tag: "Tenant", tenant_id: tenant.id, name: tenant.name }
      const session = yield* identity.tenantLogin({ name: tenant.name, password: "scale-password" }, {
        source_address: null
      })
      const vpc = yield* vpcs.create(
        caller,
        decodeVpc({ tenant_id: tenant.id, token: session.api_token, name: "main", enable_internet: false })
      )
      for (let r = 0; r < 9; r++) {
        yield* rules.create(
          caller,
          decodeRule({
            vpc_id: vpc.id,
            name: `r${r}`,
            direction: "ingress",
            action: "allow",
            priority: 100 + r,
            protocol: "tcp",
            ports: String(8000 + r),
            remote_type: "cidr",
            remote_cidr: "10.0.0.0/8"
          })
        )
      }
      lastVpc = vpc.id
      lastCaller = caller
      tokens.push(session.api_token)
    }
    return { vpc: lastVpc, caller: lastCaller!, tokens }
  }).pipe(Effect.orDie)

/**
 * A read model of its own over the platform's store, filled by authenticating every token once
 * (each tenant's snapshot loaded), and the heap that took per snapshot it holds.
 */
export const readModelHeap = (tokens: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const store = yield* Store.Store
    const vault = yield* Vault.Vault
    const model = ReadModel.make(store)
    const empty = heapMb()
    yield* Effect.forEach(tokens, (token) => model.authenticate(vault.hashToken(token)), { discard: true })
    const full = heapMb()
    const size = yield* model.size
    return { views: size.tenants, capacity: size.capacity, heapPerViewKb: ((full - empty) * 1024) / size.tenants }
  }).pipe(Effect.orDie)

export const runScale = async (options: { readonly tenants: number }): Promise<ScaleReport> => {
  const runtime = ManagedRuntime.make(TestServer.layer())
  try {
    const admin = await runtime.runPromise(
      send("POST", "/admin/login", {}, { username: TestServer.ADMIN_USERNAME, password: TestServer.ADMIN_PASSWORD })
    )
    const adminHeaders = { "x-admin-token": admin.api_token as string }
    await runtime.runPromise(send("POST", "/tenants", adminHeaders, { name: "big", password: "big-password" }))
    const session = await runtime.runPromise(
      send("POST", "/tenants/login", {}, { name: "big", password: "big-password" })
    )
    const headers = { "x-auth-token": session.api_token as string }
    const body = { token: session.api_token, ...topology(50, 4, 1_000) }
    const started = performance.now()
    const deployed = await runtime.runPromise(send("POST", `/tenants/${session.id}/topology`, headers, body))
    const topologyMs = performance.now() - started
    const topologyPods = (deployed.vpcs as Array<Json>).flatMap((v) => v.subnets as Array<Json>)
      .reduce((n, s) => n + (s.pods as Array<unknown>).length, 0)

    const before = heapMb()
    const last = await runtime.runPromise(fillTenants(options.tenants))
    const after = heapMb()
    const readModel = await runtime.runPromise(readModelHeap(last.tokens))
    const lastSession = await runtime.runPromise(
      send("POST", "/tenants/login", {}, { name: last.caller.name, password: "scale-password" })
    )
    const tenantHeaders = { "x-auth-token": lastSession.api_token as string }
    const list = (path: string, h: Record<string, string>) => () => runtime.runPromise(send("GET", path, h))
    const lists = [
      {
        name: `GET /tenants (admin, ${options.tenants + 1} tenants)`,
        ...(await timed(20, list("/tenants", adminHeaders)))
      },
      { name: "GET /vpcs (one tenant among them)", ...(await timed(200, list("/vpcs", tenantHeaders))) },
      {
        name: "GET /security-rules?vpc_id= (10 rules)",
        ...(await timed(200, list(`/security-rules?vpc_id=${last.vpc}`, tenantHeaders)))
      }
    ]
    return {
      topologyMs,
      topologyPods,
      tenants: options.tenants,
      heapPerTenantKb: ((after - before) * 1024) / options.tenants,
      readModel,
      lists
    }
  } finally {
    await runtime.dispose()
  }
}

export const toMarkdown = (report: ScaleReport) =>
  [
    `- Topology of 50 VPCs, 200 subnets and ${report.topologyPods} pods in one \`POST /tenants/{id}/topology\`: ` +
    `${report.topologyMs.toFixed(0)} ms.`,
    `- ${report.tenants.toLocaleString("en-US")} tenants, each with a VPC and 10 rules: ` +
    `${report.heapPerTenantKb.toFixed(1)} KB of heap per tenant.`,
    `- Every one of them authenticated once: the read model holds ${report.readModel.views.toLocaleString("en-US")} ` +
    `snapshots (its capacity is ${report.readModel.capacity.toLocaleString("en-US")}; the least recently used go), ` +
    `${report.readModel.heapPerViewKb.toFixed(1)} KB of heap each.`,
    "",
    "| list at that size | p50 (ms) | p99 (ms) |",
    "|---|---:|---:|",
    ...report.lists.map((l) => `| ${l.name} | ${l.p50.toFixed(2)} | ${l.p99.toFixed(2)} |`)
  ].join("\n")

if (import.meta.url === `file://${process.argv[1]}`) {
  console.log(toMarkdown(await runScale({ tenants: Number(process.env.TENET_SCALE_TENANTS ?? 10_000) })))
}
