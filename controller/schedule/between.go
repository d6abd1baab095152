package schedule

import "time"

// Between returns the union's slots in [from, to), oldest first, at most limit of them, and
// whether there are more in the range beyond those returned. A backfill runs these: the
// schedule's own slots, in its time zone (its DST rule included), within a range a user names.
// from is inclusive, to exclusive, so consecutive ranges ("a day, then the next") never share a
// slot.
func (u Union) Between(from, to time.Time, limit int) (slots []time.Time, more bool) {
	if limit <= 0 || !from.Before(to) {
		return nil, false
	}
	// Slots fall on whole seconds (whole minutes for cron, @every anchored on a minute): the
	// first slot strictly after from-1s is the first at or after from, give or take the
	// sub-second part the loop checks.
	for t := u.Next(from.Add(-time.Second)); !t.IsZero() && t.Before(to); t = u.Next(t) {
		if t.Before(from) {
			continue
		}
		if len(slots) == limit {
			return slots, true
		}
		slots = append(slots, t)
	}
	return slots, false
}
