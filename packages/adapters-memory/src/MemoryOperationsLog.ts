/**
 * The operations log in memory: a bounded ring of the newest entries (the oldest are dropped
 * past `capacity`, so a long-running test server cannot grow without bound).
 */
import { OperationLog, OperationsLog } from "@tenet/core"
import { Effect, Layer } from "effect"

export const DEFAULT_CAPACITY = 100_000

export const make = (capacity = DEFAULT_CAPACITY) =>
  Effect.sync(() => {
    const entries: Array<OperationLog.OperationLogEntry> = []
    let seq = 0
    return OperationsLog.OperationsLog.of({
      append: (entry) =>
        Effect.sync(() => {
          seq += 1
          entries.push(OperationLog.OperationLogEntry.make({ seq, ...entry }))
          if (entries.length > capacity) entries.splice(0, entries.length - capacity)
        }),
      page: ({ before, limit }) =>
        Effect.sync(() => {
          // Entries are in ascending seq order: find the end of the page, then walk backwards.
          let end = entries.length
          if (before !== undefined) {
            let lo = 0
            while (lo < end) {
              const mid = (lo + end) >>> 1
              if (entries[mid]!.seq < before) lo = mid + 1
              else end = mid
            }
          }
          const start = Math.max(0, end - limit)
          const page = entries.slice(start, end).reverse()
          return { entries: page, next_before: start > 0 && page.length > 0 ? page[page.length - 1]!.seq : null }
        })
    })
  })

export const layer = (capacity?: number) => Layer.effect(OperationsLog.OperationsLog, make(capacity))
