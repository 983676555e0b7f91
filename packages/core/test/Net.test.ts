import { describe, expect, it } from "@effect/vitest"
import { Net } from "@tenet/core"
import { Either, FastCheck as fc, Option, Schema } from "effect"

const uint32 = fc.integer({ min: 0, max: 0xffffffff })
const prefix = fc.integer({ min: 0, max: 32 })
const cidr = fc.record({ address: uint32, prefix })

/** The block as a closed interval of addresses, computed without bit tricks. */
const interval = (c: Net.Cidr) => {
  const size = 2 ** (32 - c.prefix)
  const start = Math.floor(c.address / size) * size
  return [start, start + size - 1] as const
}

const label = fc.stringMatching(/^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/)
const decodes = <A, I>(schema: Schema.Schema<A, I>) => (value: unknown) =>
  Either.isRight(Schema.decodeUnknownEither(schema)(value))

describe("IPv4 addresses", () => {
  it.prop("format and parse are inverse over every address", [uint32], ([n]) => {
    expect(Net.parseIpv4(Net.formatIpv4(n))).toEqual(Option.some(n))
  })

  it.prop("anything that is not four plain decimal octets is refused", [fc.string()], ([text]) => {
    const valid = /^(0|[1-9]\d{0,2})(\.(0|[1-9]\d{0,2})){3}$/.test(text) &&
      text.split(".").every((o) => Number(o) <= 255)
    expect(Option.isSome(Net.parseIpv4(text))).toBe(valid)
  })

  it("refuses IPv6, leading zeros, out-of-range octets and stray text", () => {
    for (
      const text of [
        "::1",
        "2001:db8::1",
        "::ffff:10.0.0.1",
        "010.0.0.1",
        "256.0.0.1",
        "1.2.3",
        "1.2.3.4.5",
        " 1.2.3.4",
        "1.2.3.4/32",
        ""
      ]
    ) {
      expect(Option.isNone(Net.parseIpv4(text)), text).toBe(true)
    }
  })
})

describe("CIDR blocks", () => {
  it.prop("format and parse are inverse", [cidr], ([c]) => {
    expect(Net.parseCidr(Net.formatCidr(c))).toEqual(Option.some(c))
  })

  it.prop("network and broadcast bound exactly the addresses the block contains", [cidr, uint32], ([c, a]) => {
    const [start, end] = interval(c)
    expect(Net.networkOf(c)).toBe(start)
    expect(Net.broadcastOf(c)).toBe(end)
    expect(Net.contains(c, a)).toBe(a >= start && a <= end)
  })

  it.prop("normalizing clears host bits, is idempotent and keeps the block", [cidr], ([c]) => {
    const n = Net.normalizeCidr(c)
    expect(Net.hasHostBits(n)).toBe(false)
    expect(Net.normalizeCidr(n)).toEqual(n)
    expect(interval(n)).toEqual(interval(c))
  })

  it.prop("overlap is symmetric and equals interval intersection", [cidr, cidr], ([a, b]) => {
    const [s1, e1] = interval(a)
    const [s2, e2] = interval(b)
    expect(Net.overlaps(a, b)).toBe(s1 <= e2 && s2 <= e1)
    expect(Net.overlaps(b, a)).toBe(Net.overlaps(a, b))
  })

  it("the schemas refuse IPv6 and malformed blocks; Ipv4Network refuses host bits; the normalized one clears them", () => {
    for (const text of ["2001:db8::/32", "10.0.0.0", "10.0.0.0/33", "10.0.0.0/08", "10.0.0/8", "10.0.0.0/-1"]) {
      expect(decodes(Net.Ipv4Network)(text), text).toBe(false)
      expect(decodes(Net.Ipv4NetworkNormalized)(text), text).toBe(false)
    }
    expect(decodes(Net.Ipv4Network)("10.0.0.1/24")).toBe(false)
    expect(Schema.decodeUnknownSync(Net.Ipv4NetworkNormalized)("10.0.0.77/24")).toBe("10.0.0.0/24")
    expect(Schema.decodeUnknownSync(Net.Ipv4NetworkNormalized)("0.0.0.0/0")).toBe("0.0.0.0/0")
  })

  it.prop("a gateway is accepted exactly when it is a host address inside the block", [cidr, uint32], ([c, a]) => {
    const block = Net.formatCidr(Net.normalizeCidr(c))
    const [start, end] = interval(c)
    const usable = a > start && a < end
    expect(Either.isRight(Net.checkGateway(block, Net.formatIpv4(a)))).toBe(usable)
  })
})

describe("DNS labels and domain names", () => {
  it.prop("every RFC 1123 label is accepted", [label], ([l]) => {
    expect(decodes(Net.DnsLabel)(l)).toBe(true)
  })

  it.prop(
    "labels with upper case, edge hyphens, other characters or over 63 characters are refused",
    [fc.string()],
    ([s]) => {
      const valid = s.length >= 1 && s.length <= 63 && /^[a-z0-9]([a-z0-9-]*[a-z0-9])?$/.test(s)
      expect(decodes(Net.DnsLabel)(s)).toBe(valid)
    }
  )

  it.prop("domains of valid labels are accepted and folded to lower case", [
    fc.array(label, { minLength: 2, maxLength: 4 }).filter((ls) => !/^\d+$/.test(ls[ls.length - 1]!))
  ], ([labels]) => {
    const domain = labels.join(".")
    expect(Schema.decodeUnknownSync(Net.DomainName)(domain.toUpperCase())).toBe(domain)
  })

  it("refuses single labels, numeric TLDs, empty labels, bad characters and over-long names", () => {
    for (
      const d of [
        "localhost",
        "10.0.0.1",
        "a..com",
        ".a.com",
        "a.com.",
        "a_b.com",
        "-a.com",
        "a-.com",
        `${"a".repeat(64)}.com`,
        `${"a.".repeat(127)}com`
      ]
    ) {
      expect(decodes(Net.DomainName)(d), d).toBe(false)
    }
  })
})

describe("address ranges as blocks", () => {
  it.prop("cidrsOfRange covers exactly the range with aligned blocks, no two of which could be one", [
    uint32,
    uint32
  ], ([a, b]) => {
    const [first, last] = a <= b ? [a, b] : [b, a]
    const blocks = Net.cidrsOfRange(first, last)
    let next = first
    for (const block of blocks) {
      const [start, end] = interval(block)
      expect(start).toBe(block.address)
      expect(start).toBe(next)
      next = end + 1
    }
    expect(next).toBe(last + 1)
    blocks.forEach((block, i) => {
      const following = blocks[i + 1]
      if (following === undefined || following.prefix !== block.prefix || block.prefix === 0) return
      // Two equal neighbours merge only when the first starts a block twice their size.
      expect(block.address % 2 ** (33 - block.prefix)).not.toBe(0)
    })
  })
})

describe("describeRanges", () => {
  const range = (cidr: string) => [Net.networkOf(Net.cidrOf(cidr)), Net.broadcastOf(Net.cidrOf(cidr))] as const

  it("a block minus its exceptions, where that is shorter than its blocks", () => {
    const everything = [0, 0xffffffff] as const
    const taken = [range("10.0.0.0/16"), range("100.64.0.0/16")]
    const free = [
      [everything[0], taken[0]![0] - 1],
      [taken[0]![1] + 1, taken[1]![0] - 1],
      [taken[1]![1] + 1, everything[1]]
    ] as const
    expect(Net.describeRanges(free)).toBe("0.0.0.0/0 except 10.0.0.0/16, 100.64.0.0/16")
    expect(Net.describeRanges([range("10.0.1.0/24"), range("10.0.3.0/24")])).toBe("10.0.1.0/24, 10.0.3.0/24")
    expect(Net.describeRanges([range("10.0.0.0/8")])).toBe("10.0.0.0/8")
    expect(Net.describeRanges([])).toBe("no address")
  })

  it.prop("says exactly the set it is given", [
    fc.uniqueArray(fc.integer({ min: 0, max: 0xffff }), { minLength: 2, maxLength: 12 })
  ], ([cuts]) => {
    const sorted = [...cuts].sort((a, b) => a - b).map((n) => n * 65536)
    const ranges: Array<readonly [number, number]> = []
    for (let i = 0; i + 1 < sorted.length; i += 2) ranges.push([sorted[i]!, sorted[i + 1]! - 1])
    const text = Net.describeRanges(ranges)
    const [included, excluded = ""] = text.split(" except ")
    const inside = (ip: number, blocks: string) =>
      blocks !== "" && blocks.split(", ").some((b) => Net.contains(Net.cidrOf(b), ip))
    for (const probe of [...sorted, ...sorted.map((n) => n - 1), ...sorted.map((n) => n + 1)]) {
      if (probe < 0 || probe > 0xffffffff) continue
      const expected = ranges.some(([a, b]) => a <= probe && probe <= b)
      expect(inside(probe, included!) && !inside(probe, excluded), `${probe} in ${text}`).toBe(expected)
    }
  })
})
