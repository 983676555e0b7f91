/**
 * What every test project shares: the workspace's packages are resolved to their TypeScript
 * sources (the `@tenet/source` export condition, as tsconfig's `customConditions` and the
 * `--conditions` of tsx commands), so tests need no build; plain Node resolves them to `dist`.
 *
 * Files of a project share their worker's modules (`isolate: false`): importing Effect, the
 * platform and the contract once per worker rather than once per file saves minutes. So a file
 * leaves nothing behind that outlives it (timers, signal handlers, servers), and reads
 * process-wide state (Effect's metric registry, say) as what changed during its own tests. Use
 * `layer(...)` from `@effect/vitest`, never `it.layer(...)` on the imported `it`: `layer`
 * rebinds that shared `it`'s own `layer` to the last file's server.
 */
import { defineProject, mergeConfig } from "vitest/config"
import type { UserWorkspaceConfig } from "vitest/config"

export const SOURCE_CONDITION = "@tenet/source"

const sources = defineProject({
  test: {
    isolate: false,
    // A limit catches a test that hangs; it does not measure speed (`pnpm bench` does). Files run
    // two at a time beside processes they start, so a test's wall time varies with the load.
    testTimeout: 60_000,
    hookTimeout: 120_000
  },
  resolve: { conditions: [SOURCE_CONDITION, "module", "browser", "development|production"] },
  ssr: { resolve: { conditions: [SOURCE_CONDITION, "node", "development|production"] } }
})

/** A project's config with the workspace's sources. */
export const project = (config: UserWorkspaceConfig) => mergeConfig(sources, defineProject(config))
