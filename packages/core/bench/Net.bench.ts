/** Validators run on every request that carries an address, block or name. */
import { Net } from "@tenet/core"
import { Schema } from "effect"
import { bench, describe } from "vitest"

const decodeCidr = Schema.decodeUnknownSync(Net.Ipv4NetworkNormalized)
const decodeLabel = Schema.decodeUnknownSync(Net.DnsLabel)
const decodeDomain = Schema.decodeUnknownSync(Net.DomainName)
const a = Net.cidrOf("10.0.0.0/16")
const b = Net.cidrOf("10.0.128.0/17")

describe("network validators", () => {
  bench("decode a CIDR and clear its host bits", () => void decodeCidr("192.168.37.201/20"))
  bench("decode a DNS label", () => void decodeLabel("web-frontend-01"))
  bench("decode a domain name", () => void decodeDomain("Shop.Apps.Example.COM"))
  bench("overlap of two blocks", () => void Net.overlaps(a, b))
})
