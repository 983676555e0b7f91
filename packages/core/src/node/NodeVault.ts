/**
 * The Vault on node:crypto: scrypt password hashes, SHA-256 token digests, HMAC-SHA256 request
 * digests and AES-256-GCM encryption under one 32-byte key.
 */
import { Effect, Either, Layer } from "effect"
import {
  createCipheriv,
  createDecipheriv,
  createHash,
  createHmac,
  randomBytes,
  scrypt,
  timingSafeEqual
} from "node:crypto"
import { Vault, VaultError } from "../ports/Vault.js"

export interface Options {
  /** The AES-256-GCM key: exactly 32 bytes. */
  readonly key: Uint8Array
  /**
   * log2 of scrypt's cost N. The default 15 (N=32768, r=8: 32 MiB, ~0.1 s) follows OWASP's
   * minimum; tests may lower it, the hash records what was used.
   */
  readonly scryptLogN?: number
}

const KEY_LENGTH = 32

/**
 * Reads an encryption key given as 64 hex characters or as base64 of 32 bytes.
 */
export const parseKey = (text: string): Either.Either<Uint8Array, string> => {
  const trimmed = text.trim()
  const bytes = /^[0-9a-fA-F]{64}$/.test(trimmed)
    ? Buffer.from(trimmed, "hex")
    : Buffer.from(trimmed, "base64")
  return bytes.length === KEY_LENGTH
    ? Either.right(new Uint8Array(bytes))
    : Either.left("the encryption key must be 32 bytes, as 64 hex characters or base64")
}

/** Like `parseKey`, for keys known to be well-formed (freshly generated ones). */
export const parseKeyOrThrow = (text: string): Uint8Array =>
  Either.getOrThrowWith(parseKey(text), (message) => new Error(message))

/** A new random key, base64. */
export const generateKey = (): string => randomBytes(KEY_LENGTH).toString("base64")

const scryptAsync = (password: string, salt: Buffer, logN: number, r: number, p: number) =>
  Effect.async<Buffer>((resume) => {
    scrypt(
      password,
      salt,
      KEY_LENGTH,
      { N: 2 ** logN, r, p, maxmem: 256 * 2 ** logN * r + 1024 * 1024 },
      (error, key) => resume(error ? Effect.die(error) : Effect.succeed(key))
    )
  })

const PHC = /^\$scrypt\$ln=(\d{1,2}),r=(\d{1,2}),p=(\d{1,2})\$([A-Za-z0-9+/]+={0,2})\$([A-Za-z0-9+/]+={0,2})$/

export const make = (options: Options) => {
  if (options.key.length !== KEY_LENGTH) throw new Error("the encryption key must be 32 bytes")
  const key = Buffer.from(options.key)
  const logN = options.scryptLogN ?? 15
  const r = 8
  const p = 1
  // Digests get a key of their own, derived from the encryption key, so that no value is ever
  // both a ciphertext key and a MAC key.
  const digestKey = createHmac("sha256", key).update("tenet digest v1").digest()

  return Vault.of({
    hashPassword: (password) =>
      Effect.gen(function*() {
        const salt = randomBytes(16)
        const hash = yield* scryptAsync(password, salt, logN, r, p)
        return `$scrypt$ln=${logN},r=${r},p=${p}$${salt.toString("base64")}$${hash.toString("base64")}`
      }),
    verifyPassword: (password, stored) =>
      Effect.gen(function*() {
        const m = PHC.exec(stored)
        if (m === null) return false
        const [, ln, rr, pp, salt, expected] = m
        const expectedBytes = Buffer.from(expected!, "base64")
        if (Number(ln) > 20 || expectedBytes.length !== KEY_LENGTH) return false
        const actual = yield* scryptAsync(password, Buffer.from(salt!, "base64"), Number(ln), Number(rr), Number(pp))
        return timingSafeEqual(actual, expectedBytes)
      }),
    newToken: Effect.sync(() => `tenet_${randomBytes(32).toString("base64url")}`),
    newPassword: Effect.sync(() => randomBytes(18).toString("base64url")),
    hashToken: (token) => createHash("sha256").update(token, "utf8").digest("hex"),
    digest: (text) => createHmac("sha256", digestKey).update(text, "utf8").digest("base64url"),
    encrypt: (plaintext) =>
      Effect.sync(() => {
        const iv = randomBytes(12)
        const cipher = createCipheriv("aes-256-gcm", key, iv)
        const body = Buffer.concat([cipher.update(plaintext, "utf8"), cipher.final()])
        return ["v1", iv.toString("base64url"), body.toString("base64url"), cipher.getAuthTag().toString("base64url")]
          .join(".")
      }),
    decrypt: (ciphertext) =>
      Effect.try({
        try: () => {
          const [version, iv, body, tag] = ciphertext.split(".")
          if (version !== "v1" || iv === undefined || body === undefined || tag === undefined) {
            throw new Error("unknown ciphertext format")
          }
          const decipher = createDecipheriv("aes-256-gcm", key, Buffer.from(iv, "base64url"))
          decipher.setAuthTag(Buffer.from(tag, "base64url"))
          return Buffer.concat([decipher.update(Buffer.from(body, "base64url")), decipher.final()]).toString("utf8")
        },
        catch: (e) => new VaultError({ detail: e instanceof Error ? e.message : String(e) })
      })
  })
}

export const layer = (options: Options): Layer.Layer<Vault> => Layer.sync(Vault, () => make(options))
