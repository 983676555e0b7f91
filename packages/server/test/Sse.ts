/** A `GET /watch` stream read as a client reads it: fetch, then Server-Sent Events frames. */
import { HttpServer } from "@effect/platform"
import { Effect } from "effect"

export interface Frame {
  readonly id: string | undefined
  readonly data: any
}

/** The test server's address. */
export const baseUrl = Effect.map(
  HttpServer.HttpServer,
  (server) => server.address._tag === "TcpAddress" ? `http://127.0.0.1:${server.address.port}` : ""
)

/** Opens a watch; `next(n)` waits for n more frames (or fails after `ms`); `close` ends it. */
export const open = async (url: string, headers: Record<string, string>) => {
  const controller = new AbortController()
  const response = await fetch(url, { headers, signal: controller.signal })
  const frames: Array<Frame> = []
  let buffer = ""
  let ended = false
  const waiting: Array<() => void> = []
  const pump = async () => {
    const reader = response.body!.getReader()
    const decoder = new TextDecoder()
    try {
      for (;;) {
        const { done, value } = await reader.read()
        if (done) break
        buffer += decoder.decode(value, { stream: true })
        let end: number
        while ((end = buffer.indexOf("\n\n")) >= 0) {
          const block = buffer.slice(0, end)
          buffer = buffer.slice(end + 2)
          const lines = block.split("\n")
          const id = lines.find((l) => l.startsWith("id: "))?.slice(4)
          const data = lines.filter((l) => l.startsWith("data: ")).map((l) => l.slice(6)).join("\n")
          frames.push({ id, data: JSON.parse(data) })
        }
        for (const wake of waiting.splice(0)) wake()
      }
    } catch {
      // aborted
    } finally {
      ended = true
      for (const wake of waiting.splice(0)) wake()
    }
  }
  const pumping = response.status === 200 ? pump() : Promise.resolve()
  return {
    response,
    frames,
    ended: () => ended,
    /** Settles when the server ends the stream (or `close` does). */
    finished: pumping,
    /** Waits until at least `count` frames have arrived. */
    until: async (check: (frames: ReadonlyArray<Frame>) => boolean, ms = 10_000) => {
      const deadline = Date.now() + ms
      while (!check(frames)) {
        if (ended || Date.now() > deadline) throw new Error(`watch: ${JSON.stringify(frames.map((f) => f.data))}`)
        await new Promise<void>((resolve) => {
          waiting.push(resolve)
          setTimeout(resolve, 50)
        })
      }
      return frames
    },
    close: async () => {
      controller.abort()
      await pumping
    }
  }
}

/** The change events among the frames (bookmarks left out). */
export const changes = (frames: ReadonlyArray<Frame>) => frames.map((f) => f.data).filter((d) => d.type !== "BOOKMARK")
