// Package digest is the one form in which the manager keeps a value too large to keep: a cache's
// label or annotation value or Job template, an overlong backfill request. It is pure: it imports
// only the standard library, so the caches and the floor (controller/logic) share it.
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
