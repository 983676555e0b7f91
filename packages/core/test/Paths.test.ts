/**
 * The paths beside the firewall (`Paths`): which of a tenant's VPCs are peered, the link each
 * peered pair's routers share, and what stops a flow no route carries, with the component named.
 */
import { describe, expect, it } from "@effect/vitest"
import type { Ids } from "@tenet/core"
import { Net, Paths } from "@tenet/core"
import { FastCheck as fc } from "effect"

const id = <B>(n: number) => `00000000-0000-4000-8000-${n.toString().padStart(12, "0")}` as B
const vpcIds = Array.from({ length: 5 }, (_, i) => id<Ids.VpcId>(i + 1))

/** A tenant's VPCs (some being deleted), their blocks (some overlapping) and rules naming one another. */
const tenant = fc.record({
  deleting: fc.array(fc.boolean(), { minLength: 5, maxLength: 5 }),
  blocks: fc.array(
    fc.array(fc.constantFrom("10.0.0.0/24", "10.0.1.0/24", "10.1.0.0/16", "10.0.0.0/8"), { maxLength: 2 }),
    {
      minLength: 5,
      maxLength: 5
    }
  ),
  rules: fc.array(
    fc.record({
      vpc: fc.integer({ min: 0, max: 4 }),
      remote: fc.option(fc.integer({ min: 0, max: 4 }), { nil: null }),
      action: fc.constantFrom("allow", "deny"),
      enabled: fc.boolean()
    }),
    { maxLength: 12 }
  )
}).map((t) => ({
  vpcs: vpcIds.map((vpc, i) => ({
    id: vpc,
    name: `v${i}`,
    enable_internet: true,
    lifecycle: t.deleting[i] ? "deleting" : "active"
  })),
  subnets: t.blocks.flatMap((cidrs, i) => cidrs.map((cidr) => ({ vpc_id: vpcIds[i]!, cidr }))),
  rules: t.rules.map((r) => ({
    vpc_id: vpcIds[r.vpc]!,
    remote_vpc_id: r.remote === null ? null : vpcIds[r.remote]!,
    action: r.action,
    enabled: r.enabled
  }))
}))

type Tenant = typeof tenant extends fc.Arbitrary<infer T> ? T : never

/** The README's rule, said plainly: both live, an enabled allow rule of either names the other, no block shared. */
const peeredPlainly = (t: Tenant, a: Ids.VpcId, b: Ids.VpcId) => {
  const live = (v: Ids.VpcId) => t.vpcs.find((x) => x.id === v)!.lifecycle === "active"
  const blocks = (v: Ids.VpcId) => t.subnets.filter((s) => s.vpc_id === v).map((s) => Net.cidrOf(s.cidr))
  const named = t.rules.some((r) =>
    r.enabled && r.action === "allow" &&
    ((r.vpc_id === a && r.remote_vpc_id === b) || (r.vpc_id === b && r.remote_vpc_id === a))
  )
  const overlap = blocks(a).some((x) => blocks(b).some((y) => Net.overlaps(x, y)))
  return a !== b && live(a) && live(b) && named && !overlap
}

const linkOf = (address: string) => Net.networkOf(Net.cidrOf(address))

describe("paths", () => {
  it.prop("two VPCs are peered exactly when an enabled allow rule of either names the other and no block overlaps", [
    tenant
  ], ([t]) => {
    const found = Paths.connections(t)
    for (const a of vpcIds) {
      for (const b of vpcIds) {
        expect(found.peers.get(a)?.has(b) ?? false, `${a} ${b}`).toBe(peeredPlainly(t, a, b))
      }
    }
  })

  it.prop("each peered pair has a /30 link both routers agree on, none shared by two pairs of one router", [tenant], (
    [t]
  ) => {
    const found = Paths.connections(t)
    for (const [a, peers] of found.peers) {
      const links = [...peers].map((b) => {
        const here = found.links.get(a)!.get(b)!
        const there = found.links.get(b)!.get(a)!
        expect([here.local, here.remote]).toEqual([`${there.remote}/30`, there.local.replace("/30", "")])
        expect(here.local).toMatch(/^169\.254\.\d+\.\d+\/30$/)
        expect(Net.contains(Net.cidrOf(here.local), Net.ipv4Of(here.remote))).toBe(true)
        expect(here.local.replace("/30", "")).not.toBe(here.remote)
        // Never the metadata address's /30, nor node-local DNS's.
        expect(["169.254.169.252/30", "169.254.20.8/30"]).not.toContain(`${Net.formatIpv4(linkOf(here.local))}/30`)
        return linkOf(here.local)
      })
      expect(new Set(links).size).toBe(links.length)
    }
    // The same tenant with its rules in another order: the same links, on every replica.
    expect(Paths.connections({ ...t, rules: [...t.rules].reverse() }).links).toEqual(found.links)
  })

  it("a pair whose blocks overlap is not peered, and its route names both blocks", () => {
    const vpcs = [
      { id: vpcIds[0]!, name: "a", enable_internet: true, lifecycle: "active" },
      { id: vpcIds[1]!, name: "d", enable_internet: true, lifecycle: "active" }
    ]
    const found = Paths.connections({
      vpcs,
      subnets: [{ vpc_id: vpcIds[0]!, cidr: "10.0.1.0/24" }, { vpc_id: vpcIds[1]!, cidr: "10.0.1.0/24" }],
      rules: [{ vpc_id: vpcIds[0]!, remote_vpc_id: vpcIds[1]!, action: "allow", enabled: true }]
    })
    expect(found.peers.size).toBe(0)
    const a = Paths.vpcPaths(vpcs[0]!, found, [], [], true)
    const d = Paths.vpcPaths(vpcs[1]!, found, [], [], true)
    expect(
      Paths.route({ kind: "vpc", vpc: vpcIds[1]!, paths: d }, { kind: "vpc", vpc: vpcIds[0]!, paths: a }, "", "tcp", [
        9090,
        9090
      ])
    ).toEqual({
      ports: [],
      blocked: {
        reason: "no_route",
        detail: "no route from VPC 'd' to VPC 'a': 10.0.1.0/24 of VPC 'd' overlaps 10.0.1.0/24 of VPC 'a', so they " +
          "cannot be peered"
      }
    })
  })

  it("what stops a flow no route carries is named: no route, no internet, nothing published", () => {
    const vpc = (n: number, name: string, internet: boolean) => ({ id: vpcIds[n]!, name, enable_internet: internet })
    const none = Paths.connections({ vpcs: [], subnets: [], rules: [] })
    const pod = id<Ids.PodId>(21)
    const web = {
      id: pod,
      name: "web",
      external_inbound: true,
      service_port: 443,
      lifecycle: "active"
    }
    const a = Paths.vpcPaths(vpc(0, "a", true), none, [web], [{
      pod_id: pod,
      protocol_type: "udp",
      service_port: 27015
    }], true)
    const b = Paths.vpcPaths(vpc(1, "b", true), none, [], [], true)
    const c = Paths.vpcPaths(vpc(2, "c", false), none, [{ ...web, id: id<Ids.PodId>(22) }], [], true)
    const at = (paths: Paths.VpcPaths, n: number): Paths.Network => ({ kind: "vpc", vpc: vpcIds[n]!, paths })
    const internet: Paths.Network = { kind: "internet" }
    const blocked = (
      from: Paths.Network,
      to: Paths.Network,
      atom: string,
      protocol: "tcp" | "udp" | "icmp",
      port: number
    ) => Paths.route(from, to, atom, protocol, [port, port]).blocked
    expect(blocked(at(b, 1), at(a, 0), `pod:${pod}`, "tcp", 8080)).toEqual({
      reason: "no_route",
      detail: "no route from VPC 'b' to VPC 'a': they are not peered (no enabled allow rule of either names the other)"
    })
    expect(blocked(at(c, 2), internet, "", "tcp", 443)).toEqual({
      reason: "no_internet",
      detail: "VPC 'c' has no internet (enable_internet is false)"
    })
    expect(blocked(internet, at(c, 2), `pod:${id<Ids.PodId>(22)}`, "tcp", 443)?.reason).toBe("no_internet")
    expect(blocked(internet, at(a, 0), `subnet:${id<Ids.SubnetId>(11)}`, "tcp", 443)).toEqual({
      reason: "not_published",
      detail:
        "nothing published: the internet reaches only published pods (a pod's external_inbound port, a udp tunnel's)"
    })
    expect(blocked(internet, at(a, 0), `pod:${pod}`, "tcp", 443)).toBeNull()
    expect(blocked(internet, at(a, 0), `pod:${pod}`, "udp", 27015)).toBeNull()
    expect(blocked(internet, at(a, 0), `pod:${pod}`, "udp", 53)).toEqual({
      reason: "not_published",
      detail: "pod 'web' is published on udp 443,27015 only"
    })
    expect(blocked(internet, at(a, 0), `pod:${pod}`, "icmp", 0)?.reason).toBe("not_published")
    // The core network carries everything, both ways; a VPC carries its own traffic.
    expect(blocked({ kind: "core" }, at(c, 2), "", "tcp", 22)).toBeNull()
    expect(blocked(at(c, 2), { kind: "core" }, "", "udp", 53)).toBeNull()
    expect(blocked(at(c, 2), at(c, 2), "", "tcp", 22)).toBeNull()
    // Without a provider configuration nothing has an uplink: no internet either way.
    const alone = Paths.vpcPaths(vpc(0, "a", true), none, [web], [], false)
    expect(blocked(at(alone, 0), internet, "", "tcp", 443)?.detail).toContain("no provider configuration")
    expect(blocked(internet, at(alone, 0), `pod:${pod}`, "tcp", 443)?.reason).toBe("not_published")
  })
})
