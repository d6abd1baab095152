package scheduledjob

import (
	"github.com/platform-operators/platform-operators/controller/cachebounds"
	"github.com/platform-operators/platform-operators/controller/internal/testenv"
)

// The envtest managers of this package cache the kind in its bounded form, as the manager does.
func init() { testenv.CacheKinds = []cachebounds.Kind{CacheKind()} }
