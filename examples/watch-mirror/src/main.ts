/**
 * `pnpm start`: follows a tenant's VPCs on TENET_URL (as TENET_TENANT with TENET_PASSWORD) until
 * interrupted; without TENET_URL, against a Tenet started in this process, making and deleting a
 * few VPCs to follow.
 */
import { HttpServer } from "@effect/platform"
import { PromiseClient } from "@tenet/client"
import { TestServer } from "@tenet/server"
import { Effect, Layer } from "effect"
import { follow } from "./mirror.js"

const onServer = async (baseUrl: string, demo: boolean) => {
  if (demo) {
    const admin = await PromiseClient.loginAdmin({
      baseUrl,
      username: TestServer.ADMIN_USERNAME,
      password: TestServer.ADMIN_PASSWORD
    })
    await admin.tenants.create({ payload: { name: "mirrored", password: "mirrored-password" } })
    await admin.close()
  }
  const tenet = await PromiseClient.loginTenant({
    baseUrl,
    name: process.env.TENET_TENANT ?? "mirrored",
    password: process.env.TENET_PASSWORD ?? "mirrored-password"
  })
  const mirror = await follow(tenet, console.log)
  if (demo) {
    const made = await tenet.vpcs.create({ payload: { name: "prod", enable_internet: true } })
    await tenet.vpcs.create({ payload: { name: "staging", enable_internet: false } })
    await tenet.vpcs.delete({ path: { vpc_id: made.id } })
    await new Promise((resolve) => setTimeout(resolve, 1000))
    console.log(`mirror: ${[...mirror.vpcs.values()].join(", ")}`)
    await mirror.stop()
    await tenet.close()
  }
}

const run = process.env.TENET_URL !== undefined
  ? onServer(process.env.TENET_URL, false)
  : Effect.runPromise(
    Effect.flatMap(
      HttpServer.HttpServer,
      (server) =>
        Effect.promise(() =>
          onServer(`http://127.0.0.1:${server.address._tag === "TcpAddress" ? server.address.port : 0}`, true)
        )
    ).pipe(Effect.provide(Layer.fresh(TestServer.layer())))
  )

run.catch((error) => {
  console.error(error)
  process.exitCode = 1
})
