package quartzcron

import "time"

// zone turns wall times into instants the way java.util.TimeZone does for
// Quartz's Calendar (sun.util.calendar.ZoneInfo.getOffsetsByWall), which is
// what decides Quartz's fire times at daylight-saving changes. Java looks the
// wall time up among the zone's offset changes, each placed at its instant
// plus the offset it switches to: the offset of the last change at or before
// the wall time applies. So a wall time skipped in spring (02:30 in Berlin)
// becomes the instant one gap later (03:30), and a wall time that occurs
// twice in autumn becomes the later one (standard time). Java 17 does the
// same after 2037, where its table ends and the zone's last rule takes
// over (checked against Quartz for 2040 in the fixture).
type zone struct{ loc *time.Location }

func zoneOf(loc *time.Location) *zone { return &zone{loc: loc} }

// offsetByWall is the offset Java applies to a wall time (milliseconds, as
// if UTC), in milliseconds.
func (z *zone) offsetByWall(wall int64) int64 {
	// Start more than a day before: no offset is more than 14 hours away,
	// so the zone period there began before the wall time too.
	t := time.UnixMilli(wall - 30*3600*1000).In(z.loc)
	_, off := t.Zone()
	best := int64(off) * 1000
	// Offset changes are months apart; a handful of steps covers 30 hours
	// even for a zone with odd history.
	for n := 0; n < 16; n++ {
		_, end := t.ZoneBounds()
		if end.IsZero() {
			break
		}
		_, next := end.Zone()
		if end.UnixMilli()+int64(next)*1000 > wall {
			break
		}
		best = int64(next) * 1000
		t = end
	}
	return best
}
