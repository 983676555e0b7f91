/** `pnpm start`: provisions a tenant's database network through the embedded use-cases. */
import { Console, Effect } from "effect"
import * as Embedded from "./Embedded.js"
import { HostState } from "./HostCluster.js"
import { provision } from "./provision.js"

const program = Effect.gen(function*() {
  const result = yield* provision("embedded-acme")
  const host = yield* HostState
  yield* Console.log(`tenant ${result.tenant.name}: VPC ${result.vpc.name}, subnet ${result.subnet.cidr}`)
  yield* Console.log(`pod ${result.pod.name} on the host cluster at ${host.pods.get(result.pod.id)?.vip}`)
  yield* Console.log(`the host cluster enforces ${host.plans.get(result.vpc.id)?.entries.length} rule(s) in the VPC`)
  yield* Console.log(
    `postgres from 10.60.3.4: ${result.fromApp.reach}; from 198.51.100.7: ${result.fromElsewhere.reach}`
  )
}).pipe(Effect.provide(Embedded.layer))

Effect.runPromise(program).catch((error) => {
  console.error(error)
  process.exitCode = 1
})
