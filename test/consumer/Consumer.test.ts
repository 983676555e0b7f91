/**
 * What users install is what we test: every package is packed as `pnpm publish` would pack it,
 * the tarballs are installed with plain npm into a project outside the workspace (everything
 * else from the registry), with the very install lines the READMEs give, and there:
 * (a) an embedding control plane runs a use-case over `@tenet/core` + `@tenet/adapters-memory`;
 * (b) `tenet-server` starts from the installed package on the memory and embedded stores;
 * (c) the Promise client drives it;
 * (d) a TypeScript consumer type-checks under `module: NodeNext` and `moduleResolution: bundler`
 *     with `skipLibCheck: false`;
 * (e) the tenant integration-test example, copied out of the repository, passes, and every
 *     entry point every package exports loads (inside vitest, as `@tenet/core/testing` needs).
 * (f) the `tenet` command, installed from its tarball, logs in, exports, plans and applies;
 * (g) `tenet-server` started in the background by a script that then exits keeps serving until a
 *     signal stops it.
 */
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import {
  ADMIN_PASSWORD,
  freePort,
  install,
  installLines,
  npm,
  packAll,
  type Packed,
  project,
  repo,
  run,
  startServer
} from "./Installed.js"
import { missingBuild, staleBuild } from "./Tarballs.js"

const work = mkdtempSync(join(tmpdir(), "tenet-consumer-"))

let packed: ReadonlyArray<Packed> = []

beforeAll(async () => {
  packed = await packAll(join(work, "packs"))
}, 300_000)

afterAll(() => rmSync(work, { recursive: true, force: true }))

describe("the packed packages", () => {
  it("are the seven public packages, each with its whole build and nothing stale", () => {
    expect(packed.map((p) => p.manifest.name).sort()).toEqual([
      "@tenet/adapters-k8s",
      "@tenet/adapters-memory",
      "@tenet/adapters-postgres",
      "@tenet/cli",
      "@tenet/client",
      "@tenet/core",
      "@tenet/server"
    ])
    for (const p of packed) {
      expect({ name: p.manifest.name, missing: missingBuild(p.manifest, p.files) }).toEqual({
        name: p.manifest.name,
        missing: []
      })
      expect(staleBuild(p.files)).toEqual([])
      expect(p.files.some((f) => f.startsWith("test/") || f.includes("tsbuildinfo"))).toBe(false)
    }
  })

  it("the server carries the built web console", () => {
    const server = packed.find((p) => p.manifest.name === "@tenet/server")!
    expect(server.files).toEqual(
      expect.arrayContaining(["dist/console/index.html", "dist/console/console.js", "dist/console/console.css"])
    )
  })

  it("a tarball without its build is caught", () => {
    for (const p of packed) {
      expect(missingBuild(p.manifest, p.files.filter((f) => !f.startsWith("dist/")))).toContain("dist/index.js")
    }
  })

  it("share Effect with the host: effect and @effect/* are peers, never dependencies", () => {
    for (const p of packed) {
      const bundled = Object.keys(p.manifest.dependencies ?? {}).filter((d) =>
        d === "effect" || d.startsWith("@effect/")
      )
      expect({ name: p.manifest.name, bundled }).toEqual({ name: p.manifest.name, bundled: [] })
    }
  })

  it("the docs give exactly the install lines this test runs", () => {
    const docs = [
      "README.md",
      "deploy/README.md",
      ...["packages", "examples"].flatMap((dir) =>
        readdirSync(join(repo, dir)).map((name) => `${dir}/${name}/README.md`)
      )
    ].filter((f) => existsSync(join(repo, f)))
    const lines = docs.flatMap((f) =>
      [...readFileSync(join(repo, f), "utf8").matchAll(/npm i (?:-D )?@tenet\/[^`\n]*/g)].map((m) => m[0].trim())
    )
    expect(new Set(lines)).toEqual(new Set(Object.values(installLines)))
  })

  it("the README's table of tarballs is each package with the @tenet packages it depends on", () => {
    const readme = readFileSync(join(repo, "README.md"), "utf8")
    const rows = [...readme.matchAll(/^\| `(@tenet\/[\w-]+)` \| ((?:`[\w-]+`(?:, )?)+) \|$/gm)]
    const published = readdirSync(join(repo, "packages")).map((dir) =>
      JSON.parse(readFileSync(join(repo, "packages", dir, "package.json"), "utf8")) as {
        name: string
        private?: boolean
        dependencies?: Record<string, string>
      }
    ).filter((p) => p.private !== true)
    const needs = (name: string): Array<string> => {
      const deps = Object.keys(published.find((p) => p.name === name)?.dependencies ?? {})
      return [...new Set([...deps.filter((d) => d.startsWith("@tenet/")).flatMap(needs), name])]
    }
    expect(rows.map((r) => r[1]).sort()).toEqual(published.map((p) => p.name).sort())
    for (const [, name, tarballs] of rows) {
      expect(new Set(tarballs!.split(", ").map((t) => `@tenet/${t.replaceAll("`", "")}`)), name).toEqual(
        new Set(needs(name!))
      )
    }
  })
})

describe("installed with npm outside the workspace", () => {
  const tenantProject = () => join(work, "tenant")

  beforeAll(async () => {
    const dir = project(work, "tenant")
    await install(dir, packed, installLines.embedder)
    await install(dir, packed, installLines.tenant)
    // And the command, so that every package's entry points load in one project.
    await install(dir, packed, installLines.cli)
    // What a TypeScript consumer adds to compile.
    await npm(dir, ["i", "-D", "typescript@~5.9.3", "@types/node@^20.19.0"])
    cpSync(join(repo, "examples/embedded-sdk/src"), join(dir, "embedded"), { recursive: true })
    cpSync(join(repo, "examples/quickstart/src"), join(dir, "quickstart"), { recursive: true })
    cpSync(join(repo, "examples/tenant-integration-test/src"), join(dir, "src"), { recursive: true })
    cpSync(join(repo, "examples/tenant-integration-test/test"), join(dir, "test"), { recursive: true })
    const entryPoints = packed.flatMap((p) =>
      Object.keys(p.manifest.exports ?? {}).filter((k) => !k.includes("*")).map((k) => p.manifest.name + k.slice(1))
    )
    writeFileSync(
      join(dir, "test/entryPoints.test.ts"),
      [
        `import { expect, it } from "vitest"`,
        `it.each(${JSON.stringify(entryPoints)})("%s loads from the installed package", async (name) => {`,
        `  expect(Object.keys(await import(name)).length).toBeGreaterThan(0)`,
        // An entry point's first import compiles a package's modules: seconds on a busy machine.
        `}, 60_000)`
      ].join("\n")
    )
    const compilerOptions = { target: "ES2022", strict: true, skipLibCheck: false, types: ["node"] }
    const include = ["embedded", "quickstart", "src", "test"]
    writeFileSync(
      join(dir, "tsconfig.json"),
      JSON.stringify({
        compilerOptions: { ...compilerOptions, module: "NodeNext", moduleResolution: "NodeNext", outDir: "dist" },
        include
      })
    )
    writeFileSync(
      join(dir, "tsconfig.bundler.json"),
      JSON.stringify({
        compilerOptions: { ...compilerOptions, module: "ESNext", moduleResolution: "bundler", noEmit: true },
        include
      })
    )
  }, 600_000)

  it("installs one copy of effect, shared by every package", async () => {
    const { stdout } = await npm(tenantProject(), ["ls", "effect", "--all", "--parseable"])
    const copies = new Set(stdout.split("\n").filter((l) => l.endsWith("/effect")))
    expect([...copies]).toEqual([join(tenantProject(), "node_modules/effect")])
  })

  it("every other install line of the docs installs, and its packages load", async () => {
    const others = [
      installLines.client,
      installLines.promiseClient,
      installLines.memory,
      installLines.postgres,
      installLines.kubernetes
    ]
    // Each in a project of its own, all at once: npm mostly waits on the registry, and its cache
    // is safe to share.
    await Promise.all(others.map(async (line, i) => {
      const dir = project(work, `line-${i}`)
      await install(dir, packed, line)
      const names = line.split(" ").filter((a) => a.startsWith("@tenet/"))
      await run(process.execPath, ["--input-type=module", "-e", names.map((n) => `await import("${n}")`).join(";")], {
        cwd: dir
      })
    }))
  }, 600_000)

  it("(d) type-checks under NodeNext and under bundler resolution, skipLibCheck off", async () => {
    await run(join(tenantProject(), "node_modules/.bin/tsc"), ["-p", "tsconfig.json"], { cwd: tenantProject() })
    await run(join(tenantProject(), "node_modules/.bin/tsc"), ["-p", "tsconfig.bundler.json"], {
      cwd: tenantProject()
    })
  }, 300_000)

  it("(a) an embedding control plane runs the use-cases over core and the memory adapters", async () => {
    const { stdout } = await run(process.execPath, ["dist/embedded/main.js"], { cwd: tenantProject() })
    expect(stdout).toContain("tenant embedded-acme: VPC core, subnet 10.50.0.0/24")
    expect(stdout).toContain("postgres from 10.60.3.4: allowed; from 198.51.100.7: denied")
  }, 120_000)

  it("(e) the tenant integration-test example and every package entry point pass with vitest", async () => {
    const { stdout } = await run(join(tenantProject(), "node_modules/.bin/vitest"), [
      "run",
      "test",
      "--reporter=verbose"
    ], {
      cwd: tenantProject(),
      env: { ...process.env, CI: "true", NO_COLOR: "1" }
    })
    expect(stdout).toMatch(/Tests\s+\d+ passed/)
    expect(stdout).toContain("@tenet/adapters-k8s/testing loads from the installed package")
  }, 300_000)

  describe("tenet-server, as an operator installs it", () => {
    const operatorProject = () => join(work, "operator")

    beforeAll(async () => {
      await install(project(work, "operator"), packed, installLines.operator)
    }, 300_000)

    it("(f) the tenet command, installed from its tarball, plans and applies rules against it", async () => {
      const dir = project(work, "network-team")
      await install(dir, packed, installLines.cli)
      const server = await startServer(operatorProject(), { TENET_STORE: "memory" })
      const env = { ...process.env, XDG_CONFIG_HOME: join(dir, "config"), TENET_PASSWORD: "network team password" }
      const tenet = (...args: Array<string>) =>
        run(join(dir, "node_modules/.bin/tenet"), args, { cwd: dir, env }).then(
          (r) => ({ code: 0, stdout: r.stdout }),
          (e: { code: number; stdout: string; stderr: string }) => ({ code: e.code, stdout: e.stdout + e.stderr })
        )
      const call = async (method: string, path: string, headers: Record<string, string>, body?: unknown) =>
        (await fetch(`${server.url}${path}`, {
          method,
          headers: { ...headers, "content-type": "application/json" },
          ...(body === undefined ? {} : { body: JSON.stringify(body) })
        })).json() as Promise<Record<string, string>>
      try {
        const admin = await call("POST", "/admin/login", {}, { username: "admin", password: ADMIN_PASSWORD })
        await call("POST", "/tenants", { "x-admin-token": admin.api_token! }, {
          name: "netops",
          password: "network team password"
        })
        expect((await tenet("login", "--url", server.url, "--tenant", "netops")).code).toBe(0)
        const session = JSON.parse(readFileSync(join(dir, "config/tenet/credentials.json"), "utf8"))
        const headers = { "x-auth-token": session.token }
        await call("POST", "/vpcs", headers, {
          tenant_id: session.tenant_id,
          token: session.token,
          name: "edge",
          enable_internet: true
        })
        const exported = await tenet("rules", "export", "--vpc", "edge")
        writeFileSync(join(dir, "rules.yaml"), exported.stdout)
        expect((await tenet("rules", "plan", "-f", "rules.yaml")).code).toBe(0)
        writeFileSync(
          join(dir, "rules.yaml"),
          exported.stdout.replace(
            "rules:\n",
            "rules:\n  - name: dns\n    direction: egress\n    action: deny\n    priority: 10\n    protocol: udp\n    ports: \"53\"\n    remote_type: cidr\n    remote_cidr: 0.0.0.0/0\n"
          )
        )
        const planned = await tenet("rules", "plan", "-f", "rules.yaml")
        expect([planned.code, planned.stdout]).toEqual([2, expect.stringContaining("+ create 'dns'")])
        const applied = await tenet("rules", "apply", "-f", "rules.yaml")
        expect([applied.code, applied.stdout]).toEqual([0, expect.stringContaining("Applied: 1 created")])
        expect((await tenet("rules", "plan", "-f", "rules.yaml")).code).toBe(0)
      } finally {
        await server.stop()
      }
    }, 300_000)

    it("(g) started in the background by a script that exits at once, it serves until a signal stops it", async () => {
      const port = await freePort()
      const pidFile = join(work, "started-by-script.pid")
      const script = join(work, "start-tenet.sh")
      writeFileSync(
        script,
        `#!/bin/sh\n"${join(operatorProject(), "node_modules/.bin/tenet-server")}" >"${
          join(work, "started-by-script.log")
        }" 2>&1 &\necho $! >"${pidFile}"\n`
      )
      await run("sh", [script], {
        cwd: operatorProject(),
        env: { ...process.env, TENET_STORE: "memory", TENET_PORT: String(port), TENET_ADMIN_PASSWORD: ADMIN_PASSWORD }
      })
      const pid = Number(readFileSync(pidFile, "utf8").trim())
      const alive = () => {
        try {
          process.kill(pid, 0)
          return true
        } catch {
          return false
        }
      }
      const healthy = () => fetch(`http://127.0.0.1:${port}/healthz`).then((r) => r.status === 200, () => false)
      try {
        const deadline = Date.now() + 60_000
        while (!(await healthy()) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100))
        expect(await healthy()).toBe(true)
        // Its parent is gone; the server watched for that every second before, and stopped.
        await new Promise((r) => setTimeout(r, 3_000))
        expect([alive(), await healthy()]).toEqual([true, true])
        process.kill(pid, "SIGTERM")
        const stopping = Date.now() + 30_000
        while (alive() && Date.now() < stopping) await new Promise((r) => setTimeout(r, 100))
        expect(alive()).toBe(false)
        expect(readFileSync(join(work, "started-by-script.log"), "utf8")).toContain("shutting down: received SIGTERM")
      } finally {
        if (alive()) process.kill(pid, "SIGKILL")
      }
    }, 120_000)

    // (b) and (c): the server starts on each store, and the Promise client runs the quick start on it.
    for (const store of ["memory", "embedded"] as const) {
      it(`(b, c) starts on the ${store} store and serves the Promise client's quick start`, async () => {
        const server = await startServer(operatorProject(), {
          TENET_STORE: store,
          TENET_DATA_DIR: join(work, `data-${store}`)
        })
        try {
          console.info(`tenet-server cold start to /healthz on ${store}: ${server.coldStartMillis} ms`)
          const { stdout } = await run(process.execPath, ["dist/quickstart/main.js"], {
            cwd: tenantProject(),
            env: {
              ...process.env,
              TENET_URL: server.url,
              TENET_ADMIN_USERNAME: "admin",
              TENET_ADMIN_PASSWORD: ADMIN_PASSWORD
            }
          })
          expect(stdout).toMatch(/VPC \S+ applied/)
          expect(stdout).toContain("tcp/443 from 198.51.100.7: allow")
          // The web console ships inside the server package and is served from it.
          const page = await fetch(`${server.url}/console`)
          expect(page.status).toBe(200)
          expect(await page.text()).toContain("<script type=\"module\" src=\"/console/console.js\">")
          const bundle = await fetch(`${server.url}/console/console.js`)
          expect([bundle.status, bundle.headers.get("content-type")]).toEqual([200, "text/javascript; charset=utf-8"])
        } finally {
          await server.stop()
        }
      }, 180_000)
    }
  })
})
