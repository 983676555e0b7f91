/**
 * The Vault port: everything secret goes through here. Passwords are hashed with a
 * memory-hard KDF, tokens are random and looked up by hash, and the copies the spec needs
 * back (a tenant's current token, env vars, registry and provider passwords) are encrypted.
 */
import type { Effect } from "effect"
import { Context, Schema } from "effect"

/** A ciphertext could not be decrypted: wrong key, or tampered with. */
export class VaultError extends Schema.TaggedError<VaultError>()("VaultError", { detail: Schema.String }) {}

export interface VaultShape {
  readonly hashPassword: (password: string) => Effect.Effect<string>
  /** Constant-time verification against a hash made by `hashPassword`. */
  readonly verifyPassword: (password: string, hash: string) => Effect.Effect<boolean>
  /** A fresh API token carrying 256 random bits. */
  readonly newToken: Effect.Effect<string>
  /** A fresh human-typable password (for a generated admin password). */
  readonly newPassword: Effect.Effect<string>
  /** The lookup key of a token: a one-way digest, safe to index. */
  readonly hashToken: (token: string) => string
  /**
   * A keyed one-way digest (under a key only the server holds): equal texts give equal
   * digests, and a stored one tells nothing about a text with a secret in it.
   */
  readonly digest: (text: string) => string
  readonly encrypt: (plaintext: string) => Effect.Effect<string>
  readonly decrypt: (ciphertext: string) => Effect.Effect<string, VaultError>
}

export class Vault extends Context.Tag("@tenet/core/Vault")<Vault, VaultShape>() {}
