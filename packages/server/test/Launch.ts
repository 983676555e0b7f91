/**
 * Programs in processes of their own, for tests and benchmarks alike (no vitest here: a benchmark
 * runs outside it). `ServerProcess.ts` adds the kill when the test ends.
 */
import { spawn } from "node:child_process"
import { fileURLToPath } from "node:url"
import { freePort } from "./Loopback.js"

export const bin = fileURLToPath(new URL("../src/bin.ts", import.meta.url))

/** The binary from its sources, through tsx (one node process: the pid is the server's). */
export const SOURCE_BIN_ARGS = ["--conditions=@tenet/source", "--import", "tsx", bin] as const

export interface LaunchOptions {
  readonly env?: Record<string, string>
  readonly cwd?: string
  readonly detached?: boolean
}

/**
 * A program in a process of its own, what it writes collected; `kill` ends it if it still runs
 * (with its whole process group when `detached`, which gives it a group of its own).
 */
export const launch = (command: string, args: ReadonlyArray<string>, options: LaunchOptions = {}) => {
  const child = spawn(command, args, {
    env: { ...process.env, ...options.env },
    stdio: ["ignore", "pipe", "pipe"],
    detached: options.detached ?? false,
    ...(options.cwd === undefined ? {} : { cwd: options.cwd })
  })
  let stdout = ""
  let stderr = ""
  let output = ""
  child.stdout.on("data", (chunk) => {
    stdout += chunk
    output += chunk
  })
  child.stderr.on("data", (chunk) => {
    stderr += chunk
    output += chunk
  })
  const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)))
  const kill = () => {
    if (child.exitCode !== null || child.signalCode !== null) return
    if (options.detached === true) process.kill(-child.pid!, "SIGKILL")
    else child.kill("SIGKILL")
  }
  return { child, exited, kill, output: () => output, stdout: () => stdout, stderr: () => stderr }
}

/** `tenet-server` in a process of its own, from its sources, on a free port. */
export const launchServer = async (env: Record<string, string>) => {
  const port = await freePort()
  return { ...launch(process.execPath, SOURCE_BIN_ARGS, { env: { TENET_PORT: String(port), ...env } }), port }
}
