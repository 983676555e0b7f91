import type { UserWorkspaceConfig } from "vitest/config"
export declare const SOURCE_CONDITION = "@tenet/source"
/** A project's config with the workspace's sources. */
export declare const project: (config: UserWorkspaceConfig) => Record<string, any>
// # sourceMappingURL=vitest.shared.d.ts.map
