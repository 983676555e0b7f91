/**
 * What every test project shares: the workspace's packages are resolved to their TypeScript
 * sources (the `@tenet/source` export condition, as tsconfig's `customConditions` and the
 * `--conditions` of tsx commands), so tests need no build; plain Node resolves them to `dist`.
 */
import { defineProject, mergeConfig } from "vitest/config"
import type { UserWorkspaceConfig } from "vitest/config"

export const SOURCE_CONDITION = "@tenet/source"

const sources = defineProject({
  resolve: { conditions: [SOURCE_CONDITION, "module", "browser", "development|production"] },
  ssr: { resolve: { conditions: [SOURCE_CONDITION, "node", "development|production"] } }
})

/** A project's config with the workspace's sources. */
export const project = (config: UserWorkspaceConfig) => mergeConfig(sources, defineProject(config))
