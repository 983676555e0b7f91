/**
 * A multi-host URL read as libpq reads it, and the primary found among its hosts: the first in
 * the URL's order that accepts writes, asked again once it is lost, one search at a time.
 */
import { describe, expect, it } from "@effect/vitest"
import { PgPrimary } from "@tenet/adapters-postgres"
import { Effect, FastCheck as fc } from "effect"

const hostName = fc.oneof(
  fc.domain(),
  fc.ipV4(),
  fc.ipV6()
)
const host = fc.record({ host: hostName, port: fc.integer({ min: 1, max: 65535 }) })

const targetOf = (url: string) => {
  const parsed = PgPrimary.parseUrl(url)
  if ("invalid" in parsed) throw new Error(parsed.invalid)
  return parsed.target
}

describe("PgPrimary.parseUrl", () => {
  it.prop("every host and port of a multi-host URL, in order; the rest of the URL kept on the first", [
    fc.array(host, { minLength: 1, maxLength: 4 })
  ], ([hosts]) => {
    const url = `postgres://tenet:s%40cret@${hosts.map(PgPrimary.describeHost).join(",")}/tenet?sslmode=disable`
    const target = targetOf(url)
    expect(target.hosts).toEqual(hosts)
    const first = new URL(target.url)
    expect([first.username, first.password, first.pathname, first.search]).toEqual([
      "tenet",
      "s%40cret",
      "/tenet",
      "?sslmode=disable"
    ])
  })

  it("a host without a port takes the URL's port parameter, else 5432; target_session_attrs is read-write or nothing", () => {
    expect(targetOf("postgres://u@a,b:6000/db?port=7000").hosts).toEqual([
      { host: "a", port: 7000 },
      { host: "b", port: 6000 }
    ])
    expect(targetOf("postgresql://u@a/db?target_session_attrs=read-write")).toEqual({
      hosts: [{ host: "a", port: 5432 }],
      url: "postgresql://u@a:5432/db"
    })
    expect(targetOf("postgres:///db").hosts).toEqual([])
    expect(PgPrimary.parseUrl("postgres://u@a,b/db?target_session_attrs=standby")).toEqual({
      invalid: expect.stringContaining("target_session_attrs=standby: Tenet writes")
    })
    expect(PgPrimary.parseUrl("postgres://u@a:99999/db")).toEqual({ invalid: `host "a:99999" has no valid port` })
    expect(PgPrimary.parseUrl("mysql://u@a/db")).toEqual({ invalid: "not a postgres:// or postgresql:// URL" })
  })
})

describe("PgPrimary.makeLocator", () => {
  it.effect.prop("the primary is the first host, in the URL's order, that accepts writes", [
    fc.array(fc.constantFrom("writable", "standby", "down"), { minLength: 2, maxLength: 5 })
  ], ([states]) =>
    Effect.promise(async () => {
      const hosts = states.map((_, i) => ({ host: `db-${i}`, port: 5432 }))
      const locator = PgPrimary.makeLocator(hosts, (h) => {
        const state = states[hosts.indexOf(h)]
        return state === "down" ? Promise.reject(new Error("ECONNREFUSED")) : Promise.resolve(state === "writable")
      })
      const first = states.indexOf("writable")
      if (first < 0) {
        await expect(locator.primary()).rejects.toThrow(/^no host accepts writes: db-0:5432 /)
      } else {
        expect(await locator.primary()).toBe(hosts[first])
      }
    }))

  it.effect("a found primary is asked for no more until it is lost; waiting connections share one search", () =>
    Effect.promise(async () => {
      const hosts = [{ host: "a", port: 1 }, { host: "b", port: 2 }]
      let writable = hosts[0]!
      let searches = 0
      const locator = PgPrimary.makeLocator(hosts, (h) => {
        searches++
        return Promise.resolve(h === writable)
      })
      const [one, two] = await Promise.all([locator.primary(), locator.primary()])
      expect([one, two, searches]).toEqual([hosts[0], hosts[0], 2])
      writable = hosts[1]!
      expect(await locator.primary()).toBe(hosts[0])
      locator.lost(hosts[1]!)
      expect(await locator.primary()).toBe(hosts[0])
      locator.lost(hosts[0]!)
      expect(await locator.primary()).toBe(hosts[1])
      expect(searches).toBe(4)
    }))
})
