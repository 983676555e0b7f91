/**
 * Address sets as a tenant sees them, through the typed client and on the wire: created,
 * listed (and paged), read with their ETag, changed and deleted at their own version only, each
 * the caller's own; every entry a network with host bits cleared, each once, at most 256; of
 * concurrent changes made against one version, one goes through.
 */
import { expect, layer } from "@effect/vitest"
import { AddressSet } from "@tenet/core"
import { Effect, Either, Schema } from "effect"
import { client, newTenant, raw, testServer } from "./Harness.js"

type Json = Record<string, any>

const offices = {
  name: "offices",
  description: "Our office networks",
  entries: [{ cidr: "198.51.100.7/24", description: "Berlin" }, { cidr: "203.0.113.0/25" }]
}

/** A body as the typed client takes it: decoded as the server decodes it. */
const creating = Schema.decodeUnknownSync(AddressSet.AddressSetCreate)
const patching = Schema.decodeUnknownSync(AddressSet.AddressSetPatch)

const tenantClient = Effect.gen(function*() {
  const { session } = yield* newTenant()
  const headers = { "x-auth-token": session.api_token }
  return { headers, tenet: yield* client(headers) }
})

layer(testServer(), { excludeTestServices: true })("address sets", (it) => {
  it.effect("created with host bits cleared, listed, read with its ETag, changed and deleted", () =>
    Effect.gen(function*() {
      const { headers, tenet } = yield* tenantClient
      const made = yield* raw("POST", "/address-sets", { headers, body: offices })
      expect(made.status, JSON.stringify(made.body)).toBe(201)
      const set = made.body as Json
      expect(set).toMatchObject({
        name: "offices",
        description: "Our office networks",
        entries: [{ cidr: "198.51.100.0/24", description: "Berlin" }, { cidr: "203.0.113.0/25", description: null }]
      })
      expect(set.etag).toMatch(/^"[0-9a-f]{32}"$/)

      const listed = yield* tenet.addressSets.list({ urlParams: {} })
      expect(listed.map((s) => s.id)).toEqual([set.id])
      const read = yield* raw("GET", `/address-sets/${set.id}`, { headers })
      expect(read.body).toEqual(set)
      expect(read.headers["etag"]).toBe(set.etag)

      const changed = (yield* tenet.addressSets.update({
        path: { address_set_id: set.id },
        urlParams: {},
        headers: { "if-match": set.etag },
        payload: patching({ entries: [{ cidr: "192.0.2.0/24" }] })
      })) as AddressSet.AddressSet
      expect(changed.entries).toEqual([{ cidr: "192.0.2.0/24", description: null }])
      expect(changed.description).toBe("Our office networks")
      expect(changed.etag).not.toBe(set.etag)
      const described = yield* raw("PATCH", `/address-sets/${set.id}`, { headers, body: { description: null } })
      expect(described.status).toBe(200)
      // No rule names the set: nothing to bring into force.
      expect(described.body).toMatchObject({
        description: null,
        entries: changed.entries,
        applied: true,
        apply_error: null
      })
      expect(described.headers["etag"]).toBe((described.body as Json).etag)

      const stale = yield* raw("DELETE", `/address-sets/${set.id}`, { headers: { ...headers, "if-match": set.etag } })
      expect(stale.status).toBe(412)
      expect((stale.body as Json).detail).toContain(`address set ${set.id} changed since ${set.etag}`)
      expect((yield* tenet.addressSets.list({ urlParams: {} })).map((s) => s.id)).toEqual([set.id])
      yield* tenet.addressSets.delete({ path: { address_set_id: set.id }, headers: {} })
      expect(yield* tenet.addressSets.list({ urlParams: {} })).toEqual([])
      expect((yield* raw("GET", `/address-sets/${set.id}`, { headers })).status).toBe(404)
      expect((yield* raw("DELETE", `/address-sets/${set.id}`, { headers })).status).toBe(404)
    }))

  it.effect("names are unique per tenant; another tenant's set is not found, and its name is free", () =>
    Effect.gen(function*() {
      const a = yield* tenantClient
      const b = yield* tenantClient
      const mine = yield* a.tenet.addressSets.create({ payload: creating(offices) })
      const again = yield* raw("POST", "/address-sets", { headers: a.headers, body: offices })
      expect(again.status).toBe(409)
      expect((again.body as Json).detail).toBe("an address set named 'offices' exists")
      expect((yield* raw("POST", "/address-sets", { headers: b.headers, body: offices })).status).toBe(201)

      const foreign = `/address-sets/${mine.id}`
      expect((yield* raw("GET", foreign, { headers: b.headers })).status).toBe(404)
      expect((yield* raw("PATCH", foreign, { headers: b.headers, body: { entries: [] } })).status).toBe(404)
      expect((yield* raw("DELETE", foreign, { headers: b.headers })).status).toBe(404)
      expect((yield* b.tenet.addressSets.list({ urlParams: {} })).map((s) => s.tenant_id)).not.toContain(mine.tenant_id)
      expect((yield* a.tenet.addressSets.get({ path: { address_set_id: mine.id } })).entries).toEqual(mine.entries)
    }))

  it.effect("bad entries are 400 and change nothing: not a network, listed twice, more than 256, unknown fields", () =>
    Effect.gen(function*() {
      const { headers, tenet } = yield* tenantClient
      const set = yield* tenet.addressSets.create({ payload: creating({ ...offices, name: "kept" }) })
      const many = Array.from({ length: 257 }, (_, i) => ({ cidr: `10.${Math.floor(i / 256)}.${i % 256}.0/24` }))
      const badEntries: ReadonlyArray<ReadonlyArray<Json>> = [
        [{ cidr: "10.0.0.0/33" }],
        [{ cidr: "fd00::/8" }],
        [{ cidr: "10.0.0.1/8" }, { cidr: "10.0.0.0/8" }],
        many,
        [{ cidr: "10.0.0.0/8", note: "a typo of description" }]
      ]
      for (const entries of badEntries) {
        const what = JSON.stringify(entries).slice(0, 120)
        expect((yield* raw("POST", "/address-sets", { headers, body: { name: "x", entries } })).status, what).toBe(400)
        expect((yield* raw("PATCH", `/address-sets/${set.id}`, { headers, body: { entries } })).status, what).toBe(400)
      }
      for (
        const body of [{ name: "Bad_Name", entries: [] }, { name: "x", entries: [], colour: "red" }, { entries: [] }]
      ) {
        expect((yield* raw("POST", "/address-sets", { headers, body })).status, JSON.stringify(body)).toBe(400)
      }
      expect((yield* tenet.addressSets.get({ path: { address_set_id: set.id } })).entries).toEqual(set.entries)
      const exactly = (yield* tenet.addressSets.update({
        path: { address_set_id: set.id },
        urlParams: {},
        headers: {},
        payload: patching({ entries: many.slice(0, 256) })
      })) as AddressSet.AddressSet
      expect(exactly.entries).toHaveLength(256)
      expect((yield* raw("GET", "/address-sets", { headers })).body).toEqual([
        expect.objectContaining({ name: "kept", entries: exactly.entries })
      ])
      expect((yield* raw("GET", "/address-sets/not-a-uuid", { headers })).status).toBe(400)
    }))

  it.effect("of concurrent changes against one version one goes through; of concurrent deletes one", () =>
    Effect.gen(function*() {
      const { headers, tenet } = yield* tenantClient
      const set = yield* tenet.addressSets.create({ payload: creating(offices) })
      const changes = yield* Effect.forEach(
        ["192.0.2.0/24", "198.18.0.0/15", "100.64.0.0/10"],
        (cidr) =>
          raw("PATCH", `/address-sets/${set.id}`, {
            headers: { ...headers, "if-match": set.etag },
            body: { entries: [{ cidr }] }
          }),
        { concurrency: "unbounded" }
      )
      expect(changes.map((c) => c.status).sort()).toEqual([200, 412, 412])
      const winner = changes.find((c) => c.status === 200)!.body as Json
      expect((yield* tenet.addressSets.get({ path: { address_set_id: set.id } })).entries).toEqual(winner.entries)

      const deletes = yield* Effect.forEach(
        [1, 2, 3],
        () => raw("DELETE", `/address-sets/${set.id}`, { headers }),
        { concurrency: "unbounded" }
      )
      expect(deletes.map((d) => d.status).sort()).toEqual([204, 404, 404])
      const gone = yield* Effect.either(tenet.addressSets.get({ path: { address_set_id: set.id } }))
      expect(Either.isLeft(gone) && gone.left._tag).toBe("NotFound")
    }))

  it.effect("listed a page at a time, oldest first", () =>
    Effect.gen(function*() {
      const { headers } = yield* tenantClient
      for (const name of ["a", "b", "c"]) {
        expect((yield* raw("POST", "/address-sets", { headers, body: { name, entries: [] } })).status).toBe(201)
      }
      const first = yield* raw("GET", "/address-sets?limit=2", { headers })
      expect((first.body as Array<Json>).map((s) => s.name)).toEqual(["a", "b"])
      const next = /<([^>]+)>; rel="next"/.exec(first.headers["link"] ?? "")?.[1]
      expect(next).toBeDefined()
      expect(((yield* raw("GET", next!, { headers })).body as Array<Json>).map((s) => s.name)).toEqual(["c"])
    }))
})
