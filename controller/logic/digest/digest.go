// Package digest is the one form in which the manager keeps a value it drops for size: "sha256:"
// and the hex SHA-256 (a cache's large label or annotation value or Job template, a ScheduledJob's
// overlong backfill request). Two values with the same digest are, for every purpose here, equal.
//
// It is pure and imports only the standard library, so the caches (controller/cachebounds,
// controller/jobs) and the floor (controller/logic/slotplan) share it.
package digest

import (
	"crypto/sha256"
	"encoding/hex"
)

// Of returns b's digest: "sha256:" and the hex SHA-256.
func Of(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}
