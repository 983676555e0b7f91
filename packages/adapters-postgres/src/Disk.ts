/**
 * The disk under a data directory, in the words an operator needs: a full disk is said to be
 * one (not a stack trace, nor a 503 that quotes the database's internal file paths).
 */
import { Data } from "effect"
import { statfsSync } from "node:fs"

/** Below this, the embedded store reports itself unhealthy: its next writes are likely to fail. */
export const MIN_FREE_BYTES = 8 * 1024 * 1024

/** Bytes an unprivileged process may still write on the filesystem holding `path`. */
export const freeBytes = (path: string): number => {
  const stats = statfsSync(path)
  return stats.bavail * stats.bsize
}

const mib = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MiB`

/** Why the embedded store cannot be used, in words, when its disk is (nearly) full. */
export const fullDiskProblem = (path: string): string | undefined => {
  const free = freeBytes(path)
  return free < MIN_FREE_BYTES
    ? `the disk holding ${path} is full (${mib(free)} free; the embedded store needs at least ${
      mib(MIN_FREE_BYTES)
    }): free some space`
    : undefined
}

/** PostgreSQL's words for a write the disk could not take (SQLSTATE 53100, or the OS's ENOSPC). */
const DISK_FULL = /no space left on device|ENOSPC|disk is full|could not extend file/i

/** Absolute paths, and the paths PostgreSQL names inside its data directory (`base/16384/2619`). */
const PATHS = /(?:"[^"]*\/[^"]*"|(?:\/[\w.@+-]+){2,}|\b(?:base|global|pg_wal|pg_xact)\/[\w./]+)/g

/**
 * A database failure as a caller may read it: a full disk said plainly, file paths left out
 * (they are the operator's business, and the log has the original).
 */
export const describeFailure = (message: string): string =>
  DISK_FULL.test(message)
    ? "the database's disk is full (no space left on device); writes fail until space is freed"
    : message.replace(PATHS, "<path>")

/** The embedded store failed to start. */
export class EmbeddedStoreError extends Data.TaggedError("EmbeddedStoreError")<{ readonly message: string }> {}
