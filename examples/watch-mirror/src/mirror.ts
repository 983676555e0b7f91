/**
 * What a control plane that imports Tenet does to follow a tenant's VPCs without polling:
 * watch first (its first bookmark is where the stream starts), list every VPC a page at a time,
 * then apply each change after that bookmark to the mirror. Nothing falls between the list and
 * the watch, and a dropped connection is resumed by the client from the last revision.
 */
import type { PromiseClient } from "@tenet/client"

export interface Mirror {
  /** The tenant's VPCs by id: their names, as the last change left them. */
  readonly vpcs: Map<string, string>
  /** Stops following. */
  readonly stop: () => Promise<void>
}

export const follow = async (
  tenet: PromiseClient.PromiseClient,
  log: (line: string) => void
): Promise<Mirror> => {
  const vpcs = new Map<string, string>()
  const watching = tenet.watch()
  const stream = watching[Symbol.asyncIterator]()
  // The stream's start: changes after it are the stream's, the rest the list's.
  const first = await stream.next()
  if (first.done === true || first.value.type !== "BOOKMARK") throw new Error("the stream did not start")
  for await (const vpc of tenet.pages.all("vpcs.list", undefined, { limit: 100 })) vpcs.set(vpc.id, vpc.name)
  log(`listed ${vpcs.size} VPCs; watching from revision ${first.value.revision}`)
  const following = (async () => {
    for (;;) {
      const next = await stream.next()
      if (next.done === true) return
      const item = next.value
      if (item.type === "BOOKMARK" || item.kind !== "vpc") continue
      const object = item.object as { readonly name: string }
      if (item.type === "DELETED") vpcs.delete(item.id)
      else vpcs.set(item.id, object.name)
      log(`${item.type} vpc ${object.name} (revision ${item.revision})`)
    }
  })()
  return {
    vpcs,
    stop: async () => {
      await watching.close()
      await following
    }
  }
}
