/**
 * A real OVN in userspace for tests: the northbound and southbound ovsdb-servers and
 * ovn-northd under a temporary directory (no kernel module, no ovs-vswitchd), logical switches
 * whose ports carry pod addresses, and `ovn-trace` to ask what happens to a packet.
 */
import type { OvnAcl } from "@tenet/adapters-k8s"
import { execFile, execFileSync } from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { promisify } from "node:util"

const run = promisify(execFile)

const BINARIES = ["ovsdb-tool", "ovsdb-server", "ovn-northd", "ovn-nbctl", "ovn-trace"]

export const available = () =>
  BINARIES.every((b) => {
    try {
      execFileSync("which", [b], { stdio: "ignore" })
      return true
    } catch {
      return false
    }
  })

const schemaPath = (name: string) => {
  const found = ["/usr/share/ovn", "/usr/local/share/ovn"].map((d) => Path.join(d, name)).find(Fs.existsSync)
  if (found === undefined) throw new Error(`OVN schema ${name} not found`)
  return found
}

export interface Port {
  readonly name: string
  readonly mac: string
  readonly ip: string
}

export interface Switch {
  readonly name: string
  readonly pods: ReadonlyArray<Port>
  /** The port everything outside the switch comes in through and leaves by. */
  readonly uplink: string
}

export interface Trace {
  readonly sw: Switch
  readonly direction: "ingress" | "egress"
  readonly pod: Port
  readonly remote: string
  readonly protocol: "tcp" | "udp" | "icmp"
  readonly port: number | null
}

export const REMOTE_MAC = "0a:00:00:00:ff:01"

export class Ovn {
  private constructor(readonly dir: string, private readonly env: NodeJS.ProcessEnv) {}

  static async start(): Promise<Ovn> {
    const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "tenet-ovn-"))
    const env = { ...process.env, OVS_RUNDIR: dir, OVS_LOGDIR: dir, OVN_RUNDIR: dir, OVN_LOGDIR: dir, OVS_DBDIR: dir }
    const ovn = new Ovn(dir, env)
    for (const db of ["nb", "sb"]) {
      await run("ovsdb-tool", ["create", ovn.file(`${db}.db`), schemaPath(`ovn-${db}.ovsschema`)], { env })
      await run("ovsdb-server", [
        "--detach",
        "--no-chdir",
        `--pidfile=${ovn.file(`${db}.pid`)}`,
        `--log-file=${ovn.file(`${db}.log`)}`,
        `--unixctl=${ovn.file(`${db}.ctl`)}`,
        `--remote=punix:${ovn.file(`${db}.sock`)}`,
        ovn.file(`${db}.db`)
      ], { env })
    }
    await run("ovn-northd", [
      "--detach",
      "--no-chdir",
      `--pidfile=${ovn.file("northd.pid")}`,
      `--log-file=${ovn.file("northd.log")}`,
      `--unixctl=${ovn.file("northd.ctl")}`,
      `--ovnnb-db=unix:${ovn.file("nb.sock")}`,
      `--ovnsb-db=unix:${ovn.file("sb.sock")}`
    ], { env })
    return ovn
  }

  private file(name: string) {
    return Path.join(this.dir, name)
  }

  async stop(): Promise<void> {
    for (const pid of ["northd.pid", "sb.pid", "nb.pid"]) {
      try {
        process.kill(Number(Fs.readFileSync(this.file(pid), "utf8").trim()), "SIGTERM")
      } catch {
        // already gone
      }
    }
    Fs.rmSync(this.dir, { recursive: true, force: true })
  }

  /** Runs ovn-nbctl commands in one transaction and waits until northd has compiled them. */
  async nbctl(commands: ReadonlyArray<ReadonlyArray<string>>): Promise<void> {
    const args = [`--db=unix:${this.file("nb.sock")}`, "--wait=sb"]
    for (const command of commands) args.push("--", ...command)
    const { stderr } = await run("ovn-nbctl", args, { env: this.env, maxBuffer: 16 * 1024 * 1024 })
    if (stderr.trim() !== "") throw new Error(`ovn-nbctl: ${stderr}`)
  }

  async addSwitch(sw: Switch): Promise<void> {
    await this.nbctl([
      ["ls-add", sw.name],
      ...sw.pods.flatMap((p) => [["lsp-add", sw.name, p.name], ["lsp-set-addresses", p.name, `${p.mac} ${p.ip}`]]),
      ["lsp-add", sw.name, sw.uplink],
      ["lsp-set-addresses", sw.uplink, "unknown"]
    ])
  }

  /** Replaces the switch's ACLs with the rendered ones. */
  async setAcls(sw: Switch, acls: ReadonlyArray<OvnAcl.Acl>): Promise<void> {
    await this.nbctl([
      ["acl-del", sw.name],
      ...acls.map((a) => ["acl-add", sw.name, a.direction, String(a.priority), a.match, a.action])
    ])
  }

  /** Warnings and errors ovn-northd logged, e.g. an ACL match it could not parse and dropped. */
  northdProblems(): ReadonlyArray<string> {
    return Fs.readFileSync(this.file("northd.log"), "utf8").split("\n").filter((l) => /\|(WARN|ERR|EMER)\|/.test(l))
  }

  /** Whether OVN delivers the first packet of a new connection: it reaches the far port. */
  async delivers(trace: Trace): Promise<boolean> {
    const { pod, sw } = trace
    const l4 = trace.protocol === "icmp"
      ? "icmp4 && icmp4.type == 8 && icmp4.code == 0"
      : `${trace.protocol} && ${trace.protocol}.src == 40000 && ${trace.protocol}.dst == ${trace.port}`
    const [inport, addresses, outport] = trace.direction === "ingress"
      ? [
        sw.uplink,
        `eth.src == ${REMOTE_MAC} && eth.dst == ${pod.mac} && ip4.src == ${trace.remote} && ip4.dst == ${pod.ip}`,
        pod.name
      ]
      : [
        pod.name,
        `eth.src == ${pod.mac} && eth.dst == ${REMOTE_MAC} && ip4.src == ${pod.ip} && ip4.dst == ${trace.remote}`,
        sw.uplink
      ]
    const microflow = `inport == "${inport}" && ${addresses} && ip.ttl == 64 && ${l4}`
    // One `--ct=new` per connection-tracking stage the packet crosses (the switch's two ACL stages).
    const { stderr, stdout } = await run("ovn-trace", [
      `--db=unix:${this.file("sb.sock")}`,
      "--ct=new",
      "--ct=new",
      "--minimal",
      sw.name,
      microflow
    ], { env: this.env })
    if (stderr.trim() !== "") throw new Error(`ovn-trace: ${stderr}`)
    return stdout.includes(`output("${outport}")`)
  }
}
