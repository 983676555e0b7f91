import { describe, expect, it } from "@effect/vitest"
import { AddressSet, AddressSetStrategy, Etag, TenantState } from "@tenet/core"
import { Fixtures } from "@tenet/core/testing"
import { DateTime, Either, FastCheck as fc, Schema } from "effect"

const tenant = Fixtures.tenant()

const stateWith = (sets: ReadonlyArray<AddressSet.AddressSetRecord>) =>
  TenantState.TenantState.fromSnapshot(tenant.id, Fixtures.snapshot({ addressSets: sets }))

const later = DateTime.unsafeMake(Date.UTC(2030, 0, 1))

/** Patches as a request decodes them: each field left out, null (description) or given. */
const patches = fc.record({
  description: fc.option(fc.oneof(fc.constant(null), fc.string({ maxLength: 20 })), { nil: undefined }),
  entries: fc.option(
    fc.uniqueArray(fc.integer({ min: 0, max: 255 }), { maxLength: 5 }).map((octets) =>
      octets.map((o) => ({ cidr: `10.${o}.0.0/16`, description: null }))
    ),
    { nil: undefined }
  )
}, { requiredKeys: [] }).map((raw) => Schema.decodeUnknownSync(AddressSet.AddressSetPatch)(raw))

describe("address-set strategy", () => {
  it.prop("a create is refused at the tenant's limit, and otherwise inserts the set as given", [
    fc.integer({ min: 0, max: AddressSetStrategy.MAX_ADDRESS_SETS + 2 })
  ], ([count]) => {
    const state = stateWith(Array.from({ length: count }, () => Fixtures.addressSet(tenant.id)))
    const set = Fixtures.addressSet(tenant.id)
    const decided = AddressSetStrategy.create(set)(state)
    if (count >= AddressSetStrategy.MAX_ADDRESS_SETS) {
      expect(Either.isLeft(decided) && decided.left._tag).toBe("Conflict")
      return
    }
    const decision = Either.getOrThrow(decided)
    expect(decision.result).toBe(set)
    expect(decision.made).toBe(set.id)
    expect(state.apply(decision.writes, "next").addressSet(set.id)).toEqual(set)
  })

  it.prop("a patch replaces exactly the fields it names, at its own version or none; another version is 412", [
    patches,
    fc.constantFrom("none", "own", "stale", "any")
  ], ([patch, precondition]) => {
    const set = Fixtures.addressSet(tenant.id, { description: "offices" })
    const ifMatch = {
      none: undefined,
      own: AddressSet.etagOf(set),
      stale: Etag.digest("another version"),
      any: "*"
    }[precondition]
    const decided = AddressSetStrategy.update(set.id, patch, ifMatch, later)(stateWith([set]))
    if (precondition === "stale") {
      expect(Either.isLeft(decided) && decided.left._tag).toBe("PreconditionFailed")
      return
    }
    const { moves, record: next } = Either.getOrThrow(decided).result
    expect(moves).toBe(
      patch.entries !== undefined && JSON.stringify(patch.entries.map((e) => e.cidr)) !==
          JSON.stringify(set.entries.map((e) => e.cidr))
    )
    expect(next).toEqual({
      ...set,
      description: patch.description === undefined ? set.description : patch.description,
      entries: patch.entries ?? set.entries,
      updated_at: later
    })
    expect(AddressSet.etagOf(next)).not.toBe(AddressSet.etagOf(set))
  })

  it("a change or delete of a set the tenant does not hold is not found", () => {
    const gone = Fixtures.addressSet(tenant.id)
    const state = stateWith([Fixtures.addressSet(tenant.id)])
    const update = AddressSetStrategy.update(gone.id, {}, undefined, later)(state)
    const remove = AddressSetStrategy.remove(gone.id, undefined)(state)
    expect(Either.isLeft(update) && update.left._tag).toBe("NotFound")
    expect(Either.isLeft(remove) && remove.left._tag).toBe("NotFound")
  })
})
