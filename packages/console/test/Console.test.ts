/**
 * The console's main journeys in a real browser (Debian's Chromium through playwright-core)
 * against a real server on the memory store: the admin signs in and creates a tenant; the
 * tenant signs in, builds a VPC with subnets and rules, sees a shadowed rule marked, previews
 * an edit's impact, saves it and sees reachability change, checks a flow, and sees its
 * topology as a graph. Every page passes axe-core without serious violations, loads nothing
 * but the server's own files, and logs no error. Screenshots of each page are taken.
 */
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { PromiseClient } from "@tenet/client"
import type { Browser, Page } from "playwright-core"
import { ADMIN_PASSWORD, available, launch, type Running, seriousViolations, shoot, startServer } from "./Browser.js"

const TENANT = { name: "acme", password: "acme-console-password" }

/**
 * What a rule opening `port` from every address into subnet web opens, as the impact view lists
 * it: the partners' block (peered, so carried) and the internet's, apart.
 */
const opensEverywhere = (text: string | null, port: number) => {
  expect(text).toContain(`ingress tcp ${port} from 10.9.0.0/24 into subnet web`)
  expect(text).toContain(
    `ingress tcp ${port} from 0.0.0.0/0 except 10.0.1.0/24, 10.0.2.0/24, 10.9.0.0/24 into subnet web`
  )
}

describe.skipIf(!available)("the console in a real browser", () => {
  let server: Running
  let browser: Browser

  beforeAll(async () => {
    server = await startServer()
    browser = await launch()
  })

  afterAll(async () => {
    await browser?.close()
    await server?.stop()
  })

  /** A fresh tab (its own session) that records what a user would never see but should not happen. */
  const open = async () => {
    const page = await browser.newPage({ viewport: { width: 1440, height: 900 } })
    const problems: Array<string> = []
    page.on("pageerror", (e) => problems.push(`page error: ${e.message}`))
    // The API's own 4xx answers (a wrong password, an unset provider) are the browser's console errors too.
    page.on(
      "console",
      (m) =>
        m.type() === "error" && !m.text().startsWith("Failed to load resource") && problems.push(`console: ${m.text()}`)
    )
    page.on("response", (r) => r.status() >= 500 && problems.push(`${r.status()} from ${r.url()}`))
    page.on("request", (r) => !r.url().startsWith(server.url) && problems.push(`request elsewhere: ${r.url()}`))
    await page.goto(`${server.url}/console`)
    return { page, problems }
  }

  /**
   * Signs in and waits for the console's answer: signed in (its Sign out button; a minute, as a
   * loaded machine may take long to hash the password), or, `expected` so, refused (the form's
   * alert). A sign-in that does not end signed in fails with what the console said.
   */
  const signIn = async (
    page: Page,
    kind: "Tenant" | "Admin",
    name: string,
    password: string,
    expected: "in" | "refused" = "in"
  ) => {
    const form = page.getByRole("form", { name: "Sign in" })
    await form.getByLabel(kind, { exact: true }).check()
    await form.getByLabel(kind === "Tenant" ? "Tenant name" : "Username").fill(name)
    await form.getByLabel("Password").fill(password)
    await form.getByRole("button", { name: "Sign in" }).click()
    const alert = form.getByRole("alert")
    if (expected === "refused") return void await alert.waitFor()
    await page.getByRole("button", { name: "Sign out" }).waitFor({ timeout: 60_000 }).catch(async (e) => {
      const said = await alert.textContent({ timeout: 1_000 }).catch(() => null)
      throw new Error(`the sign-in of ${name} did not end signed in${said === null ? "" : `: ${said}`}`, { cause: e })
    })
  }

  const accessible = async (page: Page) => expect(await seriousViolations(page)).toEqual([])

  it("the API reference at /docs renders from the server alone", async () => {
    const page = await browser.newPage()
    const elsewhere: Array<string> = []
    page.on("request", (r) => !r.url().startsWith(server.url) && elsewhere.push(r.url()))
    // Under its content-security policy: anything the page needs and the policy refuses shows here.
    const refused: Array<string> = []
    page.on("console", (m) => /Content Security Policy/i.test(m.text()) && refused.push(m.text()))
    await page.goto(`${server.url}/docs`)
    await page.getByText("Liveness and readiness", { exact: false }).first().waitFor()
    await page.waitForLoadState("networkidle")
    expect(elsewhere).toEqual([])
    expect(refused).toEqual([])
    await page.close()
  })

  it("the admin signs in, creates a tenant and sees the platform", async () => {
    const { page, problems } = await open()
    await page.getByRole("heading", { name: "Tenet console" }).waitFor()
    await accessible(page)
    await shoot(page, "sign-in")

    await signIn(page, "Admin", "admin", "wrong-password", "refused")
    expect(await page.getByRole("alert").textContent()).toMatch(/invalid|password|credentials/i)
    await signIn(page, "Admin", "admin", ADMIN_PASSWORD)
    await page.getByRole("heading", { name: "Administration" }).waitFor()
    const form = page.getByRole("form", { name: "New tenant" })
    await form.getByLabel("Name").fill(TENANT.name)
    await form.getByLabel("Password").fill(TENANT.password)
    await form.getByRole("button", { name: "Create tenant" }).click()
    await page.getByRole("cell", { name: TENANT.name, exact: true }).waitFor()
    // Instants as people read them, in UTC.
    const created = await page.getByRole("row").filter({ hasText: TENANT.name }).getByRole("cell").nth(2).textContent()
    expect(created).toMatch(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/)
    // The trail shows the creation.
    await page.getByRole("cell", { name: "tenants.create" }).first().waitFor()
    await page.getByText("Not configured yet.").waitFor()
    await accessible(page)
    // The console holds a session of its own, never the admin's API token; Sign out ends it.
    const held = JSON.parse(await page.evaluate(() => sessionStorage.getItem("tenet.console.session") ?? "{}")) as {
      token: string
    }
    const asHeld = () =>
      fetch(`${server.url}/tenants`, { headers: { "x-admin-token": held.token } }).then((r) => r.status)
    expect(await asHeld()).toBe(200)
    await page.getByRole("button", { name: "Sign out" }).click()
    await page.getByRole("heading", { name: "Tenet console" }).waitFor()
    // The sign-in shows at once; the logout it sent ends the token as it reaches the server.
    await expect.poll(asHeld, { timeout: 5_000 }).toBe(401)
    expect(problems).toEqual([])
    await page.close()
  })

  it("the admin's tenant table shows a page, and more on asking", async () => {
    const admin = await PromiseClient.loginAdmin({ baseUrl: server.url, username: "admin", password: ADMIN_PASSWORD })
    const existing: Array<string> = []
    for await (const t of admin.pages.all("tenants.list")) existing.push(t.name)
    for (let i = existing.length; i < 60; i++) {
      await admin.tenants.create({ payload: { name: `paged-${i}`, password: "paged-password" } })
    }
    await admin.close()
    const { page, problems } = await open()
    await signIn(page, "Admin", "admin", ADMIN_PASSWORD)
    await page.getByRole("heading", { name: "Administration" }).waitFor()
    const rows = page.getByRole("table").first().getByRole("row")
    await page.getByRole("button", { name: "Show more tenants" }).waitFor()
    expect(await rows.count()).toBe(51)
    await page.getByRole("button", { name: "Show more tenants" }).click()
    await page.getByRole("cell", { name: "paged-59", exact: true }).waitFor()
    expect(await rows.count()).toBe(61)
    expect(await page.getByRole("button", { name: "Show more tenants" }).count()).toBe(0)
    await accessible(page)
    await page.getByRole("button", { name: "Sign out" }).click()
    expect(problems).toEqual([])
    await page.close()
  })

  it("a tenant builds a VPC, sees a shadowed rule, previews an edit, saves it and sees reachability change", async () => {
    const { page, problems } = await open()
    await signIn(page, "Tenant", TENANT.name, TENANT.password)
    await page.getByRole("heading", { name: "Topology" }).waitFor()

    // A VPC from the console, and into it.
    const newVpc = page.getByRole("form", { name: "New VPC" })
    await newVpc.getByLabel("Name").fill("prod")
    await newVpc.getByRole("button", { name: "Create VPC" }).click()
    await page.getByRole("link", { name: "prod", exact: true }).click()
    await page.getByRole("heading", { name: "VPC prod" }).waitFor()

    // Two subnets.
    const subnets = page.getByRole("form", { name: "New subnet" })
    for (const [name, cidr, gateway] of [["web", "10.0.1.0/24", "10.0.1.1"], ["db", "10.0.2.0/24", "10.0.2.1"]]) {
      await subnets.getByLabel("Name").fill(name!)
      await subnets.getByLabel("Block").fill(cidr!)
      await subnets.getByLabel("Gateway").fill(gateway!)
      await subnets.getByRole("button", { name: "Add subnet" }).click()
      await page.getByRole("cell", { name: cidr!, exact: true }).waitFor()
    }

    // A partners' VPC, peered with prod by its rule naming it: its packets have a route in.
    const api = await PromiseClient.loginTenant({ baseUrl: server.url, ...TENANT })
    const prod = (await api.vpcs.list()).find((v) => v.name === "prod")!
    const partnersVpc = await api.vpcs.create({ payload: { name: "partners", enable_internet: false } })
    await api.subnets.create({
      payload: { vpc_id: partnersVpc.id, name: "edge", cidr: "10.9.0.0/24", gateway_ip: "10.9.0.1" }
    })
    await api.securityRules.create({
      payload: {
        vpc_id: partnersVpc.id,
        name: "to prod",
        direction: "egress",
        action: "allow",
        priority: 100,
        protocol: "tcp",
        remote_type: "vpc",
        remote_vpc_id: prod.id
      }
    })
    await api.close()

    // A rule, previewed before it is saved.
    const addRule = async (
      fields: { name: string; ports: string; block: string; priority: string },
      preview: boolean
    ) => {
      await page.getByRole("button", { name: "Add rule" }).click()
      const editor = page.getByRole("form", { name: "New rule" })
      await editor.getByLabel("Name").fill(fields.name)
      await editor.getByLabel("Priority").fill(fields.priority)
      await editor.getByLabel("Ports").fill(fields.ports)
      await editor.getByLabel("Block", { exact: true }).fill(fields.block)
      await editor.getByLabel("Target").selectOption("subnet")
      await editor.getByRole("combobox", { name: /^Subnet/ }).selectOption({ label: "web" })
      if (preview) {
        await editor.getByRole("button", { name: "Preview impact" }).click()
        const impact = editor.getByRole("region", { name: "Impact of the change" })
        // Everywhere but the VPC's own blocks, which its seeded rule already lets in: the
        // partners' block (10.9.0.0/24), which their peering carries, and the internet's, as a
        // block minus its exceptions, which nothing published lets in yet.
        await impact.getByRole("heading", { name: "Opens (2)" }).waitFor()
        const opened = await impact.textContent()
        opensEverywhere(opened, 443)
        expect(opened).toContain("No path carries these flows after the change: nothing published")
      }
      await editor.getByRole("button", { name: "Save rule" }).click()
      await page.getByRole("row").filter({ hasText: fields.name }).first().waitFor()
    }
    await addRule({ name: "web-in", ports: "443", block: "0.0.0.0/0", priority: "1000" }, true)

    // A later, narrower rule is shadowed, and its row says so.
    await addRule({ name: "web-partners", ports: "443", block: "203.0.113.0/24", priority: "1100" }, false)
    const partners = page.getByRole("row").filter({ hasText: "web-partners" })
    await partners.locator(".badge.shadowed").waitFor()
    expect(await partners.textContent()).toContain("never matches: earlier rules 'web-in'")

    // Reachability from the partners' VPC to the web subnet: port 443 only.
    const partnersToWeb = page.locator("td[title^=\"VPC partners → subnet web:\"]")
    expect(await partnersToWeb.textContent()).toBe("tcp 443")

    // An edit previewed: it would open 8443 too, decided now by the default, after by the rule.
    await page.getByRole("button", { name: "Edit web-in" }).click()
    const editor = page.getByRole("form", { name: "Edit rule web-in" })
    await editor.getByLabel("Ports").fill("443,8443")
    await editor.getByRole("button", { name: "Preview impact" }).click()
    const impact = editor.getByRole("region", { name: "Impact of the change" })
    await impact.getByRole("heading", { name: "Opens (2)" }).waitFor()
    const preview = await impact.textContent()
    opensEverywhere(preview, 8443)
    expect(preview).toContain("now deny by implied-deny-ingress, after allow by rule 'web-in'")
    await accessible(page)
    await shoot(page, "rule-impact")
    await editor.getByRole("button", { name: "Save rule" }).click()
    await page.getByRole("row").filter({ hasText: "web-in" }).filter({ hasText: "tcp 443,8443" }).waitFor()
    // ... and the reachability follows.
    await page.locator("td[title^=\"VPC partners → subnet web:\"]", { hasText: "tcp 443,8443" }).waitFor()

    // The flow checker agrees.
    const checker = page.getByRole("form", { name: "Flow checker" })
    await checker.getByLabel("Port").fill("8443")
    await checker.getByLabel("Remote address or VPC").fill("10.9.0.5")
    await checker.getByLabel("Local end").selectOption({ label: "subnet web" })
    await checker.getByRole("button", { name: "Check flow" }).click()
    expect(await checker.getByRole("status").textContent()).toBe("Allowed by rule 'web-in'")

    // Deleting the shadowed rule is previewed too: it changes nothing.
    await page.getByRole("button", { name: "Delete web-partners" }).click()
    const removal = page.getByRole("region", { name: "Delete rule web-partners" })
    await removal.getByText("No flow changes its verdict.").waitFor()
    await removal.getByRole("button", { name: "Keep it" }).click()

    await accessible(page)
    await shoot(page, "vpc")
    expect(problems).toEqual([])
    await page.close()
  })

  it("a VPC's guardrails are listed, and a rule that would break one shows the violation in its preview", async () => {
    const api = await PromiseClient.loginTenant({ baseUrl: server.url, ...TENANT })
    const vpc = await api.vpcs.create({ payload: { name: "guarded", enable_internet: true } })
    await api.subnets.create({
      payload: { vpc_id: vpc.id, name: "app", cidr: "10.20.1.0/24", gateway_ip: "10.20.1.1" }
    })
    await api.guardrails.create({
      path: { vpc_id: vpc.id },
      payload: {
        name: "no ssh from partners",
        require: "deny",
        direction: "ingress",
        protocol: "tcp",
        ports: "22",
        remote_cidr: "198.51.100.0/24"
      }
    })

    const { page, problems } = await open()
    await signIn(page, "Tenant", TENANT.name, TENANT.password)
    await page.getByRole("link", { name: "guarded", exact: true }).click()
    await page.getByRole("heading", { name: "VPC guarded" }).waitFor()
    const row = page.getByRole("row").filter({ hasText: "no ssh from partners" })
    expect(await row.textContent()).toContain("ingress tcp 22 from 198.51.100.0/24")

    await page.getByRole("button", { name: "Add rule" }).click()
    const editor = page.getByRole("form", { name: "New rule" })
    await editor.getByLabel("Name").fill("ssh for everyone")
    await editor.getByLabel("Priority").fill("100")
    await editor.getByLabel("Ports").fill("22")
    await editor.getByLabel("Block", { exact: true }).fill("0.0.0.0/0")
    await editor.getByRole("button", { name: "Preview impact" }).click()
    const impact = editor.getByRole("region", { name: "Impact of the change" })
    await impact.getByRole("heading", { name: "Breaks guardrails (1)" }).waitFor()
    const violation = await impact.getByRole("alert").textContent()
    expect(violation).toContain("no ssh from partners: tcp 22 from 198.51.100.")
    expect(violation).toContain("would be decided by rule 'ssh for everyone'")
    await accessible(page)
    await shoot(page, "guardrail-violation")
    // The API would refuse it: Save is not offered until the rule changes.
    const save = editor.getByRole("button", { name: "Save rule" })
    expect(await save.isDisabled()).toBe(true)
    await editor.getByLabel("Ports").fill("443")
    expect(await save.isEnabled()).toBe(true)
    expect((await api.securityRules.list({ urlParams: { vpc_id: vpc.id } })).rules.map((r) => r.name)).not.toContain(
      "ssh for everyone"
    )
    expect(problems).toEqual([])
    await page.close()
  })

  it("an address set's page shows where it is used and previews an edit's impact in each VPC", async () => {
    const api = await PromiseClient.loginTenant({ baseUrl: server.url, ...TENANT })
    const vpcs = []
    for (const [name, cidr] of [["branch-a", "10.30.1.0/24"], ["branch-b", "10.31.1.0/24"]] as const) {
      const vpc = await api.vpcs.create({ payload: { name, enable_internet: true } })
      await api.subnets.create({
        payload: { vpc_id: vpc.id, name: `${name}-app`, cidr, gateway_ip: cidr.replace(".0/24", ".1") }
      })
      vpcs.push(vpc)
    }
    await api.guardrails.create({
      path: { vpc_id: vpcs[1]!.id },
      payload: {
        name: "no ssh from partners",
        require: "deny",
        direction: "ingress",
        protocol: "tcp",
        ports: "22",
        remote_cidr: "203.0.113.0/24"
      }
    })

    const { page, problems } = await open()
    await signIn(page, "Tenant", TENANT.name, TENANT.password)
    await page.getByRole("link", { name: "Address sets" }).click()
    await page.getByRole("heading", { name: "Address sets" }).waitFor()
    const form = page.getByRole("form", { name: "New address set" })
    await form.getByLabel("Name").fill("offices")
    await form.getByLabel("Description").fill("Office networks")
    await form.getByLabel(/Entries/).fill("198.51.100.0/24 Berlin\n192.0.2.0/25")
    await form.getByRole("button", { name: "Create set" }).click()
    const listed = page.getByRole("row").filter({ hasText: "offices" })
    await listed.waitFor()
    expect(await listed.textContent()).toContain("0 rules")
    expect(await listed.textContent()).toContain("Office networks")

    const set = (await api.addressSets.list({ urlParams: {} })).find((s) => s.name === "offices")!
    for (const vpc of vpcs) {
      await api.securityRules.create({
        payload: {
          vpc_id: vpc.id,
          name: "ssh from offices",
          direction: "ingress",
          action: "allow",
          priority: 100,
          protocol: "tcp",
          ports: "22",
          remote_type: "address_set",
          remote_address_set_id: set.id
        }
      })
    }
    await page.reload()
    await page.getByRole("link", { name: "offices" }).click()
    await page.getByRole("heading", { name: "Address set offices" }).waitFor()
    const users = page.getByRole("row").filter({ hasText: "ssh from offices" })
    expect(await users.allTextContents()).toEqual(["ssh from officesbranch-a", "ssh from officesbranch-b"])

    const editor = page.getByRole("form", { name: "Edit address set offices" })
    await editor.getByLabel(/Entries/).fill("198.51.100.0/24 Berlin\n203.0.113.0/24 a partner")
    await editor.getByRole("button", { name: "Preview impact" }).click()
    const impacts = editor.getByRole("region", { name: "Impact in each VPC" })
    await impacts.getByRole("heading", { name: "In VPC branch-a" }).waitFor()
    await impacts.getByRole("heading", { name: "In VPC branch-b" }).waitFor()
    expect(await impacts.getByRole("heading", { name: "Opens (1)" }).count()).toBe(2)
    expect(await impacts.getByRole("heading", { name: "Closes (1)" }).count()).toBe(2)
    expect(await impacts.getByRole("alert").textContent()).toContain("no ssh from partners: tcp 22 from 203.0.113.")
    await accessible(page)
    await shoot(page, "address-set-preview")
    // The API would refuse the edit: Save is not offered until it changes; the set is unchanged.
    const save = editor.getByRole("button", { name: "Save" })
    expect(await save.isDisabled()).toBe(true)
    expect((await api.addressSets.get({ path: { address_set_id: set.id } })).entries.map((e) => e.cidr)).toEqual([
      "198.51.100.0/24",
      "192.0.2.0/25"
    ])
    // The description is the set's to edit too, with its entries.
    await editor.getByLabel(/Entries/).fill("198.51.100.0/24 Berlin\n192.0.2.0/24")
    await editor.getByLabel("Description").fill("Our office networks")
    await save.click()
    await page.getByRole("cell", { name: "192.0.2.0/24", exact: true }).waitFor()
    await page.getByText("Our office networks").first().waitFor()
    expect(await api.addressSets.get({ path: { address_set_id: set.id } })).toMatchObject({
      description: "Our office networks"
    })
    // Emptied, it is none.
    const edited = page.getByRole("form", { name: "Edit address set offices" })
    await edited.getByLabel("Description").fill("")
    await edited.getByRole("button", { name: "Save" }).click()
    await page.getByText("Our office networks").waitFor({ state: "detached" })
    expect((await api.addressSets.get({ path: { address_set_id: set.id } })).description).toBeNull()
    expect(problems).toEqual([])
    await page.close()
  })

  it("the topology graph shows VPCs, subnets, pods with status and tunnels, and rule references", async () => {
    // Workloads and a second VPC, through the API as any client would add them.
    const admin = await PromiseClient.loginAdmin({ baseUrl: server.url, username: "admin", password: ADMIN_PASSWORD })
    await admin.providerConfig.put({
      payload: {
        external_subnet_cidr: "198.18.0.0/24",
        external_subnet_gateway: "198.18.0.1",
        peering_subnet_cidr: "100.64.0.0/16",
        pod_dns_nameservers: [],
        pod_dns_ndots: null,
        edge_account_id: "acct",
        edge_api_token: "edge-token",
        edge_domain: "apps.example.com"
      }
    })
    await admin.close()
    const tenant = await PromiseClient.loginTenant({ baseUrl: server.url, ...TENANT })
    const prod = (await tenant.vpcs.list()).find((v) => v.name === "prod")!
    const web = (await tenant.subnets.list()).find((s) => s.name === "web")!
    const storefront = await tenant.pods.create({
      payload: { vpc_id: prod.id, subnet_id: web.id, name: "storefront", container_image: "nginx:1.27" }
    })
    await tenant.tunnels.createForPod({
      path: { pod_id: storefront.id },
      payload: { tunnel_name: "shop", subdomain: "shop", protocol_type: "http" }
    })
    // A long hostname, of wide letters: it stays inside its pod's box.
    const long = "www-warehouse-workflow-webhooks-for-mailroom-management"
    await tenant.tunnels.createForPod({
      path: { pod_id: storefront.id },
      payload: { tunnel_name: "sale", subdomain: long, protocol_type: "http" }
    })
    const data = await tenant.vpcs.create({ payload: { name: "data", enable_internet: false } })
    const db = await tenant.subnets.create({
      payload: { vpc_id: data.id, name: "pg", cidr: "10.1.0.0/24", gateway_ip: "10.1.0.1" }
    })
    await tenant.pods.create({
      payload: { vpc_id: data.id, subnet_id: db.id, name: "postgres", container_image: "postgres:16" }
    })
    await tenant.securityRules.create({
      payload: {
        vpc_id: data.id,
        name: "from-prod",
        direction: "ingress",
        action: "allow",
        priority: 100,
        protocol: "tcp",
        ports: "5432",
        remote_type: "vpc",
        remote_vpc_id: prod.id
      }
    })
    await tenant.close()

    const { page, problems } = await open()
    await signIn(page, "Tenant", TENANT.name, TENANT.password)
    const graph = page.locator("svg.topology")
    await graph.waitFor()
    const text = await graph.textContent()
    for (
      const shown of [
        "prod",
        "data",
        "web",
        "pg",
        "storefront",
        "postgres",
        "shop.apps.example.com",
        "from-prod: allow tcp 5432"
      ]
    ) {
      expect(text).toContain(shown)
    }
    const tunnels = graph.locator(".pod .tunnel")
    expect(await tunnels.count()).toBe(2)
    for (const tunnel of await tunnels.all()) {
      const pod = (await tunnel.locator("xpath=ancestor::*[contains(@class, 'pod')][1]/*[local-name()='rect']")
        .boundingBox())!
      const box = (await tunnel.boundingBox())!
      expect(box.x).toBeGreaterThanOrEqual(pod.x)
      expect(box.x + box.width, await tunnel.textContent() ?? "").toBeLessThanOrEqual(pod.x + pod.width)
      // Its status is kept in view, however long the hostname.
      expect(await tunnel.textContent()).toMatch(/\(active\)$/)
    }
    await accessible(page)
    await shoot(page, "topology")
    // The graph's VPCs are links to their pages.
    await graph.getByRole("link", { name: "VPC data" }).click()
    await page.getByRole("heading", { name: "VPC data" }).waitFor()
    expect(await page.getByRole("row").filter({ hasText: "from-prod" }).textContent()).toContain("VPC prod")

    // The token is rotated elsewhere: the console's next call is refused, and it asks to sign in again.
    const elsewhere = await PromiseClient.loginTenant({ baseUrl: server.url, ...TENANT })
    await elsewhere.tenantIdentity.rotateToken({ path: { tenant_id: data.tenant_id } })
    await elsewhere.close()
    await page.getByRole("link", { name: "← Topology" }).click()
    await page.getByRole("status").filter({ hasText: "Your session has ended" }).waitFor()
    await page.getByRole("form", { name: "Sign in" }).waitFor()
    expect(await page.evaluate(() => window.sessionStorage.length)).toBe(0)
    expect(problems).toEqual([])
    await page.close()

    // The admin sees the provider configuration, its token only as set.
    const other = await open()
    await signIn(other.page, "Admin", "admin", ADMIN_PASSWORD)
    await other.page.getByText("set (never shown)").waitFor()
    expect(await other.page.content()).not.toContain("edge-token")
    await shoot(other.page, "admin")
    expect(other.problems).toEqual([])
    await other.page.close()
  })
})
