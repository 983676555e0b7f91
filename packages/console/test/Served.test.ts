/**
 * How the server hands out the console: the page and its two files, each with its type, under
 * a policy that lets the page load only them and talk only to this server; anything else
 * under `/console/` is a JSON 404, however its name is spelled.
 */
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { type Running, startServer } from "./Browser.js"

describe("the console's files", () => {
  let server: Running
  beforeAll(async () => {
    server = await startServer()
  })
  afterAll(() => server?.stop())

  it("are served with their types and a strict content policy", async () => {
    for (
      const [path, type] of [
        ["/console", "text/html; charset=utf-8"],
        ["/console/", "text/html; charset=utf-8"],
        ["/console/console.js", "text/javascript; charset=utf-8"],
        ["/console/console.css", "text/css; charset=utf-8"]
      ]
    ) {
      const response = await fetch(`${server.url}${path}`)
      expect([path, response.status, response.headers.get("content-type")]).toEqual([path, 200, type])
      const policy = response.headers.get("content-security-policy")!
      expect(policy).toContain("default-src 'none'")
      expect(policy).toContain("connect-src 'self'")
      expect(response.headers.get("x-content-type-options")).toBe("nosniff")
    }
  })

  it("nothing else is: not the server's own files, not a path outside", async () => {
    for (
      const path of [
        "/console/package.json",
        "/console/..%2fpackage.json",
        "/console/..%2f..%2f..%2fpackage.json",
        "/console/index.html%00.js",
        "/console/bin.js",
        // Names every object has: the allowlist holds only its own.
        "/console/constructor",
        "/console/__proto__",
        "/console/toString",
        "/console/hasOwnProperty"
      ]
    ) {
      const response = await fetch(`${server.url}${path}`)
      expect([path, response.status]).toEqual([path, 404])
      const { detail } = await response.json() as { detail: string }
      expect(detail).not.toContain("not built")
    }
    // `/console/%2e%2e` is `/` to every URL parser: the root, which sends a browser to the console.
    const climbed = await fetch(`${server.url}/console/%2e%2e`, { redirect: "manual" })
    expect([climbed.status, climbed.headers.get("location")]).toEqual([302, "/console"])
  })
})
