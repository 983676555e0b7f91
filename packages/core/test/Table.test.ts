import { describe, expect, it } from "@effect/vitest"
import { FastCheck as fc, HashMap, Option } from "effect"
import * as Table from "../src/readmodel/Table.js"

interface Row {
  readonly id: string
  readonly owner: string
  readonly flagged: boolean
}

const Rows = Table.define<Row, "owner" | "flagged">({
  key: (r) => r.id,
  indexes: { owner: (r) => r.owner, flagged: (r) => r.flagged ? "" : null }
})

const ids = fc.constantFrom("a", "b", "c", "d", "e", "f")
const owners = fc.constantFrom("x", "y", "z")

const operation = fc.oneof(
  fc.record({ put: fc.record({ id: ids, owner: owners, flagged: fc.boolean() }) }),
  fc.record({ remove: ids }),
  fc.record({ removeOwned: owners })
)

const sorted = (rows: ReadonlyArray<Row>) => [...rows].sort((a, b) => a.id.localeCompare(b.id))

describe("Table", () => {
  it.prop(
    "after any puts and removes, every lookup answers what filtering all rows answers",
    [fc.array(operation, { maxLength: 60 })],
    ([operations]) => {
      let table = Table.empty(Rows)
      const model = new Map<string, Row>()
      for (const op of operations) {
        if ("put" in op) {
          table = Table.put(Rows, table, op.put)
          model.set(op.put.id, op.put)
        } else if ("remove" in op) {
          table = Table.remove(Rows, table, op.remove)
          model.delete(op.remove)
        } else {
          table = Table.removeAll(Rows, table, "owner", op.removeOwned)
          for (const [id, row] of model) if (row.owner === op.removeOwned) model.delete(id)
        }
      }
      const all = [...model.values()]
      expect(sorted(Table.values(table))).toEqual(sorted(all))
      for (const owner of ["x", "y", "z"]) {
        expect(sorted(Table.lookup(table, "owner", owner))).toEqual(sorted(all.filter((r) => r.owner === owner)))
      }
      expect(sorted(Table.lookup(table, "flagged", ""))).toEqual(sorted(all.filter((r) => r.flagged)))
      for (const id of ["a", "b", "c", "d", "e", "f"]) {
        expect(Table.get(table, id)).toEqual(Option.fromNullable(model.get(id)))
      }
      // No empty index entries are left behind.
      for (const index of Object.values(table.indexes)) {
        for (const [, rows] of index) expect(HashMap.size(rows)).toBeGreaterThan(0)
      }
    }
  )

  it("an earlier version of the table is unchanged by later writes", () => {
    const before = Table.put(Rows, Table.empty(Rows), { id: "a", owner: "x", flagged: true })
    const after = Table.remove(Rows, Table.put(Rows, before, { id: "a", owner: "y", flagged: false }), "a")
    expect(Table.lookup(before, "owner", "x")).toEqual([{ id: "a", owner: "x", flagged: true }])
    expect(Table.lookup(before, "flagged", "")).toHaveLength(1)
    expect(Table.values(after)).toEqual([])
  })
})
