/**
 * What every answer tells a browser about itself: `X-Content-Type-Options: nosniff` (a body is
 * what its type says, never sniffed into a script or a page), and for an HTML page a
 * content-security policy that lets it load nothing but this server's files and its own inline
 * scripts (each allowed by its SHA-256, so a script injected into the page is not), be framed by
 * no one (`frame-ancestors 'none'`) and send no referrer. A page that states its own policy (the
 * console's, stricter: no inline script or style at all) keeps it; the API reference at `/docs`,
 * rendered by Scalar's bundle inline, gets this one, with the inline styles its bundle injects
 * and the WebAssembly it compiles.
 */
import type { HttpServerResponse } from "@effect/platform"
import { createHash } from "node:crypto"

const ALWAYS = { "x-content-type-options": "nosniff" }

/** The inline scripts of a page (those without `src`), as CSP hash sources. */
const scriptHashes = (html: string): Array<string> =>
  [...html.matchAll(/<script(?![^>]*\bsrc=)[^>]*>([\s\S]*?)<\/script>/gi)].map((m) =>
    `'sha256-${createHash("sha256").update(m[1]!).digest("base64")}'`
  )

const policyOf = (html: string) =>
  [
    "default-src 'none'",
    // Scalar compiles a WebAssembly module: that, and no other eval, is allowed.
    `script-src 'self' 'wasm-unsafe-eval' ${scriptHashes(html).join(" ")}`.trimEnd(),
    "style-src 'self' 'unsafe-inline'",
    "img-src 'self' data:",
    "font-src 'self' data:",
    "connect-src 'self'",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'"
  ].join("; ")

/** A page's headers, by its body: the same page (Scalar's is made once) is hashed once. */
const pageHeaders = new WeakMap<Uint8Array, Record<string, string>>()

/** The headers `response` should carry that it does not. */
export const headersOf = (response: HttpServerResponse.HttpServerResponse): Record<string, string> => {
  const html = response.body.contentType?.startsWith("text/html") === true
  if (!html || response.headers["content-security-policy"] !== undefined || response.body._tag !== "Uint8Array") {
    return response.headers["x-content-type-options"] === undefined ? ALWAYS : {}
  }
  const body = response.body.body
  let headers = pageHeaders.get(body)
  if (headers === undefined) {
    headers = {
      ...ALWAYS,
      "content-security-policy": policyOf(new TextDecoder().decode(body)),
      "referrer-policy": "no-referrer"
    }
    pageHeaders.set(body, headers)
  }
  return headers
}
