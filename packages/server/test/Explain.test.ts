/**
 * `GET /vpcs/{vpc_id}/explain`: a flow between two endpoints end to end, with the source's
 * egress and the destination's ingress and what decides each.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { raw, testServer, workspace } from "./Harness.js"

type Json = Record<string, any>

layer(testServer(), { excludeTestServices: true })("explain", (it) => {
  it.effect("each half decided as evaluate would, the internet and other VPCs included", () =>
    Effect.gen(function*() {
      const w = yield* workspace
      const pod = (yield* w.createPod()).body as Json
      const explain = (from: string, to: string, query = "protocol=tcp&port=443") =>
        Effect.map(
          raw("GET", `/vpcs/${w.vpc.id}/explain?from=${from}&to=${to}&${query}`, { headers: w.headers }),
          (r) => ({ status: r.status, body: r.body as Json })
        )

      const closed = yield* explain("internet", pod.id)
      expect(closed.status, JSON.stringify(closed.body)).toBe(200)
      expect(closed.body).toMatchObject({
        allowed: false,
        from: { kind: "internet" },
        to: { kind: "pod", pod_id: pod.id, vpc_id: w.vpc.id },
        egress: null,
        ingress: {
          vpc_id: w.vpc.id,
          allowed: false,
          action: "deny",
          decided_by: { kind: "implied", key: "implied-deny-ingress" },
          flow: { direction: "ingress", protocol: "tcp", port: 443, local: { pod_id: pod.id } }
        }
      })

      const https = (yield* raw("POST", "/security-rules", {
        headers: w.headers,
        body: {
          vpc_id: w.vpc.id,
          name: "https",
          direction: "ingress",
          action: "allow",
          priority: 100,
          protocol: "tcp",
          ports: "443",
          remote_type: "cidr",
          remote_cidr: "0.0.0.0/0"
        }
      })).body as Json
      const open = yield* explain("internet", pod.id)
      expect(open.body).toMatchObject({
        allowed: true,
        ingress: { allowed: true, decided_by: { kind: "rule", rule_id: https.rule.id, name: "https" } }
      })

      const out = yield* explain(pod.id, "8.8.8.8")
      expect(out.body).toMatchObject({
        allowed: true,
        to: { kind: "address", ip: "8.8.8.8", subnet_id: null, vpc_id: null },
        egress: { allowed: true, decided_by: { kind: "implied", key: "implied-allow-egress" } },
        ingress: null
      })

      const inside = yield* explain(w.subnet.id, pod.id, "protocol=tcp&port=22")
      expect(inside.body).toMatchObject({
        allowed: true,
        egress: { allowed: true },
        ingress: { allowed: true, decided_by: { kind: "rule", name: "Allow internal traffic" } }
      })

      const other = yield* w.newVpc()
      yield* raw("POST", "/subnets", {
        headers: w.headers,
        body: { ...w.creds, vpc_id: other.id, name: "apps", cidr: "10.1.0.0/24", gateway_ip: "10.1.0.1" }
      })
      const across = yield* explain(other.id, pod.id, "protocol=tcp&port=22")
      expect(across.body).toMatchObject({
        allowed: false,
        from: { kind: "vpc", vpc_id: other.id },
        egress: { vpc_id: other.id, allowed: true },
        ingress: { vpc_id: w.vpc.id, allowed: false, flow: { remote_ip: expect.stringMatching(/^10\.1\.0\./) } }
      })
      const icmp = yield* explain("internet", pod.id, "protocol=icmp")
      expect(icmp.body).toMatchObject({ port: null, ingress: { allowed: false } })
    }))

  it.effect("bad questions are 422 naming the parameter; another tenant's VPC is 404", () =>
    Effect.gen(function*() {
      const w = yield* workspace
      const other = yield* workspace
      const ask = (vpcId: string, query: string) =>
        raw("GET", `/vpcs/${vpcId}/explain?${query}`, { headers: w.headers })
      const noPort = yield* ask(w.vpc.id, `from=internet&to=${w.subnet.id}&protocol=tcp`)
      expect([noPort.status, (noPort.body as Json).detail.field]).toEqual([422, "port"])
      const unknown = yield* ask(w.vpc.id, `from=somewhere&to=${w.subnet.id}&protocol=udp&port=53`)
      expect([unknown.status, (unknown.body as Json).detail.field]).toEqual([422, "from"])
      const theirs = yield* ask(w.vpc.id, `from=internet&to=${other.subnet.id}&protocol=udp&port=53`)
      expect([theirs.status, (theirs.body as Json).detail.field]).toEqual([422, "to"])
      const outside = yield* ask(w.vpc.id, "from=internet&to=8.8.8.8&protocol=udp&port=53")
      expect(outside.status).toBe(422)
      expect((yield* ask(other.vpc.id, `from=internet&to=${other.subnet.id}&protocol=udp&port=53`)).status).toBe(404)
    }))
})
