package testenv

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// editBackoff spans about 10 s: a busy manager may write an object's status several times a second.
var editBackoff = wait.Backoff{Steps: 10, Duration: 10 * time.Millisecond, Factor: 2, Jitter: 0.1}

// Edit reads obj's live copy into obj, applies mutate and updates it, again after a conflict.
// A test that edits what a running manager also writes (a SecretSync's status moves its
// resourceVersion at any time) must not Get and Update once: the manager wins that race now
// and then, and the test fails for a conflict it did not mean to test.
func Edit[T client.Object](ctx context.Context, c client.Client, obj T, mutate func(T)) error {
	return retry.RetryOnConflict(editBackoff, func() error {
		if err := c.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			return err
		}
		mutate(obj)
		return c.Update(ctx, obj)
	})
}
