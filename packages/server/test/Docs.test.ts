/**
 * The docs cannot drift. Every shell command the README and the examples' READMEs give is run,
 * here or by the test named beside it in `COMMANDS` (a command the docs gain without an entry
 * fails this test until it says how it is checked); and the README's success codes are the
 * contract's.
 */
import { describe, expect, it } from "@effect/vitest"
import { Api } from "@tenet/core"
import { existsSync, mkdtempSync, readdirSync, readFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { freePort, until } from "./Loopback.js"
import { spawnProcess } from "./ServerProcess.js"

const repo = join(import.meta.dirname, "../../..")
const read = (file: string) => readFileSync(join(repo, file), "utf8")

/** The version the docs' image tags name: the server's, which `pnpm release` sets in them. */
const VERSION = (JSON.parse(read("packages/server/package.json")) as { version: string }).version

const DOCS = [
  "README.md",
  ...readdirSync(join(repo, "examples")).map((name) => `examples/${name}/README.md`).filter((f) =>
    existsSync(join(repo, f))
  )
]

/** The commands of a document's shell blocks, comments dropped and continued lines joined. */
const commandsOf = (text: string): Array<string> => {
  // The curl walkthrough is a script of its own, run whole by Walkthrough.test.ts.
  const rest = text.replace(/## Try it with curl[\s\S]*?(?=\n## )/, "")
  return [...rest.matchAll(/```(?:sh|bash)\n([\s\S]*?)```/g)].flatMap((block) =>
    block[1]!.replace(/\\\n\s*/g, "").split("\n").map((line) => line.replace(/\s+#.*$/, "").trim()).filter((line) =>
      line !== "" && !line.startsWith("#")
    )
  )
}

type Check =
  | { readonly run: "here" }
  | { readonly covered: string; readonly mentions: string }
  | { readonly notHere: string }

/**
 * How each command is checked: run by this file, covered by another test (the file, and what
 * in it shows the command is what it runs), or not runnable on a machine like CI's (why).
 */
const COMMANDS: Record<string, Check> = {
  "pnpm install && pnpm start": { run: "here" },
  "npm i @tenet/core @tenet/adapters-memory effect@^3.22.4 @effect/platform@^0.97.2": {
    covered: "test/consumer/Installed.ts",
    mentions: "embedder: \"npm i @tenet/core @tenet/adapters-memory effect@^3.22.4 @effect/platform@^0.97.2\""
  },
  "npm i @tenet/cli": { covered: "test/consumer/Installed.ts", mentions: "cli: \"npm i @tenet/cli\"" },
  "npx tenet login --url https://tenet.example.com --tenant acme": {
    covered: "test/consumer/Consumer.test.ts",
    mentions: "\"login\", \"--url\""
  },
  "npx tenet-server": { covered: "test/consumer/Installed.ts", mentions: "node_modules/.bin/tenet-server" },
  "pnpm install && pnpm test": { covered: ".ci/run", mentions: "pnpm test --reporter" },
  "npm i ../tenet-packs/tenet-core-*.tgz ../tenet-packs/tenet-client-*.tgz": {
    covered: "test/consumer/Installed.ts",
    mentions: "tarballsFor(packed, args"
  },
  "npm i @tenet/server": { covered: "test/consumer/Installed.ts", mentions: "\"npm i @tenet/server\"" },
  "TENET_STORE=postgres TENET_DATABASE_URL=postgres://tenet@db:5432/tenet TENET_ENCRYPTION_KEY=\"$(cat /etc/tenet/key)\" TENET_HOST=0.0.0.0 npx tenet-server":
    { covered: "packages/server/test/ReadConsistency.test.ts", mentions: "TENET_STORE: \"postgres\"" },
  [`docker build -t tenet/tenet-server:${VERSION} .`]: {
    notHere: "no Docker engine runs on CI's machines; Deployment.test.ts checks the Dockerfile's shape"
  },
  [`docker run -p 8080:8080 -v tenet-data:/var/lib/tenet tenet/tenet-server:${VERSION}`]: {
    notHere: "no Docker engine runs on CI's machines"
  },
  "pnpm build": { covered: ".ci/run", mentions: "pnpm build" },
  "pnpm contract:check": { covered: ".ci/run", mentions: "pnpm contract:check" },
  "pnpm contract:update": { covered: "package.json", mentions: "\"contract:update\": \"node" },
  "pnpm changeset": { notHere: "it asks, interactively, which packages changed and how" },
  "pnpm release": { notHere: "it commits and tags the repository; the first release (0.2.0) was cut with it" },
  "pnpm typecheck": { covered: ".ci/run", mentions: "pnpm typecheck" },
  "pnpm lint": { covered: ".ci/run", mentions: "pnpm lint" },
  "pnpm test": { covered: ".ci/run", mentions: "pnpm test --reporter" },
  "pnpm test:quick": { covered: "package.json", mentions: "\"test:quick\": \"TENET_TEST_QUICK=1 vitest run --project" },
  "pnpm bench": { notHere: "minutes of load on every store; run for every change to a request path (BENCHMARKS.md)" },
  "bash .ci/run": { notHere: "it is CI" },
  "pnpm --filter @tenet/example-embedded-sdk start": { run: "here" },
  "pnpm --filter @tenet/example-quickstart start": { run: "here" },
  "TENET_URL=http://127.0.0.1:8080 TENET_ADMIN_PASSWORD=... pnpm --filter @tenet/example-quickstart start": {
    run: "here"
  },
  "pnpm --filter @tenet/example-tenant-integration-test test": { run: "here" },
  "npm i -D @tenet/server @tenet/adapters-memory @tenet/client effect@^3.22.4 @effect/platform@^0.97.2 @effect/vitest@^0.30.0 vitest@^3.2.4":
    { covered: "test/consumer/Installed.ts", mentions: "npm i -D @tenet/server" },
  "pnpm --filter @tenet/example-topology start": { run: "here" },
  "pnpm --filter @tenet/example-topology start my.json": { run: "here" },
  "TENET_URL=http://127.0.0.1:8080 TENET_ADMIN_PASSWORD=... pnpm --filter @tenet/example-topology start": {
    run: "here"
  },
  "pnpm --filter @tenet/example-watch-mirror start": { run: "here" },
  "TENET_URL=http://127.0.0.1:8080 TENET_TENANT=acme TENET_PASSWORD=... pnpm --filter @tenet/example-watch-mirror start":
    { run: "here" }
}

const documented = [...new Set(DOCS.flatMap((file) => commandsOf(read(file))))]

/** A command as the docs give it, run in the checkout with a placeholder made real; its output and exit code. */
const runCommand = async (
  command: string,
  options: { readonly env?: Record<string, string>; readonly ready?: string } = {}
) => {
  const child = spawnProcess("bash", ["-c", command], {
    cwd: repo,
    env: { CI: "true", NO_COLOR: "1", ...options.env },
    detached: true
  })
  if (options.ready !== undefined) {
    // A command that runs until stopped (a server, a follower): stopped once it says `ready`.
    await until(() => child.output().includes(options.ready!), `"${command}" to print ${options.ready}`, 90_000)
    process.kill(-child.child.pid!, "SIGINT")
  }
  return { code: await child.exited, output: child.output() }
}

describe("the docs", () => {
  it("every command of the README and the examples' READMEs says how it is checked", () => {
    expect(documented.filter((command) => COMMANDS[command] === undefined)).toEqual([])
    expect(Object.keys(COMMANDS).filter((command) => !documented.includes(command))).toEqual([])
    for (const [command, check] of Object.entries(COMMANDS)) {
      if ("covered" in check) expect(read(check.covered), command).toContain(check.mentions)
    }
  })

  it("the README's table of examples has every example", () => {
    const readme = read("README.md")
    const table = readme.slice(
      readme.indexOf("| Example | What it shows |"),
      readme.indexOf("\n\n", readme.indexOf("| Example |"))
    )
    const listed = [...table.matchAll(/^\| \[`examples\/([\w-]+)`\]/gm)].map((m) => m[1]).sort()
    expect(listed).toEqual(readdirSync(join(repo, "examples")).sort())
  })

  it("the README's success codes are the contract's", () => {
    const readme = read("README.md")
    const bullet = readme.slice(
      readme.indexOf("- **Success codes**"),
      readme.indexOf("\n- **", readme.indexOf("- **Success codes**") + 1)
    )
    const listed = (status: number) =>
      [...(new RegExp(`${status} for ([^;]*);`).exec(bullet)?.[1] ?? "").matchAll(/`(\w+) ([^`]+)`/g)]
        .map((m) => `${m[1]} ${m[2]!.replace(/\{(\w+)\}/g, ":$1")}`).sort()
    const contract = (status: number) =>
      Api.endpoints.filter((e) => e.successes.includes(status)).map((e) => `${e.method} ${e.path}`).sort()
    expect(listed(201)).toEqual(contract(201))
    expect(listed(204)).toEqual(contract(204))
    expect(Api.endpoints.every((e) => e.successes.every((s) => [200, 201, 204].includes(s)))).toBe(true)
  })

  it("the examples' commands, in-process, run as their READMEs say", async () => {
    const commands = [
      ["pnpm --filter @tenet/example-embedded-sdk start", "postgres from 10.60.3.4: allowed"],
      ["pnpm --filter @tenet/example-quickstart start", "tcp/443 from 198.51.100.7: allowed"],
      ["pnpm --filter @tenet/example-tenant-integration-test test", "3 passed"],
      ["pnpm --filter @tenet/example-topology start", "would create"],
      // The README's `my.json` is any topology file (relative to where pnpm runs): the example's own.
      ["pnpm --filter @tenet/example-topology start my.json", "would create"],
      ["pnpm --filter @tenet/example-watch-mirror start", "mirror: staging"]
    ] as const
    for (const [command, says] of commands) {
      const { code, output } = await runCommand(command.replace("my.json", "examples/topology/topology.json"))
      expect([code, output], command).toEqual([0, expect.stringContaining(says)])
    }
  }, 300_000)

  it("`pnpm start` serves on its embedded default; the examples run against it as their READMEs say", async () => {
    const port = await freePort()
    const data = mkdtempSync(join(tmpdir(), "tenet-docs-"))
    const url = `http://127.0.0.1:${port}`
    const server = spawnProcess("bash", ["-c", "pnpm start"], {
      cwd: repo,
      env: { CI: "true", TENET_PORT: String(port), TENET_DATA_DIR: data, TENET_ADMIN_PASSWORD: "docs-admin-password" },
      detached: true
    })
    try {
      await until(() => server.output().includes("listening on"), "pnpm start to listen", 120_000)
      expect((await fetch(`${url}/healthz`)).status).toBe(200)
      const against = (command: string) =>
        command.replace("http://127.0.0.1:8080", url).replace(
          "TENET_ADMIN_PASSWORD=...",
          "TENET_ADMIN_PASSWORD=docs-admin-password"
        )
          .replace("TENET_PASSWORD=...", "TENET_PASSWORD=acme-password")
      const quickstart = await runCommand(
        against(
          "TENET_URL=http://127.0.0.1:8080 TENET_ADMIN_PASSWORD=... pnpm --filter @tenet/example-quickstart start"
        )
      )
      expect([quickstart.code, quickstart.output]).toEqual([0, expect.stringContaining("tcp/443 from 198.51.100.7")])
      const topology = await runCommand(
        against("TENET_URL=http://127.0.0.1:8080 TENET_ADMIN_PASSWORD=... pnpm --filter @tenet/example-topology start")
      )
      expect([topology.code, topology.output]).toEqual([0, expect.stringContaining("VPC shop")])
      // The follower watches a tenant named acme until interrupted.
      const admin = await fetch(`${url}/admin/login`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ username: "admin", password: "docs-admin-password" })
      }).then((r) => r.json() as Promise<{ api_token: string }>)
      await fetch(`${url}/tenants`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-admin-token": admin.api_token },
        body: JSON.stringify({ name: "acme", password: "acme-password" })
      })
      const mirror = await runCommand(
        against(
          "TENET_URL=http://127.0.0.1:8080 TENET_TENANT=acme TENET_PASSWORD=... pnpm --filter @tenet/example-watch-mirror start"
        ),
        { ready: "watching from revision" }
      )
      expect(mirror.output).toContain("listed 0 VPCs")
    } finally {
      process.kill(-server.child.pid!, "SIGINT")
    }
    expect(await server.exited).toBe(0)
  }, 300_000)
})
