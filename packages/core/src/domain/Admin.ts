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
export const AdminRecord = Schema.Struct({
  username: Schema.String,
  password_hash: Schema.String,
  token_hash: Schema.String,
  token_ciphertext: Schema.String
})
export interface AdminRecord extends Schema.Schema.Type<typeof AdminRecord> {}
