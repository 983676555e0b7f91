/**
 * What ships for operators holds together: the alert rules pass `promtool check rules` and
 * their unit tests (`promtool test rules`), every metric the rules and the dashboard name is
 * documented, and every alert has its runbook section. (Metrics.test runs each expression
 * against a real Prometheus that scraped a server.)
 */
import { describe, expect, it } from "@effect/vitest"
import { spawnSync } from "node:child_process"
import { readFileSync } from "node:fs"
import { dirname, join } from "node:path"
import * as Operations from "./Operations.js"

const promtool = (...args: ReadonlyArray<string>) =>
  spawnSync("promtool", args, { cwd: dirname(Operations.ALERTS), encoding: "utf8" })

// CI installs Prometheus's tools (.ci/run) and must run these; elsewhere they need promtool.
const hasPromtool = promtool("--version").status === 0 || process.env.CI !== undefined

const documented = new Set(
  [...readFileSync(join(Operations.ROOT, "docs", "metrics.md"), "utf8").matchAll(/^\| `(tenet_\w+)` \|/gm)]
    .map((m) => m[1]!.replace(/_total$/, ""))
)
const runbook = readFileSync(join(Operations.ROOT, "docs", "operations.md"), "utf8")

describe("operations: alert rules and dashboard", () => {
  it.skipIf(!hasPromtool)("promtool accepts the rules and their unit tests pass", () => {
    const check = promtool("check", "rules", Operations.ALERTS)
    expect(check.stdout + check.stderr).toContain("SUCCESS")
    expect(check.status).toBe(0)
    const test = promtool("test", "rules", Operations.ALERT_TESTS)
    expect(test.stdout + test.stderr).toContain("SUCCESS")
    expect(test.status).toBe(0)
  })

  it("every alert is unit-tested, has a runbook section and says where it is", () => {
    const tests = readFileSync(Operations.ALERT_TESTS, "utf8")
    for (const rule of Operations.alertRules()) {
      expect(tests, rule.alert).toContain(`alertname: ${rule.alert}`)
      expect(runbook, rule.alert).toContain(`\n## ${rule.alert}\n`)
      expect(rule.annotations.runbook).toBe(`docs/operations.md#${rule.alert.toLowerCase()}`)
    }
  })

  it("every metric the rules and the dashboard query is documented", () => {
    const named = [
      ...Operations.alertExpressions(),
      ...Operations.dashboardQueries().map((q) => q.expression)
    ].flatMap(Operations.familiesIn)
    expect(named.length).toBeGreaterThan(20)
    for (const family of named) expect(documented, family).toContain(family.replace(/_total$/, ""))
  })
})
