// Package mysqlstore is a segment.Store on Leaf's own MySQL/MariaDB table,
// leaf_alloc, with go-sql-driver/mysql: an existing Leaf table is used as
// is, and Leaf servers and vesta can share it during a migration.
//
// A range is reserved as Leaf reserves it, in one transaction:
//
//	BEGIN
//	UPDATE leaf_alloc SET max_id = max_id + step WHERE biz_tag = ?   -- or + ? for a dynamic step
//	SELECT biz_tag, max_id, step FROM leaf_alloc WHERE biz_tag = ?
//	COMMIT
//
// The UPDATE locks the row until COMMIT, so concurrent reservations from any
// number of processes are serialised and never overlap; the range handed
// out is Leaf's [max_id-step, max_id-1]. Durability is the database's: a
// committed reservation survives a crash with InnoDB's default
// innodb_flush_log_at_trx_commit=1 (and on a replica setup, with
// semi-synchronous replication before a failover).
//
// Schema is Leaf's DDL; CreateTable applies it when the table is missing.
package mysqlstore
