package slotplan

import (
	"time"

	"github.com/platform-operators/platform-operators/controller/api/v1alpha1"
	"github.com/platform-operators/platform-operators/controller/keys"
)

// NoSuccessAfter is the ScheduledJob's own threshold of the no-success alert: its
// keys.AnnotationAlertNoSuccessAfter as a Go duration ("26h"); 0 when unset, unparsable or not
// positive (the chart's threshold applies).
func NoSuccessAfter(sj *v1alpha1.ScheduledJob) time.Duration {
	d, err := time.ParseDuration(sj.Annotations[keys.AnnotationAlertNoSuccessAfter])
	if err != nil || d <= 0 {
		return 0
	}
	return d
}
