/**
 * `pnpm start`: runs the quick start against TENET_URL (with TENET_ADMIN_USERNAME and
 * TENET_ADMIN_PASSWORD), or, without it, against a Tenet started in this process on the
 * in-memory platform.
 */
import { HttpServer } from "@effect/platform"
import { TestServer } from "@tenet/server"
import { Effect, Layer } from "effect"
import { quickstart } from "./quickstart.js"

const tenantName = `acme-${Date.now().toString(36)}`

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
  : Effect.runPromise(
    Effect.flatMap(HttpServer.HttpServer, (server) =>
      Effect.promise(() =>
        quickstart(
          {
            baseUrl: `http://127.0.0.1:${server.address._tag === "TcpAddress" ? server.address.port : 0}`,
            adminUsername: TestServer.ADMIN_USERNAME,
            adminPassword: TestServer.ADMIN_PASSWORD
          },
          tenantName,
          console.log
        )
      )).pipe(Effect.provide(Layer.fresh(TestServer.layer())))
  )

run.catch((error) => {
  console.error(error)
  process.exitCode = 1
})
