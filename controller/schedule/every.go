package schedule

import (
	"fmt"
	"strings"
	"time"
)

// everyPrefix is robfig/cron's interval descriptor.
const everyPrefix = "@every "

// checkEvery refuses an "@every <duration>" that is not a whole number of minutes of at least
// one. Runs are per minute (a Job is named after its slot's minute, as upstream's), so a shorter
// or finer interval would name slots that never get a Job of their own: robfig/cron would fire
// "@every 1s" every second, and every one of those slots would cost a status write and an Event
// for a Job already created. Admission refuses the same (the CRD's CEL rule); this catches an
// object stored before that rule existed. spec is already trimmed.
func checkEvery(spec string) error {
	rest, ok := strings.CutPrefix(spec, everyPrefix)
	if !ok {
		return nil
	}
	d, err := time.ParseDuration(rest)
	if err != nil {
		return nil //nolint:nilerr // not a duration: the parser reports it with its own message
	}
	if d < time.Minute || d%time.Minute != 0 {
		return fmt.Errorf("%w %q: @every needs a whole number of minutes, at least 1m (e.g. @every 5m, @every 90m or @every 1h30m): runs start at most once a minute", ErrUnparseable, spec)
	}
	return nil
}
