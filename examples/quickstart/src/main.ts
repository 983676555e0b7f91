/**
 * `pnpm start`: runs the quick start against TENET_URL (with TENET_ADMIN_USERNAME and
 * TENET_ADMIN_PASSWORD), or, without it, against a Tenet started in this process on the
 * in-memory platform. Each run is a new tenant, so a server takes it any number of times. A
 * refusal of the API (or the server out of reach) ends it with the API's words on one line.
 */
import { HttpServer } from "@effect/platform"
import { TestServer } from "@tenet/server"
import { ManagedRuntime } from "effect"
import { quickstart, type Server } from "./quickstart.js"

const tenantName = `acme-${Date.now().toString(36)}`

/** A Tenet started in this process on the in-memory platform, serving while `use` runs. */
const inProcess = async <A>(use: (server: Server) => Promise<A>) => {
  const runtime = ManagedRuntime.make(TestServer.layer())
  try {
    const { address } = await runtime.runPromise(HttpServer.HttpServer)
    return await use({
      baseUrl: `http://127.0.0.1:${address._tag === "TcpAddress" ? address.port : 0}`,
      adminUsername: TestServer.ADMIN_USERNAME,
      adminPassword: TestServer.ADMIN_PASSWORD
    })
  } finally {
    await runtime.dispose()
  }
}

const run = process.env.TENET_URL !== undefined
  ? quickstart(
    {
      baseUrl: process.env.TENET_URL,
      adminUsername: process.env.TENET_ADMIN_USERNAME ?? "admin",
      adminPassword: process.env.TENET_ADMIN_PASSWORD ?? ""
    },
    tenantName,
    console.log
  )
  : inProcess((server) => quickstart(server, tenantName, console.log))

/**
 * A failure in one line: the client's errors are tagged (`Conflict`, `Unauthorized`, a
 * transport error, ...) and say what went wrong; anything else is a bug here, shown whole.
 */
const said = (error: unknown) =>
  error instanceof Error && "_tag" in error ? `quickstart: ${String(error._tag)}: ${error.message}` : error

run.catch((error) => {
  console.error(said(error))
  process.exitCode = 1
})
