/**
 * Identity: admin and tenant login, logout, token rotation, and turning a token into a
 * principal. A login returns the principal's current API token (kept encrypted), as the spec
 * has it; asked for a session (`session: true`) it mints a sign-in session's token instead
 * (`domain/Session.ts`), which logout ends. Logout with the API token stays stateless, as the
 * spec says. Rotating a principal's API token ends its sessions. Every login attempt and logout
 * goes to the operations log.
 */
import type { Duration } from "effect"
import { Clock, Context, DateTime, Effect, Layer, Option } from "effect"
import { Pipeline } from "../changes/Pipeline.js"
import { AdminSession } from "../domain/Admin.js"
import type { TenantId } from "../domain/Ids.js"
import type * as LoginThrottle from "../domain/LoginThrottle.js"
import type { OperationKind, Outcome } from "../domain/OperationLog.js"
import type { AdminPrincipal, Principal, RequestOrigin, TenantPrincipal } from "../domain/Principal.js"
import * as Session from "../domain/Session.js"
import { TenantSession } from "../domain/Tenant.js"
import type { TenantRecord } from "../domain/Tenant.js"
import { Forbidden, NotFound, TooManyRequests, Unauthorized } from "../Errors.js"
import type { InternalError, ServiceUnavailable } from "../Errors.js"
import * as Metrics from "../observability/Metrics.js"
import { storeUnavailable, vaultFailure } from "../ports/Failures.js"
import { OperationsLog } from "../ports/OperationsLog.js"
import { Store } from "../ports/Store.js"
import { Vault } from "../ports/Vault.js"
import { ReadModel, readThrough } from "../readmodel/ReadModel.js"

/** How failed logins are slowed (`LoginThrottle`), by what the attempts have in common. */
export interface ThrottlePolicy {
  /** A name from one source address: the guesser, slowed further with each failure. */
  readonly nameAndAddress: LoginThrottle.Policy
  /** A source address, whatever the name: more room, since many users may share one address. */
  readonly address: LoginThrottle.Policy
  /**
   * A name, from any address: guessers spread over many addresses. Its wait has a low ceiling,
   * so the owner, from an address of its own, is only ever slowed, never locked out.
   */
  readonly name: LoginThrottle.Policy
}

export const defaultThrottlePolicy: ThrottlePolicy = {
  nameAndAddress: { free: 5, windowMillis: 60 * 60_000, baseMillis: 1_000, capMillis: 15 * 60_000 },
  address: { free: 50, windowMillis: 60 * 60_000, baseMillis: 1_000, capMillis: 15 * 60_000 },
  name: { free: 20, windowMillis: 15 * 60_000, baseMillis: 1_000, capMillis: 30_000 }
}

/** The throttle policy the use case runs by: `defaultThrottlePolicy` unless a layer provides another. */
export class LoginThrottling extends Context.Reference<LoginThrottling>()("@tenet/core/Identity/LoginThrottling", {
  defaultValue: (): ThrottlePolicy => defaultThrottlePolicy
}) {}

/** How long sign-in sessions last (`Session.DEFAULT_TTL` unless a layer provides another). */
export class SessionLifetime extends Context.Reference<SessionLifetime>()("@tenet/core/Identity/SessionLifetime", {
  defaultValue: (): Duration.Duration => Session.DEFAULT_TTL
}) {}

/**
 * A sign-in session is the lesser credential (it expires, a logout ends it): rotating would trade
 * it for an API token that does neither, so a stolen session cannot outlive its sign-out.
 */
const SESSION_CANNOT_ROTATE = "a sign-in session cannot rotate the API token: rotate with the API token itself"

/** The scope of a throttle key, as metrics and the operations log name it. */
const scopeOf = (key: string): Metrics.ThrottleScope =>
  key.startsWith("pair:") ? "name_address" : key.startsWith("addr:") ? "address" : "name"

type Failure = Unauthorized | TooManyRequests | ServiceUnavailable | InternalError

export interface IdentityShape {
  readonly adminLogin: (
    input: { readonly username: string; readonly password: string; readonly session?: boolean | undefined },
    origin: RequestOrigin
  ) => Effect.Effect<AdminSession, Failure>
  /** Records the logout; ends the caller's sign-in sessions among the `tokens` it was sent. */
  readonly adminLogout: (
    admin: AdminPrincipal,
    tokens: ReadonlyArray<string>,
    origin: RequestOrigin
  ) => Effect.Effect<void, ServiceUnavailable>
  readonly adminRotate: (
    admin: AdminPrincipal,
    origin: RequestOrigin
  ) => Effect.Effect<AdminSession, Forbidden | Unauthorized | ServiceUnavailable | InternalError>
  readonly tenantLogin: (
    input: { readonly name: string; readonly password: string; readonly session?: boolean | undefined },
    origin: RequestOrigin
  ) => Effect.Effect<TenantSession, Failure>
  /** Records the logout; ends the caller's sign-in sessions among the `tokens` it was sent. */
  readonly tenantLogout: (
    tenant: TenantPrincipal,
    tokens: ReadonlyArray<string>,
    origin: RequestOrigin
  ) => Effect.Effect<void, ServiceUnavailable>
  readonly tenantRotate: (
    caller: Principal,
    tenantId: TenantId,
    origin: RequestOrigin
  ) => Effect.Effect<TenantSession, Forbidden | NotFound | ServiceUnavailable | InternalError>
  readonly authenticateAdmin: (token: string) => Effect.Effect<AdminPrincipal, Unauthorized | ServiceUnavailable>
  readonly authenticateTenant: (token: string) => Effect.Effect<TenantPrincipal, Unauthorized | ServiceUnavailable>
  /** Forgets the login attempts no throttling window holds any more; answers how many. */
  readonly purgeAttempts: Effect.Effect<number, ServiceUnavailable>
  /** Forgets the sessions that have expired; answers how many. */
  readonly purgeSessions: Effect.Effect<number, ServiceUnavailable>
  /**
   * Makes sure the admin exists at startup. With a password, that password is (re)set; without
   * one, an existing admin is kept and a new one gets a generated password, returned once.
   */
  readonly bootstrapAdmin: (
    username: string,
    password: Option.Option<string>
  ) => Effect.Effect<{ readonly generatedPassword: Option.Option<string> }, ServiceUnavailable>
}

export class Identity extends Context.Tag("@tenet/core/Identity")<Identity, IdentityShape>() {
  static readonly make = Effect.gen(function*() {
    const policy = yield* LoginThrottling
    const sessionLifetime = yield* SessionLifetime
    const store = yield* Store
    const readModel = yield* ReadModel
    const pipeline = yield* Pipeline
    const vault = yield* Vault
    const log = yield* OperationsLog
    // Verifying against a real hash when the name is unknown keeps both paths equally slow,
    // so response times do not reveal which names exist.
    const decoyHash = yield* vault.hashPassword("tenet-decoy-password")

    const record = (
      kind: OperationKind,
      outcome: Outcome,
      principal: string,
      tenantId: string | null,
      origin: RequestOrigin,
      detail: string | null = null
    ) =>
      Effect.flatMap(DateTime.now, (at) =>
        log.append({
          at,
          kind,
          outcome,
          principal,
          tenant_id: tenantId,
          source_address: origin.source_address,
          detail
        })).pipe(
          storeUnavailable,
          // Counted once the log has it, so the metric and the log agree.
          Effect.zipRight(Metrics.recordAuthOperation(kind, outcome))
        )

    /** The attempt's own key (this name from this address): the one a success clears. */
    const pairKey = (name: string, origin: RequestOrigin) => `pair:${name}|${origin.source_address ?? "unknown"}`

    const throttleKeys = (name: string, origin: RequestOrigin): ReadonlyArray<LoginThrottle.Keyed> => [
      { key: pairKey(name, origin), policy: policy.nameAndAddress },
      ...(origin.source_address === null
        ? []
        : [{ key: `addr:${origin.source_address}`, policy: policy.address }]),
      { key: `name:${name}`, policy: policy.name }
    ]

    /** Who is being slowed, in words for the operations log. */
    const throttledWhom = (key: string, name: string, origin: RequestOrigin) => {
      const from = origin.source_address ?? "an unknown address"
      switch (scopeOf(key)) {
        case "name_address":
          return `too many failed attempts for '${name}' from ${from}`
        case "address":
          return `too many failed attempts from ${from}`
        case "name":
          return `too many failed attempts for '${name}' from several addresses; every address is slowed`
      }
    }

    /**
     * A login's password check as one throttled attempt: refused up front while one of its
     * keys makes it wait; counted in the store as it starts (so every replica counts it, and
     * concurrent guesses cannot all pass the check); taken back, with its name-and-address
     * failures, when the check passes. A failure that starts or lengthens a wait is counted
     * as a throttle of that key's scope.
     */
    const throttled = <E>(
      kind: OperationKind,
      name: string,
      origin: RequestOrigin,
      check: Effect.Effect<boolean, E>
    ) =>
      Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        const attempt = crypto.randomUUID()
        const begun = yield* store.loginAttempts.begin(attempt, throttleKeys(name, origin), now).pipe(
          storeUnavailable
        )
        if (begun._tag === "Throttled") {
          // Whole seconds, rounded up: a retry after `Retry-After` is not refused for this wait.
          const seconds = Math.ceil(begun.wait / 1000)
          yield* record(
            kind,
            "throttled",
            name,
            null,
            origin,
            `${throttledWhom(begun.key, name, origin)}; wait ${seconds} s`
          )
          return yield* new TooManyRequests({
            detail: `too many failed login attempts; try again in ${seconds} seconds`,
            retry_after: seconds
          })
        }
        const ok = yield* check
        if (ok) yield* store.loginAttempts.succeeded(attempt, [pairKey(name, origin)]).pipe(storeUnavailable)
        else yield* Effect.forEach(begun.throttling, (key) => Metrics.recordThrottle(scopeOf(key)), { discard: true })
        return ok
      })

    const verify = (password: string, hash: Option.Option<string>) =>
      vault.verifyPassword(
        password,
        Option.getOrElse(hash, () => decoyHash)
      ).pipe(
        Effect.map((ok) => ok && Option.isSome(hash))
      )

    /**
     * The token a login answers: the principal's API token (decrypted), or, asked for a session,
     * a new session's token with its expiry (its digest stored, in a transaction of its own).
     */
    const tokenFor = (
      session: boolean | undefined,
      owner: Session.Owner,
      ciphertext: string
    ): Effect.Effect<
      { readonly token: string; readonly expires_at: DateTime.Utc | null },
      ServiceUnavailable | InternalError
    > =>
      session !== true
        ? Effect.map(vault.decrypt(ciphertext).pipe(vaultFailure), (token) => ({ token, expires_at: null }))
        : Effect.gen(function*() {
          const token = yield* vault.newToken
          const now = yield* DateTime.now
          const expires_at = DateTime.addDuration(now, sessionLifetime)
          yield* pipeline.commitGlobal(
            store.sessions.insert({
              token_hash: vault.hashToken(token),
              tenant_id: "tenant_id" in owner ? owner.tenant_id : null,
              admin_username: "admin_username" in owner ? owner.admin_username : null,
              created_at: now,
              expires_at
            }),
            () => null
          )
          return { token, expires_at }
        })

    const tenantSession = (tenant: TenantRecord, session: boolean | undefined) =>
      Effect.map(
        tokenFor(session, { tenant_id: tenant.id }, tenant.token_ciphertext),
        ({ expires_at, token }) =>
          TenantSession.make({ id: tenant.id, name: tenant.name, api_token: token, expires_at })
      )

    /**
     * Ends the sign-in sessions among `tokens` (those the logout was sent) that are `whose`;
     * answers whether it ended one. A token that is not a session, or is another's, is left alone.
     */
    const endSessions = (tokens: ReadonlyArray<string>, whose: (session: Session.SessionRecord) => boolean) =>
      Effect.map(
        Effect.forEach(
          tokens,
          (token) =>
            Effect.flatMap(
              sessionOf(token).pipe(storeUnavailable),
              (found) =>
                Option.isSome(found) && whose(found.value.session)
                  ? pipeline.commitGlobal(store.sessions.delete(vault.hashToken(token)), () => null)
                  : Effect.succeed(false)
            )
        ),
        (ended) => ended.some((one) => one)
      )

    const adminLogin: IdentityShape["adminLogin"] = Effect.fn("Identity.adminLogin")(function*(input, origin) {
      const admin = yield* store.admins.find(input.username).pipe(storeUnavailable)
      const ok = yield* throttled(
        "admin.login",
        input.username,
        origin,
        verify(input.password, Option.map(admin, (a) => a.password_hash))
      )
      if (!ok || Option.isNone(admin)) {
        yield* record("admin.login", "failure", input.username, null, origin, "invalid username or password")
        return yield* new Unauthorized({ detail: "invalid username or password" })
      }
      yield* record("admin.login", "success", input.username, null, origin, input.session === true ? "session" : null)
      const { expires_at, token } = yield* tokenFor(
        input.session,
        { admin_username: admin.value.username },
        admin.value.token_ciphertext
      )
      return AdminSession.make({ username: admin.value.username, api_token: token, expires_at })
    })

    const adminRotate: IdentityShape["adminRotate"] = Effect.fn("Identity.adminRotate")(function*(principal, origin) {
      if (principal.session === true) return yield* new Forbidden({ detail: SESSION_CANNOT_ROTATE })
      const token = yield* vault.newToken
      const ciphertext = yield* vault.encrypt(token)
      const updated = yield* pipeline.commitGlobal(
        Effect.gen(function*() {
          const admin = yield* store.admins.find(principal.username)
          if (Option.isNone(admin)) return false
          yield* store.admins.put({
            ...admin.value,
            token_hash: vault.hashToken(token),
            token_ciphertext: ciphertext
          })
          // A rotation is a reset: every sign-in session of the admin ends with the old token.
          yield* store.sessions.deleteOf({ admin_username: principal.username })
          return true
        }),
        () => principal.username
      )
      if (!updated) return yield* new Unauthorized({ detail: "the admin no longer exists" })
      yield* record("admin.rotate_token", "success", principal.username, null, origin)
      return AdminSession.make({ username: principal.username, api_token: token, expires_at: null })
    })

    const tenantLogin: IdentityShape["tenantLogin"] = Effect.fn("Identity.tenantLogin")(function*(input, origin) {
      const tenant = yield* store.tenants.findByName(input.name).pipe(storeUnavailable)
      const ok = yield* throttled(
        "tenant.login",
        input.name,
        origin,
        verify(input.password, Option.map(tenant, (t) => t.password_hash))
      )
      if (!ok || Option.isNone(tenant)) {
        yield* record("tenant.login", "failure", input.name, null, origin, "invalid name or password")
        return yield* new Unauthorized({ detail: "invalid name or password" })
      }
      yield* record(
        "tenant.login",
        "success",
        tenant.value.name,
        tenant.value.id,
        origin,
        input.session === true ? "session" : null
      )
      return yield* tenantSession(tenant.value, input.session)
    })

    const tenantRotate: IdentityShape["tenantRotate"] = Effect.fn("Identity.tenantRotate")(
      function*(caller, tenantId, origin) {
        if (caller._tag === "Tenant" && caller.tenant_id !== tenantId) {
          return yield* new Forbidden({ detail: "a tenant can rotate only its own token" })
        }
        if (caller.session === true) return yield* new Forbidden({ detail: SESSION_CANNOT_ROTATE })
        const token = yield* vault.newToken
        const ciphertext = yield* vault.encrypt(token)
        const tenant = yield* pipeline.commitGlobal(
          Effect.gen(function*() {
            const found = yield* store.tenants.find(tenantId)
            if (Option.isSome(found)) {
              yield* store.tenants.setToken(tenantId, vault.hashToken(token), ciphertext)
              yield* store.sessions.deleteOf({ tenant_id: tenantId })
            }
            return found
          }),
          () => tenantId
        )
        if (Option.isNone(tenant)) return yield* new NotFound({ detail: `tenant ${tenantId} not found` })
        const by = caller._tag === "Admin" ? `rotated by admin ${caller.username}` : null
        yield* record("tenant.rotate_token", "success", tenant.value.name, tenantId, origin, by)
        return TenantSession.make({ id: tenant.value.id, name: tenant.value.name, api_token: token, expires_at: null })
      }
    )

    /** The live session `token` is, if it is one. */
    const sessionOf = (token: string) =>
      Effect.flatMap(Clock.currentTimeMillis, (now) => store.sessions.find(vault.hashToken(token), now))

    const authenticateAdmin: IdentityShape["authenticateAdmin"] = (token) =>
      token === ""
        ? Effect.fail(
          new Unauthorized({
            detail: "missing X-Admin-Token header: send the admin API token from POST /admin/login"
          })
        )
        : store.admins.findByTokenHash(vault.hashToken(token)).pipe(
          Effect.flatMap((admin) =>
            Option.isSome(admin)
              ? Effect.succeed(Option.map(admin, (a): AdminPrincipal => ({ _tag: "Admin", username: a.username })))
              : Effect.flatMap(sessionOf(token), (found) =>
                Option.isSome(found) && found.value.session.admin_username !== null
                  ? Effect.map(
                    store.admins.findByTokenHash(found.value.principalTokenHash),
                    Option.map((a): AdminPrincipal => ({ _tag: "Admin", username: a.username, session: true }))
                  )
                  : Effect.succeed(Option.none()))
          ),
          storeUnavailable,
          Effect.flatMap(Option.match({
            onNone: () => Effect.fail(new Unauthorized({ detail: "invalid admin token" })),
            onSome: Effect.succeed
          }))
        )

    const authenticateTenant: IdentityShape["authenticateTenant"] = (token) =>
      token === ""
        ? Effect.fail(
          new Unauthorized({
            detail: "missing X-Auth-Token header: send the tenant API token from POST /tenants/login"
          })
        )
        : readModel.authenticate(vault.hashToken(token)).pipe(
          // Not an API token: a session's, authenticated from then on as its tenant's API token.
          Effect.flatMap((found) =>
            Option.isSome(found)
              ? Effect.succeed(Option.map(found, (f) => ({ ...f, signedIn: false })))
              : Effect.flatMap(sessionOf(token), (session) =>
                Option.isSome(session) && session.value.session.tenant_id !== null
                  ? Effect.map(
                    readModel.authenticate(session.value.principalTokenHash),
                    Option.map((f) => ({ ...f, signedIn: true }))
                  )
                  : Effect.succeed(Option.none()))
          ),
          storeUnavailable,
          Effect.flatMap(Option.match({
            onNone: () => Effect.fail(new Unauthorized({ detail: "invalid tenant token" })),
            onSome: ({ session, signedIn, tenant }) =>
              Effect.as(
                readThrough(session),
                {
                  _tag: "Tenant",
                  tenant_id: tenant.id,
                  name: tenant.name,
                  ...(signedIn ? { session: true } : {})
                } satisfies TenantPrincipal
              )
          }))
        )

    const purgeSessions = Effect.flatMap(
      Clock.currentTimeMillis,
      (now) => store.sessions.purge(now).pipe(storeUnavailable)
    )

    const purgeAttempts = Effect.flatMap(Clock.currentTimeMillis, (now) =>
      store.loginAttempts.purge(
        now - Math.max(policy.nameAndAddress.windowMillis, policy.address.windowMillis, policy.name.windowMillis)
      ).pipe(
        storeUnavailable
      ))

    const bootstrapAdmin: IdentityShape["bootstrapAdmin"] = Effect.fn("Identity.bootstrapAdmin")(
      function*(username, password) {
        const existing = yield* store.admins.find(username).pipe(storeUnavailable)
        if (Option.isSome(existing) && Option.isNone(password)) {
          return { generatedPassword: Option.none() }
        }
        const generated = Option.isNone(password) ? Option.some(yield* vault.newPassword) : Option.none<string>()
        const plain = Option.getOrElse(password, () => Option.getOrThrow(generated))
        const passwordHash = Option.isSome(existing) &&
            (yield* vault.verifyPassword(plain, existing.value.password_hash))
          ? existing.value.password_hash
          : yield* vault.hashPassword(plain)
        const tokenFields = Option.isSome(existing)
          ? { token_hash: existing.value.token_hash, token_ciphertext: existing.value.token_ciphertext }
          : yield* Effect.flatMap(vault.newToken, (token) =>
            Effect.map(vault.encrypt(token), (ciphertext) => ({
              token_hash: vault.hashToken(token),
              token_ciphertext: ciphertext
            })))
        // A new password is a reset: the sessions signed in with the old one end, before the new
        // one is kept (a start that fails between the two then tries both again).
        if (Option.isSome(existing) && passwordHash !== existing.value.password_hash) {
          yield* store.sessions.deleteOf({ admin_username: username }).pipe(storeUnavailable)
        }
        yield* store.admins.put({ username, password_hash: passwordHash, ...tokenFields }).pipe(storeUnavailable)
        return { generatedPassword: generated }
      }
    )

    return Identity.of({
      adminLogin,
      adminLogout: (admin, tokens, origin) =>
        Effect.flatMap(
          endSessions(tokens, (session) => session.admin_username === admin.username),
          (ended) => record("admin.logout", "success", admin.username, null, origin, ended ? "session ended" : null)
        ),
      adminRotate,
      tenantLogin,
      tenantLogout: (tenant, tokens, origin) =>
        Effect.flatMap(endSessions(tokens, (session) => session.tenant_id === tenant.tenant_id), (ended) =>
          record(
            "tenant.logout",
            "success",
            tenant.name,
            tenant.tenant_id,
            origin,
            ended ? "session ended" : null
          )),
      tenantRotate,
      authenticateAdmin,
      authenticateTenant,
      purgeAttempts,
      purgeSessions,
      bootstrapAdmin
    })
  })

  static readonly layer = Layer.effect(Identity, Identity.make)
}
