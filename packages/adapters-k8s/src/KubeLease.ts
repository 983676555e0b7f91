/**
 * Leadership on a `coordination.k8s.io/v1` Lease, as client-go's leader election does it: a
 * replica leads while it holds the Lease (`holderIdentity`) and renews it every `retryPeriod`;
 * another takes it over only once it has seen the same record unrenewed for `leaseDuration`
 * by its own clock (no clocks compared across machines). Every write is a create or a replace
 * with the version read as its precondition, so of two replicas asking at once one wins. A
 * leader that cannot renew for `renewDeadline` (shorter than the lease) stops acting before
 * anyone else may start; one that stops releases the Lease so another leads at once.
 */
import { Leadership } from "@tenet/core"
import { Clock, Duration, Effect, Layer, Option } from "effect"
import { KubeApi } from "./KubeApi.js"
import type { KubeApiShape, KubeError, LiveObject } from "./KubeApi.js"
import type { Kind, Manifest } from "./Manifests.js"

export const LeaseKind = {
  apiVersion: "coordination.k8s.io/v1",
  kind: "Lease",
  resource: "leases",
  namespaced: true
} as const satisfies Kind

export interface Options {
  /** Where the Lease lives: Tenet's own namespace (made when missing). */
  readonly namespace: string
  /** This replica's name in the Lease; its host name and a random suffix by default. */
  readonly identity?: string
  /** How long a Lease unrenewed stays its holder's (8 s). */
  readonly leaseDuration?: Duration.DurationInput
  /** How long a leader keeps acting while its renewals fail (5 s; less than `leaseDuration`). */
  readonly renewDeadline?: Duration.DurationInput
  /** How often a leader renews and a follower asks again (2 s). */
  readonly retryPeriod?: Duration.DurationInput
}

/** A Lease's spec, as read. */
interface LeaseRecord {
  readonly holderIdentity?: string
  readonly leaseDurationSeconds?: number
  readonly acquireTime?: string
  readonly renewTime?: string
  readonly leaseTransitions?: number
}

const microTime = (millis: number) => new Date(millis).toISOString().replace(/\.(\d{3})Z$/, ".$1000Z")

const specOf = (lease: LiveObject): LeaseRecord => {
  const spec: unknown = (lease as Record<string, unknown>).spec
  return typeof spec === "object" && spec !== null ? spec : {}
}

/** Lost: the Lease is another's, or could not be renewed in time. */
const lost = (detail: string) => new Leadership.LeadershipError({ detail })

export const make = (kube: KubeApiShape, options: Options): Leadership.LeadershipShape => {
  const identity = options.identity ?? `${process.env.HOSTNAME ?? "tenet"}-${crypto.randomUUID().slice(0, 8)}`
  const leaseDuration = Duration.decode(options.leaseDuration ?? Duration.seconds(8))
  const renewDeadline = Duration.decode(options.renewDeadline ?? Duration.seconds(5))
  const retryPeriod = Duration.decode(options.retryPeriod ?? Duration.seconds(2))
  /** The last record seen of each Lease, and when (by this replica's clock) it was first seen so. */
  const observed = new Map<string, { readonly record: string; readonly at: number }>()

  const manifest = (name: string, spec: LeaseRecord, resourceVersion?: string): Manifest => ({
    apiVersion: LeaseKind.apiVersion,
    kind: LeaseKind.kind,
    metadata: {
      name,
      namespace: options.namespace,
      labels: {},
      ...(resourceVersion === undefined ? {} : { resourceVersion })
    },
    spec
  })

  /** Creates the Lease, making Tenet's namespace first when it is missing. */
  const create = (name: string, spec: LeaseRecord) =>
    kube.create(manifest(name, spec)).pipe(
      Effect.catchIf(
        (e) => e.status === 404,
        () =>
          Effect.zipRight(
            kube.apply({ apiVersion: "v1", kind: "Namespace", metadata: { name: options.namespace, labels: {} } }),
            kube.create(manifest(name, spec))
          )
      )
    )

  /** One attempt to take or keep the Lease: whether this replica holds it now. */
  const tryAcquireOrRenew = (name: string): Effect.Effect<boolean, KubeError> =>
    Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      const fresh: LeaseRecord = {
        holderIdentity: identity,
        leaseDurationSeconds: Math.ceil(Duration.toSeconds(leaseDuration)),
        acquireTime: microTime(now),
        renewTime: microTime(now),
        leaseTransitions: 0
      }
      const current = yield* kube.read(LeaseKind, name, options.namespace)
      if (Option.isNone(current)) {
        return yield* create(name, fresh).pipe(
          Effect.as(true),
          Effect.catchIf((e) => e.status === 409, () => Effect.succeed(false))
        )
      }
      const spec = specOf(current.value)
      const record = JSON.stringify(spec)
      const seen = observed.get(name)
      const since = seen?.record === record ? seen.at : now
      observed.set(name, { record, at: since })
      const holder = spec.holderIdentity ?? ""
      const held = holder !== "" && holder !== identity
      // The holder's own duration, as it wrote it (replicas may be configured differently).
      const expires = since + (spec.leaseDurationSeconds ?? Duration.toSeconds(leaseDuration)) * 1000
      if (held && expires > now) return false
      const next: LeaseRecord = holder === identity
        ? { ...spec, renewTime: microTime(now), leaseDurationSeconds: Math.ceil(Duration.toSeconds(leaseDuration)) }
        : { ...fresh, leaseTransitions: (spec.leaseTransitions ?? 0) + 1 }
      return yield* kube.replace(manifest(name, next, current.value.metadata?.resourceVersion)).pipe(
        Effect.tap((written) =>
          Effect.sync(() => observed.set(name, { record: JSON.stringify(specOf(written)), at: now }))
        ),
        Effect.as(true),
        Effect.catchIf((e) => e.status === 409, () => Effect.succeed(false))
      )
    })

  /**
   * Keeps the Lease while `self` runs; fails once it is another's or not renewed within the
   * deadline. Each renewal is bounded by what is left of the deadline: a call the API server
   * never answers (a partition) must not keep a leader acting past it.
   */
  const renewing = (name: string) =>
    Effect.gen(function*() {
      let renewed = yield* Clock.currentTimeMillis
      for (;;) {
        yield* Effect.sleep(retryPeriod)
        const left = Duration.toMillis(renewDeadline) - ((yield* Clock.currentTimeMillis) - renewed)
        const kept = yield* tryAcquireOrRenew(name).pipe(
          Effect.timeoutFail({
            duration: Math.max(0, left),
            onTimeout: () => `no answer within ${Duration.format(renewDeadline)}`
          }),
          Effect.mapError((e) => typeof e === "string" ? e : e.message),
          Effect.either
        )
        const now = yield* Clock.currentTimeMillis
        if (kept._tag === "Right" && kept.right) {
          renewed = now
          continue
        }
        if (kept._tag === "Right") return yield* lost(`the Lease ${options.namespace}/${name} is another replica's`)
        if (now - renewed >= Duration.toMillis(renewDeadline)) {
          return yield* lost(
            `the Lease ${options.namespace}/${name} could not be renewed within ` +
              `${Duration.format(renewDeadline)}: ${kept.left}`
          )
        }
      }
    })

  /** Gives the Lease up, so another replica leads without waiting for it to expire. */
  const release = (name: string) =>
    Effect.gen(function*() {
      const current = yield* kube.read(LeaseKind, name, options.namespace)
      if (Option.isNone(current) || specOf(current.value).holderIdentity !== identity) return
      yield* kube.replace(
        manifest(
          name,
          { ...specOf(current.value), holderIdentity: "", leaseDurationSeconds: 1 },
          current.value.metadata?.resourceVersion
        )
      )
    }).pipe(Effect.timeout(retryPeriod), Effect.ignore)

  return Leadership.Leadership.of({
    backend: "kubernetes-lease",
    retry: retryPeriod,
    lead: (name, self) =>
      tryAcquireOrRenew(name).pipe(
        Effect.mapError((e) =>
          lost(`the Lease ${options.namespace}/${name} could not be read or written: ${e.message}`)
        ),
        Effect.flatMap((acquired) =>
          acquired
            ? Effect.raceFirst(self, renewing(name)).pipe(Effect.map(Option.some), Effect.ensuring(release(name)))
            : Effect.succeed(Option.none())
        )
      )
  })
}

/** Leadership on a Lease in `namespace`, through the cluster's KubeApi. */
export const layer = (options: Options) =>
  Layer.effect(Leadership.Leadership, Effect.map(KubeApi, (kube) => make(kube, options)))
