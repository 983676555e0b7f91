import { describe, it } from "@effect/vitest"
import { PgTesting } from "@tenet/adapters-postgres"
import { OperationsLogContract, StoreContract } from "@tenet/core/testing"

const url = process.env.TENET_TEST_DATABASE_URL

if (url === undefined) {
  describe("PostgreSQL contracts", () => {
    it.skip("set TENET_TEST_DATABASE_URL to run the Store and OperationsLog contracts on PostgreSQL", () => {})
  })
} else {
  const server = url
  StoreContract.run("postgres", () => PgTesting.layerFreshDatabase(server))
  OperationsLogContract.run("postgres", () => PgTesting.layerFreshDatabase(server))
}
