/** The OperationsLog contract, as a vitest suite run with a fresh log per test. */
import { describe, expect, it } from "@effect/vitest"
import type { Layer } from "effect"
import { DateTime, Effect } from "effect"
import type { NewOperation } from "../domain/OperationLog.js"
import { OperationsLog } from "../ports/OperationsLog.js"
import type { OperationsLogPage } from "../ports/OperationsLog.js"
import type { StoreUnavailable } from "../ports/Store.js"

const entry = (principal: string): NewOperation => ({
  at: DateTime.unsafeMake(Date.UTC(2026, 0, 1)) as DateTime.Utc,
  kind: "tenant.login",
  outcome: "success",
  principal,
  tenant_id: null,
  source_address: "127.0.0.1",
  detail: null
})

export const run = (name: string, makeLog: () => Layer.Layer<OperationsLog, StoreUnavailable>) =>
  describe(`OperationsLog contract: ${name}`, () => {
    it.effect("pages run newest first and cover every entry exactly once", () =>
      Effect.gen(function*() {
        const log = yield* OperationsLog
        for (let i = 0; i < 7; i++) yield* log.append(entry(`p${i}`))
        const seen: Array<string> = []
        let before: number | undefined = undefined
        for (;;) {
          const page: OperationsLogPage = yield* log.page({ limit: 3, before })
          seen.push(...page.entries.map((e) => e.principal))
          const seqs = page.entries.map((e) => e.seq)
          expect(seqs).toEqual([...seqs].sort((a, b) => b - a))
          if (page.next_before === null) break
          before = page.next_before
        }
        expect(seen).toEqual(["p6", "p5", "p4", "p3", "p2", "p1", "p0"])
      }).pipe(Effect.provide(makeLog())))

    it.effect("an empty log has an empty last page; entries keep every field", () =>
      Effect.gen(function*() {
        const log = yield* OperationsLog
        expect(yield* log.page({ limit: 10 })).toEqual({ entries: [], next_before: null })
        yield* log.append({ ...entry("x"), outcome: "failure", detail: "invalid name or password", tenant_id: "t-1" })
        const [only] = (yield* log.page({ limit: 10 })).entries
        expect(only).toMatchObject({
          kind: "tenant.login",
          outcome: "failure",
          principal: "x",
          tenant_id: "t-1",
          source_address: "127.0.0.1",
          detail: "invalid name or password"
        })
      }).pipe(Effect.provide(makeLog())))
  })
