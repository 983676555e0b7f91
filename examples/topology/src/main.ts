/**
 * `pnpm start [file.json]`: starts Tenet in this process on the in-memory platform (a random
 * loopback port), previews and then deploys the topology in the file (default: this
 * example's topology.json) through the client, prints the plan and the result. Set TENET_URL (with TENET_ADMIN_USERNAME /
 * TENET_ADMIN_PASSWORD) to use a running server.
 */
import { HttpServer } from "@effect/platform"
import { TestServer } from "@tenet/server"
import { Console, Effect, Layer } from "effect"
import { readFileSync } from "node:fs"
import { resolve } from "node:path"
import { fileURLToPath } from "node:url"
import { deploy, describe, describePlan } from "./deploy.js"

// A file named on the command line is relative to where pnpm was run (INIT_CWD), not to this package.
const file = process.argv[2] === undefined
  ? fileURLToPath(new URL("../topology.json", import.meta.url))
  : resolve(process.env.INIT_CWD ?? process.cwd(), process.argv[2])
const topology = JSON.parse(readFileSync(file, "utf8"))
const tenantName = `example-${Date.now().toString(36)}`

const against = process.env.TENET_URL
const program = against !== undefined
  ? deploy(
    {
      baseUrl: against,
      adminUsername: process.env.TENET_ADMIN_USERNAME ?? "admin",
      adminPassword: process.env.TENET_ADMIN_PASSWORD ?? ""
    },
    topology,
    tenantName
  )
  : Effect.flatMap(HttpServer.HttpServer, (server) =>
    deploy(
      {
        baseUrl: `http://127.0.0.1:${server.address._tag === "TcpAddress" ? server.address.port : 0}`,
        adminUsername: TestServer.ADMIN_USERNAME,
        adminPassword: TestServer.ADMIN_PASSWORD
      },
      topology,
      tenantName
    )).pipe(Effect.provide(Layer.fresh(TestServer.layer())))

Effect.runPromise(
  Effect.flatMap(program, ({ plan, view }) => Console.log([...describePlan(plan), ...describe(view)].join("\n")))
).catch((error) => {
  console.error(error)
  process.exitCode = 1
})
