/**
 * Rules as code and guardrails, timed on each store (`tenet-server` in a process of its own, as
 * in `Load.ts`), one request at a time:
 *
 * - the plan (`PUT /vpcs/{id}/security-rules?dry_run=true`) and the apply of a 200-rule
 *   declaration that changes every rule of a 200-rule VPC (targets: plan under 1 s, apply under
 *   1.5 s on PostgreSQL);
 * - a rule create in a VPC of 50 rules with no guardrail and with 10 (target: the check adds
 *   under 20%).
 *
 * Runs by itself too: `node --conditions=@tenet/source --import tsx packages/server/bench/Declarations.ts`.
 */
import { fileURLToPath } from "node:url"
import * as Load from "./Load.js"

export interface DeclarationRow {
  readonly store: Load.StoreKind
  readonly planMs: number
  readonly applyMs: number
  readonly createMs: number
  readonly guardedCreateMs: number
}

const ROUNDS = 7
const CREATES = 60

const median = (xs: ReadonlyArray<number>) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!

const timed = async <A>(f: () => Promise<A>) => {
  const start = performance.now()
  const value = await f()
  return { value, ms: performance.now() - start }
}

/** 200 rules, each of its own port; `round` moves every port (and so changes every rule). */
const declaration = (round: number) => ({
  rules: Array.from({ length: 200 }, (_, i) => ({
    name: `r${i}`,
    direction: i % 2 === 0 ? "ingress" : "egress",
    action: i % 5 === 0 ? "deny" : "allow",
    priority: 10 + i,
    protocol: "tcp",
    ports: String(1000 + i + 250 * (round % 2)),
    remote_type: "cidr",
    remote_cidr: `10.${i % 200}.0.0/16`
  }))
})

const onStore = async (store: Load.StoreKind): Promise<DeclarationRow> => {
  const tenet = await Load.startTenet(store)
  try {
    const port = tenet.port
    const admin = {
      "x-admin-token":
        (await Load.must(port, "POST", "/admin/login", {}, { username: "admin", password: Load.PASSWORD }))
          .body.api_token
    }
    await Load.must(port, "POST", "/tenants", admin, { name: "declare", password: "declare-password" })
    const session =
      (await Load.must(port, "POST", "/tenants/login", {}, { name: "declare", password: "declare-password" }))
        .body
    const headers = { "x-auth-token": session.api_token }
    const creds = { token: session.api_token, tenant_id: session.id }
    const vpc = async (name: string) => {
      const made = (await Load.must(port, "POST", "/vpcs", headers, { ...creds, name, enable_internet: true })).body
      await Load.must(port, "POST", "/subnets", headers, {
        ...creds,
        vpc_id: made.id,
        name: "apps",
        cidr: "10.250.1.0/24",
        gateway_ip: "10.250.1.1"
      })
      return made.id as string
    }

    const declared = await vpc("declared")
    const put = (round: number, query = "") =>
      Load.must(port, "PUT", `/vpcs/${declared}/security-rules${query}`, headers, declaration(round))
    await put(0)
    const plans: Array<number> = []
    const applies: Array<number> = []
    for (let round = 1; round <= ROUNDS; round++) {
      plans.push((await timed(() => put(round, "?dry_run=true"))).ms)
      applies.push((await timed(() => put(round))).ms)
    }

    // Creates into a VPC of 50 rules, each deleted again (untimed) to keep it at 50; the two
    // VPCs in turn, so that warming up favours neither.
    const plain = await vpc("plain")
    const guarded = await vpc("guarded")
    for (let i = 0; i < 10; i++) {
      await Load.must(port, "POST", `/vpcs/${guarded}/guardrails`, headers, {
        // Inbound from partners denied, outbound to them allowed: what the rules hold already.
        name: `port ${20000 + i} with partners`,
        require: i % 2 === 0 ? "deny" : "allow",
        direction: i % 2 === 0 ? "ingress" : "egress",
        protocol: "tcp",
        ports: String(20000 + i),
        remote_cidr: "198.51.100.0/24"
      })
    }
    for (const vpcId of [plain, guarded]) {
      for (let i = 0; i < 49; i++) {
        await Load.must(port, "POST", "/security-rules", headers, { ...Load.rule(vpcId, i), action: "allow" })
      }
    }
    const create = async (vpcId: string, i: number) => {
      const { ms, value } = await timed(() =>
        Load.must(port, "POST", "/security-rules", headers, { ...Load.rule(vpcId, 1000 + i), action: "allow" })
      )
      await Load.must(port, "DELETE", `/security-rules/${value.body.rule.id}`, headers)
      return ms
    }
    const plainTimes: Array<number> = []
    const guardedTimes: Array<number> = []
    for (let i = 0; i < CREATES; i++) {
      plainTimes.push(await create(plain, i))
      guardedTimes.push(await create(guarded, i))
    }
    return {
      store,
      planMs: median(plans),
      applyMs: median(applies),
      createMs: median(plainTimes.slice(5)),
      guardedCreateMs: median(guardedTimes.slice(5))
    }
  } finally {
    await tenet.stop()
  }
}

export const runDeclarations = async (
  stores: ReadonlyArray<Load.StoreKind> = Load.STORES
): Promise<ReadonlyArray<DeclarationRow>> => {
  const rows: Array<DeclarationRow> = []
  for (const store of stores) rows.push(await onStore(store))
  return rows
}

const ms = (n: number) => `${n < 10 ? n.toFixed(1) : Math.round(n)} ms`

export const toMarkdown = (rows: ReadonlyArray<DeclarationRow>) =>
  [
    `Medians of ${ROUNDS} plans and applies of a 200-rule declaration changing every rule of a 200-rule VPC, and of ${
      CREATES - 5
    } rule creates (after 5 warm-up ones) in a VPC of 50 rules, one request at a time. Targets (PostgreSQL): plan < 1 s, apply < 1.5 s, guardrails add < 20%.`,
    "",
    "| Store | Plan (200 rules) | Apply (200 rules) | Create, no guardrail | Create, 10 guardrails | Guardrails add |",
    "|---|---|---|---|---|---|",
    ...rows.map((r) =>
      `| ${r.store} | ${ms(r.planMs)} | ${ms(r.applyMs)} | ${ms(r.createMs)} | ${ms(r.guardedCreateMs)} | ${
        Math.round((r.guardedCreateMs / r.createMs - 1) * 100)
      }% |`
    )
  ].join("\n")

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  console.log(toMarkdown(await runDeclarations()))
}
