/** The OperationsLog port: append-only, read newest first in pages. */
import type { Effect } from "effect"
import { Context } from "effect"
import type { NewOperation, OperationLogEntry } from "../domain/OperationLog.js"
import type { StoreUnavailable } from "./Store.js"

export interface OperationsLogPage {
  readonly entries: ReadonlyArray<OperationLogEntry>
  /** The `before` cursor of the next (older) page; null on the last page. */
  readonly next_before: number | null
}

export interface OperationsLogShape {
  readonly append: (entry: NewOperation) => Effect.Effect<void, StoreUnavailable>
  /** Entries with `seq < before` (all when absent), newest first, at most `limit`. */
  readonly page: (options: {
    readonly limit: number
    readonly before?: number | undefined
  }) => Effect.Effect<OperationsLogPage, StoreUnavailable>
}

export class OperationsLog extends Context.Tag("@tenet/core/OperationsLog")<OperationsLog, OperationsLogShape>() {}
