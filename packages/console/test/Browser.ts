/**
 * What the browser journeys run against: `tenet-server` in a process of its own on the memory
 * store, with the console freshly built into it, and Debian's Chromium driven by
 * playwright-core (no browser download). Without Chromium the journeys are skipped, but not
 * under CI, where `.ci/run` installs it.
 */
import { type ChildProcess, execFile, spawn } from "node:child_process"
import { existsSync, mkdirSync, readFileSync } from "node:fs"
import { createRequire } from "node:module"
import { createServer } from "node:net"
import { fileURLToPath } from "node:url"
import { promisify } from "node:util"
import { type Browser, chromium, type Page } from "playwright-core"

export const CHROMIUM = process.env.TENET_CHROMIUM ?? "/usr/bin/chromium"
export const available = existsSync(CHROMIUM) || process.env.CI !== undefined

const bin = fileURLToPath(new URL("../../server/src/bin.ts", import.meta.url))
const build = fileURLToPath(new URL("../build.mjs", import.meta.url))

/** Screenshots go to the docs when asked (`TENET_UPDATE_SCREENSHOTS=1`), else beside the build. */
export const screenshots = fileURLToPath(
  process.env.TENET_UPDATE_SCREENSHOTS === "1"
    ? new URL("../../../docs/console/", import.meta.url)
    : new URL("../build/screenshots/", import.meta.url)
)

const freePort = () =>
  new Promise<number>((resolve, reject) => {
    const server = createServer()
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number }
      server.close(() => resolve(port))
    })
  })

export const ADMIN_PASSWORD = "console-admin-password"

export interface Running {
  readonly url: string
  readonly stop: () => Promise<void>
}

/** Builds the console, starts the server and waits until it answers. */
export const startServer = async (): Promise<Running> => {
  await promisify(execFile)(process.execPath, [build])
  const port = await freePort()
  const child: ChildProcess = spawn(process.execPath, ["--conditions=@tenet/source", "--import", "tsx", bin], {
    env: {
      ...process.env,
      TENET_STORE: "memory",
      TENET_PORT: String(port),
      TENET_ADMIN_PASSWORD: ADMIN_PASSWORD,
      TENET_LOG_LEVEL: "Error"
    },
    stdio: ["ignore", "inherit", "inherit"]
  })
  const url = `http://127.0.0.1:${port}`
  for (let i = 0; i < 200; i++) {
    const up = await fetch(`${url}/healthz`).then((r) => r.ok, () => false)
    if (up) break
    if (child.exitCode !== null) throw new Error(`tenet-server exited with ${child.exitCode}`)
    await new Promise((r) => setTimeout(r, 100))
  }
  return {
    url,
    stop: () =>
      new Promise((resolve) => {
        if (child.exitCode !== null) return resolve()
        child.once("exit", () => resolve())
        child.kill("SIGTERM")
      })
  }
}

export const launch = (): Promise<Browser> =>
  chromium.launch({
    executablePath: CHROMIUM,
    args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-background-networking"]
  })

const axeSource = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8")

interface Violation {
  readonly id: string
  readonly impact: string | null
  readonly help: string
  readonly nodes: ReadonlyArray<{ readonly target: ReadonlyArray<string> }>
}

/** The page's serious and critical accessibility violations, by axe-core (WCAG 2.1 A and AA). */
export const seriousViolations = async (page: Page) => {
  // Evaluated through the DevTools protocol, which the page's script policy does not govern.
  await page.evaluate(axeSource)
  const violations = await page.evaluate(async () => {
    const axe = (globalThis as typeof globalThis & {
      axe: { run: (context: unknown, options: unknown) => Promise<{ violations: Array<Violation> }> }
    }).axe
    const result = await axe.run(document, { runOnly: ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "best-practice"] })
    return result.violations
  })
  return violations
    .filter((v) => v.impact === "serious" || v.impact === "critical")
    .map((v) => `${v.id} (${v.impact}): ${v.help} at ${v.nodes.map((n) => n.target.join(" ")).join(", ")}`)
}

export const shoot = async (page: Page, name: string) => {
  mkdirSync(screenshots, { recursive: true })
  await page.screenshot({ path: `${screenshots}${name}.png`, fullPage: true })
}
