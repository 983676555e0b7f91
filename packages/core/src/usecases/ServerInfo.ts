/** Facts about the running server that use-cases need: its public URL and version. */
import { Context } from "effect"

export interface ServerInfoShape {
  /** Where this server is reached; the default target of platform service tunnels. */
  readonly publicUrl: string
  readonly version: string
}

export class ServerInfo extends Context.Tag("@tenet/core/ServerInfo")<ServerInfo, ServerInfoShape>() {}
