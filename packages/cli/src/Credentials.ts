/**
 * Where `tenet login` keeps the session: `$XDG_CONFIG_HOME/tenet/credentials.json` (else
 * `~/.config/tenet/`), readable by the user alone (0600, in a 0700 directory). `TENET_URL` and
 * `TENET_TOKEN` stand in for it, for CI jobs that are given a token rather than a password.
 */
import { FileSystem, Path } from "@effect/platform"
import { Config, Data, Effect, Option, Schema } from "effect"
import { homedir } from "node:os"

export const Session = Schema.Struct({
  url: Schema.String,
  tenant: Schema.String,
  tenant_id: Schema.String,
  token: Schema.String
})
export type Session = typeof Session.Type

export class NotLoggedIn extends Data.TaggedError("NotLoggedIn")<{ readonly message: string }> {}

/** The file the session is kept in. */
export const file = Effect.gen(function*() {
  const path = yield* Path.Path
  const base = Option.getOrElse(
    yield* Config.option(Config.string("XDG_CONFIG_HOME")),
    () => path.join(homedir(), ".config")
  )
  return path.join(base, "tenet", "credentials.json")
})

/** Keeps `session` for the next commands, readable by the user alone. */
export const save = (session: Session) =>
  Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    const path = yield* Path.Path
    const target = yield* file
    yield* fs.makeDirectory(path.dirname(target), { recursive: true, mode: 0o700 })
    yield* fs.writeFileString(target, JSON.stringify(session, null, 2) + "\n", { mode: 0o600 })
    // The mode applies only to a file the write creates: an older file is narrowed too.
    yield* fs.chmod(target, 0o600)
    return target
  })

/** The session: `TENET_URL` + `TENET_TOKEN` when set, else the one `tenet login` kept. */
export const load = Effect.gen(function*() {
  const set = (name: string) => Effect.map(Config.option(Config.string(name)), Option.filter((v) => v !== ""))
  const url = yield* set("TENET_URL")
  const token = yield* set("TENET_TOKEN")
  if (Option.isSome(url) && Option.isSome(token)) {
    return { url: url.value, token: token.value, tenant: "", tenant_id: "" } satisfies Session
  }
  const fs = yield* FileSystem.FileSystem
  const target = yield* file
  const text = yield* fs.readFileString(target).pipe(
    Effect.mapError(() =>
      new NotLoggedIn({ message: `not logged in: run \`tenet login\` (or set TENET_URL and TENET_TOKEN)` })
    )
  )
  return yield* Schema.decodeUnknown(Schema.parseJson(Session))(text).pipe(
    Effect.mapError(() => new NotLoggedIn({ message: `${target} is not a session tenet login wrote: log in again` }))
  )
})
