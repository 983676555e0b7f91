import { describe, it } from "@effect/vitest"
import { OperationsLogContract, StoreContract } from "@tenet/core/testing"
import { freshDatabase, url } from "./FreshDatabase.js"

if (url === undefined) {
  describe("PostgreSQL contracts", () => {
    it.skip("set TENET_TEST_DATABASE_URL to run the Store and OperationsLog contracts on PostgreSQL", () => {})
  })
} else {
  const server = url
  StoreContract.run("postgres", () => freshDatabase(server))
  OperationsLogContract.run("postgres", () => freshDatabase(server))
}
