/**
 * OVN's real data plane on one chassis, for packets rather than traces: the OVS database and
 * `ovs-vswitchd` with the userspace datapath (`datapath_type=netdev`, no kernel module), OVN's
 * northbound and southbound databases, `ovn-northd` and `ovn-controller`, from Debian's
 * `openvswitch-switch`, `ovn-central` and `ovn-host`. Every pod is a network namespace on a veth
 * into the integration bridge; the internet is one namespace behind the external bridge (the
 * provider network), holding the external subnet's gateway and a few internet hosts. A probe
 * agent in each namespace (Python's standard library: raw ICMP needs no extra tool) listens and
 * sends real TCP, UDP and ICMP.
 *
 * Learned on these machines (the issue's trials): a veth needs `tx off` on both ends (or TCP
 * checksums arrive unfinished and are dropped); the external bridge is netdev too (its patch
 * ports work within one datapath); `--wait=hv` returns once the OpenFlow rules are in, and the
 * cached datapath flows are purged before a verdict is read; `ovn-controller` stops before
 * `ovs-vswitchd`, which then exits with `--cleanup`.
 */
import type { ChildProcessWithoutNullStreams } from "node:child_process"
import { execFile, execFileSync, spawn } from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { createInterface } from "node:readline"
import { promisify } from "node:util"

const run = promisify(execFile)

const BINARIES = [
  "ovsdb-tool",
  "ovsdb-server",
  "ovs-vswitchd",
  "ovs-vsctl",
  "ovs-appctl",
  "ovn-northd",
  "ovn-nbctl",
  "ovn-controller",
  "ip",
  "ethtool",
  "python3"
]

const found = (binary: string) => {
  try {
    execFileSync("which", [binary], { stdio: "ignore" })
    return true
  } catch {
    return false
  }
}

/** Whether this machine can run the data plane: the binaries, and root (namespaces). */
export const available = () => BINARIES.every(found) && process.getuid?.() === 0

const schema = (dir: string, name: string) => {
  const at = ["/usr/share", "/usr/local/share"].map((root) => Path.join(root, dir, name)).find(Fs.existsSync)
  if (at === undefined) throw new Error(`schema ${name} not found`)
  return at
}

/**
 * The probe agent: JSON lines in, JSON lines out, each command answered by its id. `listen`
 * binds a TCP acceptor or a UDP echo on a port (on given addresses: a UDP reply leaves from the
 * address it was sent to, which NAT needs); `probe` connects (TCP), sends and waits for the echo
 * (UDP) or pings (ICMP), from an optional source address, and answers whether the reply came back.
 */
const AGENT = String.raw`
import json, os, select, socket, struct, sys, threading, time
lock = threading.Lock()
bound = {}
def say(i, ok):
    with lock:
        sys.stdout.write(json.dumps({"id": i, "ok": ok}) + "\n"); sys.stdout.flush()
def accept(s):
    while True:
        try:
            c, _ = s.accept(); c.close()
        except Exception:
            return
def echo(s):
    while True:
        try:
            data, peer = s.recvfrom(2048); s.sendto(data, peer)
        except Exception:
            return
def listen(proto, port, addr):
    if (proto, port, addr) in bound: return True
    if proto == "tcp":
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind((addr, port)); s.listen(128)
        threading.Thread(target=accept, args=(s,), daemon=True).start()
    else:
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.bind((addr, port))
        threading.Thread(target=echo, args=(s,), daemon=True).start()
    bound[(proto, port, addr)] = s
    return True
def checksum(b):
    if len(b) % 2: b += b"\0"
    s = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    s = (s >> 16) + (s & 0xffff); s += s >> 16
    return (~s) & 0xffff
def probe(c):
    proto, src, dst, port, timeout = c["proto"], c.get("src"), c["dst"], c.get("port", 0), c.get("timeout", 0.3)
    try:
        if proto == "tcp":
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM); s.settimeout(timeout)
            if src: s.bind((src, 0))
            try:
                s.connect((dst, port)); return True
            except Exception:
                return False
            finally:
                s.close()
        if proto == "udp":
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(timeout)
            if src: s.bind((src, 0))
            token = os.urandom(8)
            try:
                s.sendto(token, (dst, port)); data, _ = s.recvfrom(64); return data == token
            except Exception:
                return False
            finally:
                s.close()
        s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
        if src: s.bind((src, 0))
        ident = threading.get_ident() & 0xffff; seq = int(time.time() * 1000) & 0xffff
        body = os.urandom(8); head = struct.pack("!BBHHH", 8, 0, 0, ident, seq)
        s.sendto(struct.pack("!BBHHH", 8, 0, checksum(head + body), ident, seq) + body, (dst, 0))
        end = time.time() + timeout
        try:
            while True:
                left = end - time.time()
                if left <= 0 or not select.select([s], [], [], left)[0]: return False
                data, peer = s.recvfrom(2048)
                at = (data[0] & 0xf) * 4
                kind, _, _, i, q = struct.unpack("!BBHHH", data[at:at + 8])
                if kind == 0 and i == ident and q == seq and peer[0] == dst: return True
        finally:
            s.close()
    except Exception:
        return False
for line in sys.stdin:
    c = json.loads(line)
    if c["op"] == "listen":
        say(c["id"], all(listen(c["proto"], c["port"], a) for a in c.get("addrs", ["0.0.0.0"])))
    else:
        threading.Thread(target=lambda c=c: say(c["id"], probe(c)), daemon=True).start()
`

/** One namespace's agent. */
class Agent {
  private next = 0
  private readonly waiting = new Map<number, { resolve: (ok: boolean) => void; reject: (e: Error) => void }>()
  private stderr = ""

  constructor(private readonly name: string, private readonly child: ChildProcessWithoutNullStreams) {
    createInterface({ input: child.stdout }).on("line", (line) => {
      const { id, ok } = JSON.parse(line) as { id: number; ok: boolean }
      this.waiting.get(id)?.resolve(ok)
      this.waiting.delete(id)
    })
    child.stderr.on("data", (chunk) => this.stderr += String(chunk))
    child.on("exit", (code) => {
      for (const { reject } of this.waiting.values()) {
        reject(new Error(`the agent in ${name} exited (${code}): ${this.stderr}`))
      }
      this.waiting.clear()
    })
  }

  /** The command's answer; an agent that does not answer within 10 s is a failure, not a hang. */
  ask(command: Record<string, unknown>): Promise<boolean> {
    const id = this.next++
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiting.delete(id)
        reject(new Error(`the agent in ${this.name} did not answer ${JSON.stringify(command)}: ${this.stderr}`))
      }, 10_000)
      this.waiting.set(id, {
        resolve: (ok) => {
          clearTimeout(timer)
          resolve(ok)
        },
        reject: (e) => {
          clearTimeout(timer)
          reject(e)
        }
      })
      this.child.stdin.write(JSON.stringify({ ...command, id }) + "\n")
    })
  }

  stop() {
    this.child.kill("SIGKILL")
  }
}

export interface Host {
  /** The namespace's name, which is also its logical switch port's (`iface-id`). */
  readonly name: string
  readonly mac: string
  /** Its address with the prefix length of its network. */
  readonly address: string
  readonly gateway: string
  /** More addresses it answers on (internet hosts), each a /32. */
  readonly extra?: ReadonlyArray<string>
}

export interface Probe {
  readonly from: string
  readonly src?: string | undefined
  readonly dst: string
  readonly protocol: "tcp" | "udp" | "icmp"
  readonly port: number | null
}

export class DataPlane {
  private readonly agents = new Map<string, Agent>()

  private constructor(readonly dir: string, private readonly env: NodeJS.ProcessEnv) {}

  private file(name: string) {
    return Path.join(this.dir, name)
  }

  /** Starts the databases, northd, vswitchd and the controller, with the integration and external bridges. */
  static async start(): Promise<DataPlane> {
    const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "tenet-dp-"))
    const env = { ...process.env, OVS_RUNDIR: dir, OVS_LOGDIR: dir, OVN_RUNDIR: dir, OVN_LOGDIR: dir, OVS_DBDIR: dir }
    const plane = new DataPlane(dir, env)
    const f = (name: string) => plane.file(name)
    const daemon = (
      name: string
    ) => ["--detach", "--no-chdir", `--pidfile=${f(`${name}.pid`)}`, `--log-file=${f(`${name}.log`)}`]
    await run("ovsdb-tool", ["create", f("conf.db"), schema("openvswitch", "vswitch.ovsschema")], { env })
    await run("ovsdb-server", [
      ...daemon("ovsdb"),
      `--unixctl=${f("ovsdb.ctl")}`,
      `--remote=punix:${f("db.sock")}`,
      f("conf.db")
    ], {
      env
    })
    await plane.vsctl(["--no-wait", "init"])
    await run("ovs-vswitchd", [...daemon("vswitchd"), `--unixctl=${f("vswitchd.ctl")}`, `unix:${f("db.sock")}`], {
      env
    })
    for (const db of ["nb", "sb"]) {
      await run("ovsdb-tool", ["create", f(`${db}.db`), schema("ovn", `ovn-${db}.ovsschema`)], { env })
      await run("ovsdb-server", [
        ...daemon(db),
        `--unixctl=${f(`${db}.ctl`)}`,
        `--remote=punix:${f(`${db}.sock`)}`,
        f(`${db}.db`)
      ], {
        env
      })
    }
    await run("ovn-northd", [
      ...daemon("northd"),
      `--unixctl=${f("northd.ctl")}`,
      `--ovnnb-db=unix:${f("nb.sock")}`,
      `--ovnsb-db=unix:${f("sb.sock")}`
    ], { env })
    await plane.vsctl([
      "add-br",
      "br-int",
      "--",
      "set",
      "bridge",
      "br-int",
      "datapath_type=netdev",
      "fail-mode=secure",
      "other-config:disable-in-band=true",
      "--",
      "add-br",
      "br-ex",
      "--",
      "set",
      "bridge",
      "br-ex",
      "datapath_type=netdev",
      "--",
      "set",
      "open",
      ".",
      "external_ids:system-id=chassis1",
      `external_ids:ovn-remote=unix:${f("sb.sock")}`,
      "external_ids:ovn-encap-type=geneve",
      "external_ids:ovn-encap-ip=127.0.0.1",
      "external_ids:ovn-bridge-mappings=external:br-ex"
    ])
    await run("ovn-controller", [...daemon("controller"), `unix:${f("db.sock")}`], { env })
    Fs.writeFileSync(f("agent.py"), AGENT)
    return plane
  }

  async vsctl(args: ReadonlyArray<string>): Promise<void> {
    await run("ovs-vsctl", [`--db=unix:${this.file("db.sock")}`, ...args], { env: this.env })
  }

  /** ovn-nbctl commands in one transaction; answered once the chassis has the flows they make. */
  async nbctl(commands: ReadonlyArray<ReadonlyArray<string>>): Promise<void> {
    const args = [`--db=unix:${this.file("nb.sock")}`, "--wait=hv"]
    for (const command of commands) args.push("--", ...command)
    const { stderr } = await run("ovn-nbctl", args, { env: this.env, maxBuffer: 16 * 1024 * 1024 })
    if (stderr.trim() !== "") throw new Error(`ovn-nbctl: ${stderr}`)
  }

  /**
   * Drops the cached datapath flows, the connection tracker's entries and what the namespaces
   * learned of their neighbours (a router port's address is another router's next time): every
   * verdict read fresh.
   */
  async purge(): Promise<void> {
    for (const ns of this.agents.keys()) await run("ip", ["-n", ns, "neigh", "flush", "all"])
    await run("ovs-appctl", [`--target=${this.file("vswitchd.ctl")}`, "revalidator/purge"], { env: this.env })
    await run("ovs-appctl", [`--target=${this.file("vswitchd.ctl")}`, "dpctl/flush-conntrack"], { env: this.env })
  }

  /** A namespace on a veth into `bridge` (its logical port named after it on the integration bridge), with its agent. */
  async addHost(host: Host, bridge: "br-int" | "br-ex"): Promise<void> {
    const ns = host.name
    const outside = `${ns}-h`.slice(0, 15)
    const sh = async (...args: ReadonlyArray<string>) => {
      await run(args[0]!, args.slice(1))
    }
    await sh("ip", "netns", "add", ns)
    await sh("ip", "link", "add", outside, "type", "veth", "peer", "name", "eth0", "netns", ns)
    await sh("ip", "-n", ns, "link", "set", "eth0", "address", host.mac)
    await sh("ip", "-n", ns, "addr", "add", host.address, "dev", "eth0")
    for (const extra of host.extra ?? []) await sh("ip", "-n", ns, "addr", "add", `${extra}/32`, "dev", "eth0")
    await sh("ip", "-n", ns, "link", "set", "eth0", "up")
    await sh("ip", "-n", ns, "link", "set", "lo", "up")
    await sh("ip", "-n", ns, "route", "add", "default", "via", host.gateway)
    await sh("ip", "netns", "exec", ns, "ethtool", "-K", "eth0", "tx", "off")
    await sh("ip", "link", "set", outside, "up")
    await sh("ethtool", "-K", outside, "tx", "off")
    await this.vsctl([
      "add-port",
      bridge,
      outside,
      ...(bridge === "br-int" ? ["--", "set", "interface", outside, `external_ids:iface-id=${ns}`] : [])
    ])
    const child = spawn("ip", ["netns", "exec", ns, "python3", "-u", this.file("agent.py")], { stdio: "pipe" })
    this.agents.set(ns, new Agent(ns, child))
  }

  /** Takes a namespace away with its veth and port. */
  async removeHost(name: string, bridge: "br-int" | "br-ex"): Promise<void> {
    this.agents.get(name)?.stop()
    this.agents.delete(name)
    await this.vsctl(["--if-exists", "del-port", bridge, `${name}-h`.slice(0, 15)])
    await run("ip", ["netns", "del", name]).catch(() => undefined)
  }

  /** The namespace listens on `port` (on `addrs`, or every address). */
  listen(host: string, protocol: "tcp" | "udp", port: number, addrs?: ReadonlyArray<string>): Promise<boolean> {
    return this.agents.get(host)!.ask({
      op: "listen",
      proto: protocol,
      port,
      ...(addrs === undefined ? {} : { addrs })
    })
  }

  /**
   * Whether a new connection gets an answer back: a TCP connect, a UDP echo, an ICMP echo reply,
   * within half a second. One that does not is tried once more: a router's first packet to a next hop
   * waits on its ARP, in the controller, and may be the one that is lost.
   */
  async probe(p: Probe): Promise<boolean> {
    const once = () =>
      this.agents.get(p.from)!.ask({
        op: "probe",
        proto: p.protocol,
        dst: p.dst,
        timeout: 0.5,
        ...(p.port === null ? {} : { port: p.port }),
        ...(p.src === undefined ? {} : { src: p.src })
      })
    return (await once()) || once()
  }

  async stop(): Promise<void> {
    for (const agent of this.agents.values()) agent.stop()
    for (const name of this.agents.keys()) await run("ip", ["netns", "del", name]).catch(() => undefined)
    this.agents.clear()
    const kill = (pid: string) => {
      try {
        process.kill(Number(Fs.readFileSync(this.file(pid), "utf8").trim()), "SIGTERM")
      } catch {
        // already gone
      }
    }
    // The controller first; then vswitchd, which clears its datapath on the way out.
    kill("controller.pid")
    await run("ovs-appctl", [`--target=${this.file("vswitchd.ctl")}`, "exit", "--cleanup"], { env: this.env }).catch(
      () => undefined
    )
    for (const pid of ["northd.pid", "sb.pid", "nb.pid", "ovsdb.pid"]) kill(pid)
    Fs.rmSync(this.dir, { recursive: true, force: true })
  }
}
