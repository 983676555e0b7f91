import { describe, expect, it } from "@effect/vitest"
import { NodeVault } from "@tenet/core/node"
import { Effect, Either, FastCheck as fc } from "effect"

const key = () => NodeVault.parseKeyOrThrow(NodeVault.generateKey())
const vault = NodeVault.make({ key: key(), scryptLogN: 10 })

describe("NodeVault", () => {
  it.effect.prop(
    "encryption round-trips and never shows the plaintext",
    [fc.string({ minLength: 4 })],
    ([text]) =>
      Effect.gen(function*() {
        const ciphertext = yield* vault.encrypt(text)
        expect(ciphertext).not.toContain(text)
        expect(yield* vault.decrypt(ciphertext)).toBe(text)
        expect(yield* vault.encrypt(text)).not.toBe(ciphertext)
      })
  )

  it.effect("a tampered ciphertext or another key fails with VaultError", () =>
    Effect.gen(function*() {
      const ciphertext = yield* vault.encrypt("registry-password")
      const [v, iv, body, tag] = ciphertext.split(".")
      // Change one character of the body for certain (a fixed replacement may equal it).
      const flipped = `${v}.${iv}.${body!.slice(0, -2)}${body!.at(-2) === "A" ? "B" : "A"}${body!.slice(-1)}.${tag}`
      expect(yield* Effect.flip(vault.decrypt(flipped))).toMatchObject({ _tag: "VaultError" })
      const other = NodeVault.make({ key: key(), scryptLogN: 10 })
      expect(yield* Effect.flip(other.decrypt(ciphertext))).toMatchObject({ _tag: "VaultError" })
      expect(yield* Effect.flip(vault.decrypt("not-a-ciphertext"))).toMatchObject({ _tag: "VaultError" })
    }))

  it.effect("passwords verify against their own hash only; hashes are salted", () =>
    Effect.gen(function*() {
      const hash = yield* vault.hashPassword("hunter2hunter2")
      expect(hash).toMatch(/^\$scrypt\$ln=10,r=8,p=1\$/)
      expect(hash).not.toContain("hunter2")
      expect(yield* vault.verifyPassword("hunter2hunter2", hash)).toBe(true)
      expect(yield* vault.verifyPassword("hunter2hunter3", hash)).toBe(false)
      expect(yield* vault.hashPassword("hunter2hunter2")).not.toBe(hash)
      expect(yield* vault.verifyPassword("x", "garbage")).toBe(false)
    }))

  it.effect("tokens carry 256 random bits and are looked up by a stable digest", () =>
    Effect.gen(function*() {
      const tokens = yield* Effect.all(Array.from({ length: 100 }, () => vault.newToken))
      expect(new Set(tokens).size).toBe(100)
      for (const t of tokens) expect(Buffer.from(t.slice("tenet_".length), "base64url").length).toBe(32)
      expect(vault.hashToken(tokens[0]!)).toBe(vault.hashToken(tokens[0]!))
      expect(vault.hashToken(tokens[0]!)).toMatch(/^[0-9a-f]{64}$/)
      expect(vault.hashToken(tokens[0]!)).not.toBe(vault.hashToken(tokens[1]!))
    }))

  it("keys are 32 bytes given as hex or base64", () => {
    expect(Either.isRight(NodeVault.parseKey("ab".repeat(32)))).toBe(true)
    expect(Either.isRight(NodeVault.parseKey(NodeVault.generateKey()))).toBe(true)
    expect(Either.isLeft(NodeVault.parseKey("short"))).toBe(true)
  })
})
