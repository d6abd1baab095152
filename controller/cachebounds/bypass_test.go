package cachebounds

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// No code of the product builds a cache, gives one kinds and transforms, or sets the manager's
// NewCache, but through this package: TestEveryInformerTheManagerStartsIsBounded
// (controller/cmd/manager) weighs only the informers built here, and only a cache built here
// refuses an undeclared kind, so a cache built another way would escape both. This lists what the source
// holds, not what someone remembered.
func TestNoCacheIsBuiltAroundTheInventory(t *testing.T) {
	forbidden := []string{"cache.New(", "ByObject:", "DefaultTransform:", "NewCache:", ".NewCache =", "toolscache.NewSharedIndexInformer(", "NewSharedInformer("}
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == "cachebounds" {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, f := range forbidden {
			if strings.Contains(string(b), f) {
				t.Errorf("%s: %q builds or configures a cache around controller/cachebounds: declare the kinds in an Inventory and build it with cachebounds.Options or cachebounds.New", path, f)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
