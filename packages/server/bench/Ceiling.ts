/**
 * The ceiling: a bare `node:http` server answering each request with the bytes Tenet answers
 * it with, and doing nothing else. It runs in a process of its own, as Tenet and the floor do,
 * so that none of the three shares a core with the load generator.
 *
 * Run as a child process: TENET_REPLAY_PORT and TENET_REPLAY_ANSWERS (a JSON file mapping
 * "METHOD path" to the body) configure it.
 */
import { readFileSync } from "node:fs"
import { createServer } from "node:http"

const answers = new Map<string, string>(
  Object.entries(JSON.parse(readFileSync(process.env.TENET_REPLAY_ANSWERS!, "utf8")) as Record<string, string>)
)

const server = createServer((request, response) => {
  const body = answers.get(`${request.method} ${request.url}`) ?? "{}"
  // The body is read to its end, as any server with a JSON API must before answering.
  request.resume()
  request.on("end", () => {
    response.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(body) })
    response.end(body)
  })
})
server.listen(Number(process.env.TENET_REPLAY_PORT), "127.0.0.1")
process.on("SIGTERM", () => server.close(() => process.exit(0)))
