/** @tenet/adapters-postgres: the Store and OperationsLog on PostgreSQL. */
export * as DataDirectoryLock from "./DataDirectoryLock.js"
export * as Disk from "./Disk.js"
export * as Migrations from "./Migrations.js"
export * as PgDatabase from "./PgDatabase.js"
export * as PgEmbedded from "./PgEmbedded.js"
export * as PgPrimary from "./PgPrimary.js"
export * as PgStore from "./PgStore.js"
export * as PgTesting from "./PgTesting.js"
