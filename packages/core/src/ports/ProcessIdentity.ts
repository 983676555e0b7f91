/**
 * The ProcessIdentity port: who this server process is, written on what it leaves unfinished
 * (a delete's mark), and whether the process a mark names is gone, so its work can be finished
 * at once instead of after the mark's lease. Where that cannot be told (another host), `gone`
 * says no and the lease decides. The default knows nothing of the platform: a mark by nobody,
 * and never gone; the Node server provides `NodeProcessIdentity.layer` (host, pid and this
 * server's incarnation in the process).
 */
import { Context, Layer } from "effect"

export interface ProcessIdentityShape {
  /** This server, as a mark names it. */
  readonly self: string | null
  /** Whether the server a mark names has stopped (certain, never a guess: unknown is false). */
  readonly gone: (marker: string) => boolean
}

export class ProcessIdentity extends Context.Reference<ProcessIdentity>()("@tenet/core/ProcessIdentity", {
  defaultValue: (): ProcessIdentityShape => ({ self: null, gone: () => false })
}) {}

export const layer = (shape: ProcessIdentityShape) => Layer.succeed(ProcessIdentity, shape)
