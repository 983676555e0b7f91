/**
 * `tenet` as a user runs it: a process of its own (from its sources) against a real server,
 * through a rules-as-code round: login, export, plan (exit 0, then 2), apply, guardrails,
 * explain, reach, `--output json`, and the refusals (exit 1) with the API's words.
 *
 * The sources are bundled once for the file, as the console's are: a process then starts in
 * about 0.4 s, where compiling them on each start (tsx) took 2 s, and a loaded machine's round
 * of 25 commands ran past five minutes. The installed command has its own test (test/consumer).
 */
import { FetchHttpClient, HttpServer } from "@effect/platform"
import { expect, layer } from "@effect/vitest"
import { TenetClient } from "@tenet/client"
import { TestServer } from "@tenet/server"
import { Effect } from "effect"
import { build } from "esbuild"
import { execFile } from "node:child_process"
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { afterAll } from "vitest"
import { Cli } from "../src/index.js"

const packageDir = fileURLToPath(new URL("..", import.meta.url))
const home = mkdtempSync(join(tmpdir(), "tenet-cli-"))
// Beside the package's own files, as dist/bin.js is: the CLI reads its version from ../package.json.
const bin = join(packageDir, "build", `tenet-${process.pid}.mjs`)
await build({
  entryPoints: [fileURLToPath(new URL("../src/bin.ts", import.meta.url))],
  outfile: bin,
  bundle: true,
  platform: "node",
  format: "esm",
  target: "node20",
  conditions: ["@tenet/source"],
  logLevel: "warning",
  // CommonJS dependencies inside an ES module bundle still call require.
  banner: {
    js: "import { createRequire as requireFrom } from \"node:module\"; const require = requireFrom(import.meta.url);"
  }
})
afterAll(() => rmSync(bin, { force: true }))

/** `tenet args...`: its exit code and what it printed. */
const tenet = (args: ReadonlyArray<string>, env: Record<string, string> = {}) =>
  Effect.async<{ code: number; stdout: string; stderr: string }>((resume) => {
    execFile(
      process.execPath,
      [bin, ...args],
      { env: { ...process.env, XDG_CONFIG_HOME: home, TENET_URL: "", TENET_TOKEN: "", ...env }, cwd: packageDir },
      (error, stdout, stderr) =>
        resume(Effect.succeed({ code: error === null ? 0 : Number(error.code ?? 1), stdout, stderr }))
    )
  })

const baseUrl = Effect.map(
  HttpServer.HttpServer,
  (server) => server.address._tag === "TcpAddress" ? `http://127.0.0.1:${server.address.port}` : ""
)

const PASSWORD = "cli tenant password"

layer(TestServer.layer(), { excludeTestServices: true })("the tenet command", (it) => {
  it.effect("a rules-as-code round: export, plan, apply, guardrails, explain, reach", () =>
    Effect.gen(function*() {
      const url = yield* baseUrl
      const admin = yield* TenetClient.loginAdmin({
        baseUrl: url,
        username: TestServer.ADMIN_USERNAME,
        password: TestServer.ADMIN_PASSWORD
      }).pipe(Effect.provide(FetchHttpClient.layer))
      yield* admin.tenants.create({ payload: { name: "cli", password: PASSWORD, description: null } })
      // The platform's uplink: the internet reaches what is published.
      yield* admin.providerConfig.put({
        payload: {
          external_subnet_cidr: "203.0.113.0/24",
          external_subnet_gateway: "203.0.113.1",
          peering_subnet_cidr: "100.64.0.0/16"
        }
      })

      const login = yield* tenet(["login", "--url", url, "--tenant", "cli"], { TENET_PASSWORD: PASSWORD })
      expect(login.code, login.stderr).toBe(0)
      const kept = join(home, "tenet", "credentials.json")
      expect(statSync(kept).mode & 0o777).toBe(0o600)
      const session = JSON.parse(readFileSync(kept, "utf8")) as { token: string; tenant_id: string }

      const api = yield* TenetClient.make({ baseUrl: url, tenantToken: session.token, tenantId: session.tenant_id })
        .pipe(Effect.provide(FetchHttpClient.layer))
      const vpc = yield* api.vpcs.create({ payload: { name: "prod", enable_internet: true } })
      const web = yield* api.subnets.create({
        payload: { vpc_id: vpc.id, name: "web", cidr: "10.0.1.0/24", gateway_ip: "10.0.1.1" }
      })
      yield* api.pods.create({
        payload: {
          vpc_id: vpc.id,
          subnet_id: web.id,
          name: "shop",
          container_image: "shop:1",
          service_port: 443,
          external_access: true,
          external_inbound: true
        }
      })

      const exported = yield* tenet(["rules", "export", "--vpc", "prod"])
      expect(exported.code, exported.stderr).toBe(0)
      expect(exported.stdout).toContain("name: Allow internal traffic")
      const file = join(home, "rules.yaml")
      writeFileSync(file, exported.stdout)
      const unchanged = yield* tenet(["rules", "plan", "-f", file])
      expect([unchanged.code, unchanged.stdout]).toEqual([0, expect.stringContaining("No changes")])

      writeFileSync(
        file,
        exported.stdout + [
          "  - name: https",
          "    direction: ingress",
          "    action: allow",
          "    priority: 100",
          "    protocol: tcp",
          "    ports: \"443\"",
          "    remote_type: cidr",
          "    remote_cidr: 0.0.0.0/0",
          ""
        ].join("\n")
      )
      const planned = yield* tenet(["rules", "plan", "-f", file])
      expect(planned.code, planned.stderr).toBe(2)
      expect(planned.stdout).toContain("+ create 'https': allow ingress tcp 443 from 0.0.0.0/0, priority 100")
      expect(planned.stdout).toContain("opens   ingress tcp 443")
      // What the rule opens to the internet reaches nothing published: the plan says so.
      expect(planned.stdout).toMatch(
        /opens {3}ingress tcp 443 from 0\.0\.0\.0\/0 except .* \(no path after: nothing published/
      )
      const etag = /rules at ("[0-9a-f]+")/.exec(planned.stdout)![1]!
      const asJson = yield* tenet(["rules", "plan", "-f", file, "--output", "json"])
      expect(JSON.parse(asJson.stdout)).toMatchObject({ dry_run: true, etag })

      // The ETag as a shell leaves it when pasted without quotes: the same tag.
      const applied = yield* tenet(["rules", "apply", "-f", file, "--if-match", etag.slice(1, -1)])
      expect(applied.code, applied.stderr).toBe(0)
      expect(applied.stdout).toContain("Applied: 1 created, 0 updated, 0 deleted; in force.")
      expect((yield* api.securityRules.list({ urlParams: { vpc_id: vpc.id } })).rules.map((r) => r.name)).toEqual([
        "https",
        "Allow internal traffic"
      ])
      const stale = yield* tenet(["rules", "apply", "-f", file, "--if-match", etag.slice(1, -1)])
      expect(stale.code).toBe(1)
      expect(stale.stderr).toContain(`changed since ${etag}: they are now at "`)
      expect(stale.stderr).not.toContain(`now at ${etag}`)
      // The VPC by its name, as plans name it, not by the id the API's words give.
      expect(stale.stderr).toContain("the rules of VPC prod changed since")
      expect(stale.stderr).not.toContain(vpc.id)
      expect((yield* tenet(["rules", "plan", "-f", file])).code).toBe(0)

      // The API's CSV export, as a spreadsheet keeps it, is a rules file too: it plans as the
      // rules it lists, and a name a spreadsheet would run stays text on the way back.
      const csvFile = join(home, "rules.csv")
      const csv = yield* Effect.promise(() =>
        fetch(`${url}/security-rules?vpc_id=${vpc.id}`, {
          headers: { "x-auth-token": session.token, accept: "text/csv" }
        }).then((r) => r.text())
      )
      writeFileSync(csvFile, csv)
      const noVpc = yield* tenet(["rules", "plan", "-f", csvFile])
      expect([noVpc.code, noVpc.stderr]).toEqual([1, expect.stringContaining("names no VPC: pass --vpc")])
      expect((yield* tenet(["rules", "plan", "-f", csvFile, "--vpc", "prod"])).code).toBe(0)
      writeFileSync(csvFile, csv.replace(",https,", ",\"'=SUM(1)\","))
      const renamed = yield* tenet(["rules", "plan", "-f", csvFile, "--vpc", "prod"])
      expect(renamed.code, renamed.stderr).toBe(2)
      expect(renamed.stdout).toContain("~ update '=SUM(1)': name https -> =SUM(1)")

      // A guardrail the file would break: plan and check exit 1 and name it.
      yield* api.guardrails.create({
        path: { vpc_id: vpc.id },
        payload: {
          name: "no ssh from partners",
          require: "deny",
          direction: "ingress",
          protocol: "tcp",
          ports: "22",
          remote_cidr: "198.51.100.0/24"
        }
      })
      writeFileSync(file, readFileSync(file, "utf8").replace("ports: \"443\"", "ports: 22,443"))
      const breaking = yield* tenet(["rules", "plan", "-f", file])
      expect(breaking.code).toBe(1)
      expect(breaking.stdout).toContain("'no ssh from partners' in VPC prod: tcp 22 from 198.51.100.")
      const check = yield* tenet(["guardrails", "check", "--vpc", "prod", "-f", file])
      expect(check.code).toBe(1)
      const listed = yield* tenet(["guardrails", "check", "--vpc", "prod"])
      expect([listed.code, listed.stdout]).toEqual([
        0,
        expect.stringContaining("'no ssh from partners': deny ingress tcp 22")
      ])
      const refused = yield* tenet(["rules", "apply", "-f", file])
      expect(refused.code).toBe(1)
      expect(refused.stderr).toContain("would break guardrail 'no ssh from partners'")
      expect(refused.stderr).toContain("'no ssh from partners' in VPC prod: tcp 22 from 198.51.100.")
      expect(refused.stderr).not.toContain(vpc.id)

      const explained = yield* tenet([
        "explain",
        "--vpc",
        "prod",
        "--from",
        "internet",
        "--to",
        "web",
        "--protocol",
        "tcp",
        "--port",
        "443"
      ])
      expect(explained.code, explained.stderr).toBe(0)
      // The internet reaches the published pod; the subnet's other addresses are never published.
      expect(explained.stdout).toContain("tcp 443 from the internet to subnet web 10.0.1.0/24: PARTIAL")
      expect(explained.stdout).toContain(
        "  path     some flows have no route: nothing published: the internet reaches only published pods"
      )
      expect(explained.stdout).toContain("ingress  VPC prod: allow by 'https'")
      const published = yield* tenet([
        "explain",
        "--vpc",
        "prod",
        "--from",
        "internet",
        "--to",
        "shop",
        "--protocol",
        "tcp",
        "--port",
        "443"
      ])
      expect(published.stdout).toContain("tcp 443 from the internet to pod shop: ALLOWED")
      expect(published.stdout).toContain("  path     a route carries every flow")
      const reach = yield* tenet(["reach", "--vpc", "prod"])
      expect(reach.stdout).toMatch(/internet\s+subnet web\s+some 443\s+-/)

      writeFileSync(file, readFileSync(file, "utf8").replace("ports: 22,443", "port: 443"))
      const bad = yield* tenet(["rules", "plan", "-f", file])
      expect(bad.code).toBe(1)
      expect(bad.stderr).toContain("rules[1].port: unknown field \"port\"; did you mean \"ports\"?")
      // The example's rules file plans as a change of this VPC.
      const example = fileURLToPath(new URL("../../../examples/rules-as-code/rules/prod.yaml", import.meta.url))
      const exampled = yield* tenet(["rules", "plan", "-f", example])
      expect([exampled.code, exampled.stdout]).toEqual([2, expect.stringContaining("+ create 'ssh from the office'")])
      const unread = yield* tenet(["rules", "plan"])
      expect([unread.code, unread.stdout + unread.stderr]).toEqual([1, expect.stringContaining("--file")])
      const unknown = yield* tenet(["reach", "--vpc", "staging"])
      expect([unknown.code, unknown.stderr]).toEqual([1, "tenet: you have no VPC named staging\n"])
      const anonymous = yield* tenet(["reach", "--vpc", "prod"], { XDG_CONFIG_HOME: join(home, "nowhere") })
      expect([anonymous.code, anonymous.stderr]).toEqual([1, expect.stringContaining("not logged in")])

      // An enum option's refusal names the option and what it got.
      const shouting = yield* tenet([
        "explain",
        "--vpc",
        "prod",
        "--from",
        "internet",
        "--to",
        "web",
        "--protocol",
        "TCP"
      ])
      expect(shouting.code).toBe(1)
      expect(shouting.stderr).toContain("--protocol: must be one of tcp, udp, icmp; got \"TCP\"; did you mean \"tcp\"?")

      // Names are looked up across the tenant's VPCs; one that names several things says so.
      const staging = yield* api.vpcs.create({ payload: { name: "staging", enable_internet: false } })
      const stagingWeb = yield* api.subnets.create({
        payload: { vpc_id: staging.id, name: "stage-web", cidr: "10.5.0.0/24", gateway_ip: "10.5.0.1" }
      })
      yield* api.pods.create({
        payload: { vpc_id: staging.id, subnet_id: stagingWeb.id, name: "api", container_image: "api:1" }
      })
      const across = yield* tenet([
        "explain",
        "--vpc",
        "prod",
        "--from",
        "api",
        "--to",
        "web",
        "--protocol",
        "tcp",
        "--port",
        "443"
      ])
      expect(across.code, across.stderr).toBe(0)
      // The pod at an address it can have: a host of its subnet, never the subnet's network address.
      expect(across.stdout).toMatch(/ 10\.5\.0\.\d+ \(pod api\) -> 10\.0\.1\.\d+ \(subnet web 10\.0\.1\.0\/24\)/)
      expect(across.stdout).not.toMatch(/ 10\.5\.0\.0 | 10\.0\.1\.0 /)
      // The same name in two VPCs: this VPC's when it has one, else ambiguous, named as such.
      yield* api.subnets.create({
        payload: { vpc_id: vpc.id, name: "stage-web", cidr: "10.0.9.0/24", gateway_ip: "10.0.9.1" }
      })
      const here = yield* tenet([
        "explain",
        "--vpc",
        "staging",
        "--from",
        "stage-web",
        "--to",
        "internet",
        "--protocol",
        "icmp"
      ])
      expect(here.code, here.stderr).toBe(0)
      expect(here.stdout).toContain("subnet stage-web")
      const other = yield* api.vpcs.create({ payload: { name: "other", enable_internet: false } })
      yield* api.subnets.create({
        payload: { vpc_id: other.id, name: "db", cidr: "10.6.0.0/24", gateway_ip: "10.6.0.1" }
      })
      const ambiguous = yield* tenet([
        "explain",
        "--vpc",
        "other",
        "--from",
        "db",
        "--to",
        "stage-web",
        "--protocol",
        "icmp"
      ])
      expect([ambiguous.code, ambiguous.stderr]).toEqual([
        1,
        "tenet: 'stage-web' names 2 things: subnet in VPC staging, subnet in VPC prod; give the id instead\n"
      ])

      // Help piped is plain text: no colour codes (nor with NO_COLOR, on a terminal too).
      const help = yield* tenet(["--help"])
      expect(help.stdout).toContain("USAGE")
      expect(help.stdout).not.toContain("\u001b[")
      expect(Cli.colourful(true, {})).toBe(true)
      expect(Cli.colourful(true, { NO_COLOR: "1" })).toBe(false)
      expect(Cli.colourful(false, {})).toBe(false)
      // Its version is its package's, which a release sets.
      const version = yield* tenet(["--version"])
      expect(version.stdout.trim()).toBe(JSON.parse(readFileSync(join(packageDir, "package.json"), "utf8")).version)

      // A rotated token: the session no longer works, and the refusal says what to do.
      yield* api.tenantIdentity.rotateToken({ path: { tenant_id: session.tenant_id as never } })
      const rotated = yield* tenet(["reach", "--vpc", "prod"])
      expect([rotated.code, rotated.stderr]).toEqual([1, expect.stringContaining("run `tenet login`")])
      // About thirty tenet processes, each compiled by tsx as it starts: minutes on a busy machine.
    }), 300_000)

  it.effect(
    "address sets as code: apply a new set, rules naming it by name, a set's plan per VPC, export",
    () =>
      Effect.gen(function*() {
        const url = yield* baseUrl
        const admin = yield* TenetClient.loginAdmin({
          baseUrl: url,
          username: TestServer.ADMIN_USERNAME,
          password: TestServer.ADMIN_PASSWORD
        }).pipe(Effect.provide(FetchHttpClient.layer))
        yield* admin.tenants.create({ payload: { name: "cli-sets", password: PASSWORD, description: null } })
        const own = mkdtempSync(join(tmpdir(), "tenet-cli-sets-"))
        const run = (args: ReadonlyArray<string>) => tenet(args, { XDG_CONFIG_HOME: own })
        expect(
          (yield* tenet(["login", "--url", url, "--tenant", "cli-sets"], {
            XDG_CONFIG_HOME: own,
            TENET_PASSWORD: PASSWORD
          })).code
        ).toBe(0)
        const session = JSON.parse(readFileSync(join(own, "tenet", "credentials.json"), "utf8")) as {
          token: string
          tenant_id: string
        }
        const api = yield* TenetClient.make({ baseUrl: url, tenantToken: session.token, tenantId: session.tenant_id })
          .pipe(Effect.provide(FetchHttpClient.layer))
        for (const [name, cidr] of [["prod", "10.0.1.0/24"], ["staging", "10.1.1.0/24"]] as const) {
          const vpc = yield* api.vpcs.create({ payload: { name, enable_internet: true } })
          yield* api.subnets.create({
            payload: { vpc_id: vpc.id, name: `${name}-web`, cidr, gateway_ip: cidr.replace(".0/24", ".1") }
          })
        }

        const setFile = join(own, "offices.yaml")
        writeFileSync(setFile, "set: offices\nentries:\n  - cidr: 198.51.100.0/24\n    description: Berlin\n")
        const fresh = yield* run(["sets", "plan", "-f", setFile])
        expect([fresh.code, fresh.stdout]).toEqual([2, expect.stringContaining("+ create it with 1 entries")])
        const created = yield* run(["sets", "apply", "-f", setFile])
        expect(created.code, created.stderr).toBe(0)
        expect(created.stdout).toContain("Created address set offices")

        // Each VPC's rules name the set by its name.
        for (const vpc of ["prod", "staging"]) {
          const rulesFile = join(own, `${vpc}.yaml`)
          writeFileSync(
            rulesFile,
            [
              `vpc: ${vpc}`,
              "rules:",
              "  - name: ssh from offices",
              "    direction: ingress",
              "    action: allow",
              "    priority: 100",
              "    protocol: tcp",
              "    ports: \"22\"",
              "    remote_type: address_set",
              "    remote_address_set_name: offices",
              ""
            ].join("\n")
          )
          const applied = yield* run(["rules", "apply", "-f", rulesFile])
          expect(applied.code, applied.stderr).toBe(0)
          expect(applied.stdout).toContain("+ create 'ssh from offices': allow ingress tcp 22 from set offices")
        }
        const exported = yield* run(["rules", "export", "--vpc", "prod"])
        expect(exported.stdout).toContain("remote_address_set_name: offices")
        expect(exported.stdout).not.toContain("remote_address_set_id")

        const unchanged = yield* run(["sets", "plan", "-f", setFile])
        expect([unchanged.code, unchanged.stdout]).toEqual([0, expect.stringContaining("No changes")])
        writeFileSync(setFile, readFileSync(setFile, "utf8") + "  - cidr: 203.0.113.0/24\n")
        const planned = yield* run(["sets", "plan", "-f", setFile])
        expect(planned.code, planned.stderr).toBe(2)
        expect(planned.stdout).toContain("  + 203.0.113.0/24")
        expect(planned.stdout).toContain("In VPC prod:\n  opens   ingress tcp 22 from 203.0.113.0/24")
        expect(planned.stdout).toContain("In VPC staging:\n  opens   ingress tcp 22 from 203.0.113.0/24")
        const json = JSON.parse((yield* run(["sets", "plan", "-f", setFile, "--output", "json"])).stdout)
        expect(json.vpcs).toHaveLength(2)

        // A guardrail in one VPC the edit would break: plan and apply exit 1 and name it.
        const staging = (yield* api.vpcs.list()).find((v) => v.name === "staging")!
        yield* api.guardrails.create({
          path: { vpc_id: staging.id },
          payload: {
            name: "no ssh from partners",
            require: "deny",
            direction: "ingress",
            protocol: "tcp",
            ports: "22",
            remote_cidr: "203.0.113.0/24"
          }
        })
        const breaking = yield* run(["sets", "plan", "-f", setFile])
        expect(breaking.code).toBe(1)
        expect(breaking.stdout).toContain("'no ssh from partners' in VPC staging: tcp 22 from 203.0.113.")
        const refused = yield* run(["sets", "apply", "-f", setFile])
        expect([refused.code, refused.stderr]).toEqual([
          1,
          expect.stringContaining("would break guardrail 'no ssh from partners'")
        ])
        expect(refused.stderr).toContain("'no ssh from partners' in VPC staging: tcp 22 from 203.0.113.")
        expect(refused.stderr).not.toContain(staging.id)

        writeFileSync(setFile, readFileSync(setFile, "utf8").replace("203.0.113.0/24", "192.0.2.0/24"))
        const etag = /at ("[0-9a-f]+")/.exec((yield* run(["sets", "plan", "-f", setFile])).stdout)![1]!
        const applied = yield* run(["sets", "apply", "-f", setFile, "--if-match", etag.slice(1, -1)])
        expect(applied.code, applied.stderr).toBe(0)
        expect(applied.stdout).toContain("Applied: 2 entries; 2 rule(s) in 2 VPC(s) use it; in force.")
        const stale = yield* run(["sets", "apply", "-f", setFile, "--if-match", etag.slice(1, -1)])
        expect(stale.code).toBe(1)
        const asJson = yield* run(["sets", "apply", "-f", setFile, "--output", "json"])
        expect(JSON.parse(asJson.stdout)).toMatchObject({ name: "offices", applied: true, apply_error: null })
        const exportedSet = yield* run(["sets", "export", "--set", "offices"])
        expect(exportedSet.stdout).toContain(
          "set: offices\nentries:\n  - cidr: 198.51.100.0/24\n    description: Berlin\n  - cidr: 192.0.2.0/24"
        )
        const missing = yield* run(["sets", "export", "--set", "nowhere"])
        expect([missing.code, missing.stderr]).toEqual([1, "tenet: you have no address set named nowhere\n"])
      }),
    300_000
  )
})
