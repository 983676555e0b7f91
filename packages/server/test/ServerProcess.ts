/** The server as a program of its own, for tests of what only a process shows (signals, locks). */
import { spawn } from "node:child_process"
import { fileURLToPath } from "node:url"
import { onTestFinished } from "vitest"
import { freePort } from "./Loopback.js"

export const bin = fileURLToPath(new URL("../src/bin.ts", import.meta.url))

/**
 * `tenet-server` in a process of its own (the sources through tsx, as one node process: the
 * pid is the server's), on a free port; killed when the test ends if it still runs.
 */
export const spawnServer = async (env: Record<string, string>) => {
  const port = await freePort()
  const child = spawn(process.execPath, ["--conditions=@tenet/source", "--import", "tsx", bin], {
    env: { ...process.env, TENET_PORT: String(port), ...env },
    stdio: ["ignore", "pipe", "pipe"]
  })
  let output = ""
  child.stdout.on("data", (chunk) => (output += chunk))
  child.stderr.on("data", (chunk) => (output += chunk))
  const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)))
  onTestFinished(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL")
  })
  return { child, port, exited, output: () => output }
}
