/**
 * The tunnel provider's published contract, held over the adapter's tests: Prism, started as a
 * validating proxy from Cloudflare's own OpenAPI document (`shared/vendor/cloudflare`, with its
 * errata), stands between the adapter and the stand-in provider. A request the document does
 * not allow, and an answer of the stand-in's that it does not allow, comes back as Prism's
 * error; and since Prism lets fields and query parameters the document does not name through,
 * `unnamed` finds those in what the stand-in received.
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process"
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import { tmpdir } from "node:os"
import { dirname, join, resolve } from "node:path"
import { fileURLToPath } from "node:url"

const here = dirname(fileURLToPath(import.meta.url))

/** Cloudflare's schema for the calls the adapter makes, beside the checkout in `shared/`. */
export const VENDOR = process.env.TENET_CLOUDFLARE_SCHEMA ?? resolve(here, "../../../../shared/vendor/cloudflare")

const PRISM = resolve(here, "../node_modules/.bin/prism")

type Json = Record<string, unknown>

const isObject = (u: unknown): u is Json => typeof u === "object" && u !== null && !Array.isArray(u)

export interface Document {
  readonly paths: Record<string, Record<string, Json>>
  /** Schemas, parameters, responses...: by kind, then by name. */
  readonly components: Record<string, Record<string, unknown> | undefined>
}

/**
 * One more erratum, found by these tests (relax): every 4XX answer of the tunnel and DNS
 * operations is declared as `allOf` the operation's success envelope (`success: true`, a
 * result) and the common failure (`success: false`, `result: null`), which no answer can be;
 * Cloudflare's failures are the common failure alone (its API reference's error examples, and
 * the zones operations' own 4XX, declared that way). So the failure is what a 4XX must be.
 */
const failuresAlone = (document: Document) => {
  for (const item of Object.values(document.paths)) {
    for (const operation of Object.values(item)) {
      const responses = isObject(operation.responses) ? operation.responses : {}
      for (const [status, response] of Object.entries(responses)) {
        const media = isObject(response) && isObject(response.content)
          ? response.content["application/json"]
          : undefined
        if (!/^4xx$/i.test(status) || !isObject(media) || !isObject(media.schema)) continue
        const parts = Array.isArray(media.schema.allOf) ? media.schema.allOf : []
        const failure = parts.find((p) => isObject(p) && String(p.$ref).endsWith("api-response-common-failure"))
        if (failure !== undefined) media.schema = failure
      }
    }
  }
  return document
}

/** The document Prism validates against: the subset with its errata (`write-spec.mjs`) and ours. */
export const write = (dir: string): { readonly path: string; readonly document: Document } => {
  const path = join(dir, "cloudflare.json")
  execFileSync(process.execPath, [join(VENDOR, "write-spec.mjs"), path])
  const document = failuresAlone(JSON.parse(readFileSync(path, "utf8")) as Document)
  writeFileSync(path, JSON.stringify(document))
  return { path, document }
}

const deref = (document: Document, node: unknown): unknown => {
  if (!isObject(node) || typeof node.$ref !== "string") return node
  const [, , kind, name] = node.$ref.split("/")
  return deref(document, document.components[kind!]?.[name!])
}

/** The schemas a value may match, through `allOf`, `anyOf` and `oneOf`. */
const branches = (document: Document, schema: unknown): ReadonlyArray<Json> => {
  const resolved = deref(document, schema)
  if (!isObject(resolved)) return []
  const nested = ["allOf", "anyOf", "oneOf"].flatMap((k) => Array.isArray(resolved[k]) ? resolved[k] : [])
  return [resolved, ...nested.flatMap((s) => branches(document, s))]
}

/** The fields of `value` (at `at`) that no branch of `schema` names, recursively. */
const unnamedFields = (document: Document, schema: unknown, value: unknown, at: string): ReadonlyArray<string> => {
  const all = branches(document, schema)
  if (Array.isArray(value)) {
    const items = all.flatMap((s) => s.items === undefined ? [] : [s.items])
    return value.flatMap((v, i) =>
      items.length === 0 ? [] : unnamedFields(document, { anyOf: items }, v, `${at}[${i}]`)
    )
  }
  if (!isObject(value)) return []
  return Object.entries(value).flatMap(([key, v]) => {
    const named = all.flatMap((s) => isObject(s.properties) && key in s.properties ? [s.properties[key]] : [])
    const open = all.some((s) => isObject(s.additionalProperties) || s.additionalProperties === true)
    if (named.length === 0) return open ? [] : [`${at}.${key}`]
    return unnamedFields(document, { anyOf: named }, v, `${at}.${key}`)
  })
}

/** The document's operation for a request's method and concrete path. */
const operationOf = (document: Document, method: string, path: string): Json | undefined => {
  for (const [template, item] of Object.entries(document.paths)) {
    const pattern = new RegExp(`^${template.replace(/\{[^}]+\}/g, "[^/]+")}$`)
    if (pattern.test(path)) return item[method.toLowerCase()]
  }
  return undefined
}

export interface Sent {
  readonly method: string
  readonly path: string
  readonly query: ReadonlyArray<string>
  readonly body: unknown
}

/** What a request sent that its operation in the document does not name. */
export const unnamed = (document: Document, request: Sent): ReadonlyArray<string> => {
  const operation = operationOf(document, request.method, request.path)
  const where = `${request.method} ${request.path}`
  if (operation === undefined) return [`${where}: no such operation`]
  const parameters = (Array.isArray(operation.parameters) ? operation.parameters : [])
    .map((p) => deref(document, p))
    .filter(isObject)
  const queries = new Set(parameters.filter((p) => p.in === "query").map((p) => String(p.name)))
  const body = deref(document, operation.requestBody)
  const content = isObject(body) && isObject(body.content) ? body.content["application/json"] : undefined
  const schema = isObject(content) ? content.schema : undefined
  return [
    ...request.query.filter((q) => !queries.has(q)).map((q) => `${where}: query parameter ${q}`),
    ...(request.body === undefined ? [] : unnamedFields(document, schema, request.body, "body")).map((f) =>
      `${where}: ${f}`
    )
  ]
}

const freePort = () =>
  new Promise<number>((done) => {
    const probe = Http.createServer()
    probe.listen(0, "127.0.0.1", () => {
      const { port } = probe.address() as AddressInfo
      probe.close(() => done(port))
    })
  })

export interface Proxy {
  readonly url: string
  readonly document: Document
  /** Where Prism forwards to: each test's stand-in provider, in turn. */
  upstream: string
  readonly close: () => Promise<void>
}

/**
 * Prism as a validating proxy (`--errors`), started once for a file: it forwards to a relay
 * whose target each test sets to its own stand-in.
 */
export const start = async (): Promise<Proxy> => {
  const dir = mkdtempSync(join(tmpdir(), "tenet-cloudflare-"))
  const { document, path } = write(dir)
  const relay = Http.createServer((req, res) => {
    const target = new URL(req.url ?? "/", proxy.upstream)
    const forward = Http.request(target, { method: req.method, headers: req.headers }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers)
      answer.pipe(res)
    })
    forward.on("error", () => res.destroy())
    req.pipe(forward)
  })
  await new Promise<void>((done) => relay.listen(0, "127.0.0.1", done))
  const port = await freePort()
  const prism: ChildProcess = spawn(PRISM, [
    "proxy",
    path,
    `http://127.0.0.1:${(relay.address() as AddressInfo).port}`,
    "--errors",
    "--port",
    String(port),
    "--host",
    "127.0.0.1",
    "--verboseLevel",
    "warn"
  ], { stdio: ["ignore", "pipe", "pipe"] })
  let output = ""
  prism.stdout!.on("data", (chunk) => (output += chunk))
  prism.stderr!.on("data", (chunk) => (output += chunk))
  const url = `http://127.0.0.1:${port}`
  // Prism says little at `warn`; it is up when it answers.
  for (let attempt = 0;; attempt++) {
    if (prism.exitCode !== null) throw new Error(`Prism did not start:\n${output}`)
    const up = await fetch(`${url}/zones`).then(() => true, () => false)
    if (up) break
    if (attempt > 300) throw new Error(`Prism did not answer in 30 s:\n${output}`)
    await new Promise((r) => setTimeout(r, 100))
  }
  const proxy: Proxy = {
    url,
    document,
    upstream: "http://127.0.0.1:9",
    close: async () => {
      prism.kill()
      await new Promise<void>((done) => relay.close(() => done()))
      rmSync(dir, { recursive: true, force: true })
    }
  }
  return proxy
}
