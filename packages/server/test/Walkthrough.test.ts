/**
 * The README's curl walkthrough, run as written (bash and curl) against the real binary: the
 * words a newcomer copies must do what the README says they do.
 */
import { describe, expect, it } from "@effect/vitest"
import { execFile } from "node:child_process"
import { mkdtempSync, readFileSync, statSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { promisify } from "node:util"
import { until } from "./Loopback.js"
import { spawnServer } from "./ServerProcess.js"

const README = readFileSync(join(import.meta.dirname, "../../../README.md"), "utf8")

/** The shell blocks of the section "Try it with curl", in order. */
const walkthrough = () => {
  const section = README.slice(README.indexOf("## Try it with curl"), README.indexOf("## Configuration"))
  return [...section.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]!).join("\n")
}

describe("the README's curl walkthrough", () => {
  it("runs as written: admin, tenant, VPC, subnet, rule, pod, evaluate, and a refused typo", async () => {
    // In a directory of its own, as in a fresh checkout: the generated password is in ./.tenet.
    const cwd = mkdtempSync(join(tmpdir(), "tenet-walkthrough-"))
    const server = await spawnServer({ TENET_STORE: "memory", TENET_DATA_DIR: join(cwd, ".tenet") })
    await until(() => server.output().includes("listening on"), "the server to listen", 60_000)
    const file = join(cwd, ".tenet", "admin-password")
    // Readable by its owner only, and never in the log.
    expect(statSync(file).mode & 0o777).toBe(0o600)
    expect(server.output()).toContain(file)
    expect(server.output()).not.toContain(readFileSync(file, "utf8").trim())
    const script = walkthrough().replaceAll("http://127.0.0.1:8080", `http://127.0.0.1:${server.port}`)
    const { stdout } = await promisify(execFile)("bash", ["-euc", script], { cwd })
    // Each `# =>` the README shows, in its order.
    const shown = [...README.matchAll(/^# => (\{.*\})$/gm)].map((m) => m[1]!)
    let from = 0
    for (const answer of shown) {
      // `...` stands for whatever the server wrote there.
      const pattern = new RegExp(answer.replace(/[.*+?^${}()|[\]\\]/g, "\\$&").replaceAll("\\.\\.\\.", "[^]*?"))
      const match = pattern.exec(stdout.slice(from))
      expect(match, `${answer} in ${stdout.slice(from)}`).not.toBeNull()
      from += match!.index + match![0].length
    }
    server.child.kill("SIGTERM")
    expect(await server.exited).toBe(0)
  }, 120_000)
})
