/** The server as a program of its own, for tests of what only a process shows (signals, locks). */
import { onTestFinished } from "vitest"
import type { LaunchOptions } from "./Launch.js"
import { launch, launchServer } from "./Launch.js"

export { bin, SOURCE_BIN_ARGS } from "./Launch.js"

/** `Launch.launch`, killed when the test ends if it still runs. */
export const spawnProcess = (command: string, args: ReadonlyArray<string>, options: LaunchOptions = {}) => {
  const launched = launch(command, args, options)
  onTestFinished(launched.kill)
  return launched
}

/** `tenet-server` in a process of its own, from its sources, on a free port; killed when the test ends. */
export const spawnServer = async (env: Record<string, string>) => {
  const launched = await launchServer(env)
  onTestFinished(launched.kill)
  return launched
}
