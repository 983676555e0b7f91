/**
 * An address set's edit across VPCs, timed on each store (`tenet-server` in a process of its own,
 * as in `Load.ts`), one request at a time: a set of 256 entries used by 50 rules across 20 VPCs
 * (each VPC with a guardrail the edits keep), two of its entries swapped each round.
 *
 * - the dry run (`PATCH /address-sets/{id}?dry_run=true`: the impact in all 20 VPCs);
 * - the edit, answered once every VPC using the set is in force (so at most the commit plus the
 *   convergence of 20 VPCs: the commit's own time is under it);
 * - converged: from the edit sent until every one of the 20 VPCs reports `applied: true`.
 *
 * Targets (PostgreSQL): dry run < 200 ms, edit < 500 ms, every VPC converged within 5 s.
 * Runs by itself too: `node --conditions=@tenet/source --import tsx packages/server/bench/AddressSets.ts`.
 */
import { fileURLToPath } from "node:url"
import * as Load from "./Load.js"
import * as Writes from "./Writes.js"

export interface AddressSetRow {
  readonly store: Load.StoreKind
  readonly planMs: number
  readonly editMs: number
  readonly convergedMs: number
}

export const SHAPE = { entries: 256, rules: 50, vpcs: 20 } as const
const ROUNDS = 7

const median = (xs: ReadonlyArray<number>) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!

/** 256 networks of 198.18.0.0/15; `round` swaps the last two for two others, so each edit moves verdicts. */
const entries = (round: number) =>
  Array.from({ length: SHAPE.entries }, (_, i) => ({
    cidr: i >= SHAPE.entries - 2 && round % 2 === 1 ? `198.19.${i}.0/24` : `198.18.${i}.0/24`,
    description: `site ${i}`
  }))

const onStore = async (store: Load.StoreKind): Promise<AddressSetRow> => {
  const tenet = await Load.startTenet(store)
  try {
    const port = tenet.port
    const admin = {
      "x-admin-token":
        (await Load.must(port, "POST", "/admin/login", {}, { username: "admin", password: Load.PASSWORD }))
          .body.api_token
    }
    const { creds, headers } = await Writes.newTenant(port, admin, "sets")
    const set = (await Load.must(port, "POST", "/address-sets", headers, { name: "sites", entries: entries(0) }))
      .body
    const vpcs: Array<string> = []
    for (let v = 0; v < SHAPE.vpcs; v++) {
      const vpc = (await Load.must(port, "POST", "/vpcs", headers, { ...creds, name: `v${v}`, enable_internet: true }))
        .body
      await Load.must(port, "POST", "/subnets", headers, {
        ...creds,
        vpc_id: vpc.id,
        name: "apps",
        cidr: "10.250.1.0/24",
        gateway_ip: "10.250.1.1"
      })
      await Load.must(port, "POST", `/vpcs/${vpc.id}/guardrails`, headers, {
        name: "no telnet from partners",
        require: "deny",
        direction: "ingress",
        protocol: "tcp",
        ports: "23",
        remote_cidr: "203.0.113.0/24"
      })
      vpcs.push(vpc.id)
    }
    for (let r = 0; r < SHAPE.rules; r++) {
      await Load.must(port, "POST", "/security-rules", headers, {
        vpc_id: vpcs[r % SHAPE.vpcs],
        name: `from sites ${r}`,
        direction: "ingress",
        action: "allow",
        priority: 100 + r,
        protocol: "tcp",
        ports: String(8000 + r),
        remote_type: "address_set",
        remote_address_set_id: set.id
      })
    }
    const allApplied = async () => {
      for (;;) {
        const lists = await Promise.all(
          vpcs.map((id) => Load.must(port, "GET", `/security-rules?vpc_id=${id}`, headers))
        )
        if (lists.every((l) => l.body.applied === true)) return
        await new Promise((resolve) => setTimeout(resolve, 20))
      }
    }
    const plans: Array<number> = []
    const edits: Array<number> = []
    const converged: Array<number> = []
    for (let round = 1; round <= ROUNDS; round++) {
      const body = { entries: entries(round) }
      let start = performance.now()
      const plan = await Load.must(port, "PATCH", `/address-sets/${set.id}?dry_run=true`, headers, body)
      plans.push(performance.now() - start)
      if (plan.body.vpcs.length !== SHAPE.vpcs) throw new Error(`the plan covers ${plan.body.vpcs.length} VPCs`)
      start = performance.now()
      await Load.must(port, "PATCH", `/address-sets/${set.id}`, headers, body)
      edits.push(performance.now() - start)
      await allApplied()
      converged.push(performance.now() - start)
    }
    return { store, planMs: median(plans), editMs: median(edits), convergedMs: median(converged) }
  } finally {
    await tenet.stop()
  }
}

export const runAddressSets = async (
  stores: ReadonlyArray<Load.StoreKind> = Load.STORES
): Promise<ReadonlyArray<AddressSetRow>> => {
  const rows: Array<AddressSetRow> = []
  for (const store of stores) rows.push(await onStore(store))
  return rows
}

const ms = (n: number) => `${n < 10 ? n.toFixed(1) : Math.round(n)} ms`

export const toMarkdown = (rows: ReadonlyArray<AddressSetRow>) => {
  const postgres = rows.find((r) => r.store === "postgres")
  const met = (ok: boolean) => (ok ? "yes" : "no")
  return [
    `Medians of ${ROUNDS} edits of a set of ${SHAPE.entries} entries used by ${SHAPE.rules} rules across ${SHAPE.vpcs} VPCs (each with a guardrail), one request at a time. The edit is answered once every VPC using the set is in force, so its time bounds the commit's.`,
    "",
    "| Store | Dry run (20 VPCs' impact) | Edit, in force | Every VPC converged |",
    "|---|---|---|---|",
    ...rows.map((r) => `| ${r.store} | ${ms(r.planMs)} | ${ms(r.editMs)} | ${ms(r.convergedMs)} |`),
    ...(postgres === undefined ? [] : [
      "",
      "| Target (PostgreSQL) | This run | Met |",
      "|---|---|---|",
      `| dry run < 200 ms | ${ms(postgres.planMs)} | ${met(postgres.planMs < 200)} |`,
      `| edit committed < 500 ms | ${ms(postgres.editMs)} (in force) | ${met(postgres.editMs < 500)} |`,
      `| every VPC converged < 5 s | ${ms(postgres.convergedMs)} | ${met(postgres.convergedMs < 5000)} |`
    ])
  ].join("\n")
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  console.log(toMarkdown(await runAddressSets()))
}
