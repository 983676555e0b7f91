/**
 * The peer (issue "writes at a peer's speed"): kube-apiserver's create, on the same machine and
 * in the same run, measured as Tenet's is. kube-apiserver v1.20.2 on etcd (`LocalCluster`, the
 * binary `.ci/kube-apiserver` builds) takes `POST /api/v1/namespaces/default/configmaps` at 8
 * connections for the same seconds as `Writes.ts` loads `POST /security-rules`, each request a
 * new ConfigMap: admission, validation, a durable write with its watch event. The API server runs
 * on the CPU Tenet's server is given and the load on the other, as `Load.ts` runs Tenet's. `toMarkdown` sets it
 * beside Tenet's create on each store (the `Writes.ONE_TENANT` row) and says the ratio.
 *
 * Alone, against the rows of a `Writes.ts` run in the same process:
 *   node --conditions=@tenet/source --import tsx packages/server/bench/Peer.ts
 */
import { LocalCluster } from "@tenet/adapters-k8s/testing"
import autocannon from "autocannon"
import { Effect } from "effect"
import { execFileSync } from "node:child_process"
import { availableParallelism } from "node:os"
import * as Load from "./Load.js"
import * as Writes from "./Writes.js"

export interface PeerResult {
  readonly rps: number
  readonly p50: number
  readonly p99: number
  /** Answers other than 201 (a ConfigMap made). */
  readonly errors: number
}

export const available = () => LocalCluster.available()

/** The creates of `connections` clients for `seconds` against the API server at `server`, after 2 s of warm-up. */
const creates = (server: string, token: string, connections: number, seconds: number, prefix: string) =>
  new Promise<PeerResult>((resolve, reject) => {
    let n = 0
    autocannon({
      url: `${server}/api/v1/namespaces/default/configmaps`,
      connections,
      duration: seconds,
      requests: [{
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
        setupRequest: (request) => ({
          ...request,
          body: JSON.stringify({
            apiVersion: "v1",
            kind: "ConfigMap",
            metadata: { name: `${prefix}-${n++}`, labels: { bench: "peer" } },
            data: { rule: "allow tcp 443 from 10.0.0.0/8" }
          })
        })
      }]
    }, (error, result) => {
      if (error) return reject(error)
      resolve({
        rps: Math.round(result.requests.average),
        p50: result.latency.p50,
        p99: result.latency.p99,
        errors: result.non2xx + result.errors
      })
    })
  })

/** kube-apiserver's ConfigMap create at `Writes.CONNECTIONS`, on a cluster of its own started and stopped here. */
export const runPeer = (seconds: number): Promise<PeerResult> =>
  Effect.runPromise(Effect.scoped(Effect.gen(function*() {
    const cluster = yield* LocalCluster.start()
    const token = cluster.admin.getCurrentUser()!.token!
    // On the CPUs Tenet's server and load run on (`Load.cpus`): the API server on the server's,
    // etcd unpinned as PostgreSQL is, this process's load on the other.
    if (Load.cpus !== null) {
      const apiserver = execFileSync("pgrep", ["-n", "-f", "^\\S*kube-apiserver\\S* --etcd-servers"], {
        encoding: "utf8"
      }).trim()
      execFileSync("taskset", ["-apc", Load.cpus.server, apiserver], { stdio: "ignore" })
      Load.pinSelf(Load.cpus.load)
    }
    yield* Effect.addFinalizer(() =>
      Effect.sync(() => Load.cpus !== null && Load.pinSelf(`0-${availableParallelism() - 1}`))
    )
    yield* Effect.promise(() => creates(cluster.server, token, Writes.CONNECTIONS, 2, "warm"))
    return yield* Effect.promise(() => creates(cluster.server, token, Writes.CONNECTIONS, seconds, "peer"))
  })))

/** Issue 68's targets: Tenet's create rate as a share of the peer's, by store. */
const TARGETS: ReadonlyArray<{ readonly store: Load.StoreKind; readonly share: number }> = [
  { store: "postgres", share: 50 },
  { store: "memory", share: 100 }
]

/** Issue 68's bound on a PostgreSQL create's p99 at `Writes.CONNECTIONS`. */
const P99_TARGET_MS = 50

/**
 * The peer's row, then Tenet's create on each store measured in the same run, with its share of
 * the peer's rate, and the targets that share is held to.
 */
export const toMarkdown = (peer: PeerResult, writes: Writes.WritesReport): string => {
  const tenetRow = (store: Load.StoreKind) =>
    writes.rows.find((r) => r.store === store && r.shape === Writes.ONE_TENANT)
  const row = (name: string, r: { readonly rps: number; readonly p50: number; readonly p99: number }) =>
    `| ${name} | ${Math.round(r.rps).toLocaleString("en-US")} | ${r.p50} | ${r.p99} | ${
      Math.round((r.rps / peer.rps) * 100)
    }% |`
  return [
    `Creates at ${Writes.CONNECTIONS} connections, the same seconds each, in one run: kube-apiserver ${LocalCluster.VERSION}`,
    "on etcd taking `POST` of a ConfigMap, Tenet taking `POST /security-rules` (a tenant of about 100",
    `rules) on each store.${peer.errors > 0 ? ` The peer answered ${peer.errors} requests with an error.` : ""}`,
    "",
    "| server | creates/s | p50 (ms) | p99 (ms) | of kube-apiserver's rate |",
    "|---|---:|---:|---:|---:|",
    row(`kube-apiserver ${LocalCluster.VERSION}, ConfigMap`, peer),
    ...Load.STORES.flatMap((store) => {
      const tenet = tenetRow(store)
      return tenet === undefined ? [] : [row(`Tenet, ${store}, security rule`, tenet)]
    }),
    "",
    "| target | measured | met |",
    "|---|---|---|",
    ...TARGETS.flatMap(({ share, store }) => {
      const tenet = tenetRow(store)
      if (tenet === undefined) return []
      const measured = Math.round((tenet.rps / peer.rps) * 100)
      return [`| ${store} >= ${share}% of kube-apiserver's rate | ${measured}% | ${measured >= share ? "yes" : "no"} |`]
    }),
    ...[tenetRow("postgres")].flatMap((tenet) =>
      tenet === undefined
        ? []
        : [`| postgres p99 < ${P99_TARGET_MS} ms | ${tenet.p99} ms | ${tenet.p99 < P99_TARGET_MS ? "yes" : "no"} |`]
    )
  ].join("\n")
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const seconds = Number(process.env.TENET_LOAD_SECONDS ?? 5)
  const peer = await runPeer(seconds)
  const writes = await Writes.runWrites({ seconds })
  console.log(toMarkdown(peer, writes))
}
