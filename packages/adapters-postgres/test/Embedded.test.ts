import { PgEmbedded } from "@tenet/adapters-postgres"
import { OperationsLogContract, StoreContract } from "@tenet/core/testing"
import { Layer } from "effect"

// A fresh in-memory PGlite per test: slower to start (~3 s) than a database on a server.
StoreContract.run("embedded", () => PgEmbedded.layer().pipe(Layer.orDie))
OperationsLogContract.run("embedded", () => PgEmbedded.layer().pipe(Layer.orDie))
