/** The platform administrator: login and token rotation. */
import { Schema } from "effect"
import { nullable, Timestamp, wireExample } from "./Common.js"

/** A login's `session`: a sign-in session's token in the answer, not the API token. */
export const SessionFlag = Schema.optional(Schema.Boolean).annotations({
  description: "true: answer a new sign-in session's token (ended by logout, by rotation, or after " +
    "TENET_SESSION_TTL) instead of the API token"
})

/** When an answered token stops working by itself: a session's expiry; null for an API token. */
export const ExpiresAt = nullable(Timestamp).annotations({
  description: "When the token stops working by itself: a session's expiry; null for an API token"
})

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
