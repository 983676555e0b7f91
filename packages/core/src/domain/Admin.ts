/** The platform administrator: login and token rotation. */
import { Schema } from "effect"
import { wireExample } from "./Common.js"
import { ExpiresAt, SessionFlag } from "./Session.js"

export const AdminLogin = Schema.Struct({
  username: Schema.String.pipe(Schema.maxLength(256)),
  password: Schema.String.pipe(Schema.maxLength(1024)),
  session: SessionFlag
}).annotations({
  identifier: "AdminLogin",
  examples: wireExample({ username: "admin", password: "{admin password}" })
})

/** The admin user object: its name and current API token (or a session's token, with its expiry). */
export class AdminSession extends Schema.Class<AdminSession>("AdminSession")({
  username: Schema.String,
  api_token: Schema.String,
  expires_at: ExpiresAt
}) {}

/** What the store keeps about the admin: only a password hash and the token's hash and ciphertext. */
export const AdminRecord = Schema.Struct({
  username: Schema.String,
  password_hash: Schema.String,
  token_hash: Schema.String,
  token_ciphertext: Schema.String
})
export interface AdminRecord extends Schema.Schema.Type<typeof AdminRecord> {}
