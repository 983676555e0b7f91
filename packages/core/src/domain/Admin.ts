import { wireExample } from "./Common.js"
/** The platform administrator: login and token rotation. */
import { Schema } from "effect"

export const AdminLogin = Schema.Struct({
  username: Schema.String.pipe(Schema.maxLength(256)),
  password: Schema.String.pipe(Schema.maxLength(1024))
}).annotations({
  identifier: "AdminLogin",
  examples: wireExample({ username: "admin", password: "{admin password}" })
})

/** The admin user object: its name and current API token. */
export class AdminSession extends Schema.Class<AdminSession>("AdminSession")({
  username: Schema.String,
  api_token: Schema.String
}) {}

/** What the store keeps about the admin: only a password hash and the token's hash and ciphertext. */
export interface AdminRecord {
  readonly username: string
  readonly password_hash: string
  readonly token_hash: string
  readonly token_ciphertext: string
}
