package quartzcron

import "time"

// Calendar fields, as java.util.Calendar numbers them for Quartz's use.
const (
	calYear = iota
	calMonth
	calDay
	calHour
	calMinute
	calSecond
	calMilli
	calFields
)

// calendar is the lenient java.util.GregorianCalendar that Quartz's
// getTimeAfter drives: set stores a field as given, out of range or not; the
// next get (or getTime) rolls the fields over into one wall time (minute 60
// is the next hour, day 0 the last of the previous month), turns it into an
// instant by the zone's wall-time rule and reads the fields back from it.
// Quartz's behaviour at month ends and daylight-saving changes comes from
// exactly this, so it is reproduced rather than redesigned.
type calendar struct {
	z     *zone
	f     [calFields]int64
	ms    int64
	dirty bool
}

func newCalendar(z *zone, ms int64) *calendar {
	c := &calendar{z: z}
	c.setTime(ms)
	return c
}

func (c *calendar) setTime(ms int64) {
	c.ms = ms
	c.dirty = false
	t := time.UnixMilli(ms).In(c.z.loc)
	c.f = [calFields]int64{
		int64(t.Year()), int64(t.Month()) - 1, int64(t.Day()),
		int64(t.Hour()), int64(t.Minute()), int64(t.Second()), int64(t.Nanosecond() / 1e6),
	}
}

func (c *calendar) complete() {
	if !c.dirty {
		return
	}
	y := c.f[calYear] + floorDiv(c.f[calMonth], 12)
	m := floorMod(c.f[calMonth], 12)
	days := daysFromCivil(y, m+1, 1) + c.f[calDay] - 1
	wall := days*86400000 + ((c.f[calHour]*60+c.f[calMinute])*60+c.f[calSecond])*1000 + c.f[calMilli]
	c.setTime(wall - c.z.offsetByWall(wall))
}

// set stores a field as given. Java normalizes once for all the fields set
// since the last get, so set must not complete the pending ones: minute 60
// set before hour 5 is 06:00, not 05:00.
func (c *calendar) set(field int, v int) {
	c.f[field] = int64(v)
	c.dirty = true
}

func (c *calendar) get(field int) int {
	c.complete()
	return int(c.f[field])
}

func (c *calendar) time() int64 {
	c.complete()
	return c.ms
}

// dayOfWeek is Calendar.DAY_OF_WEEK: 1 = Sunday ... 7 = Saturday.
func (c *calendar) dayOfWeek() int {
	c.complete()
	return int(floorMod(daysFromCivil(c.f[calYear], c.f[calMonth]+1, c.f[calDay])+4, 7)) + 1
}

// addYear is Calendar.add(YEAR, n): the day is pinned to the new month's
// length.
func (c *calendar) addYear(n int) {
	c.complete()
	c.f[calYear] += int64(n)
	if ml := int64(lastDayOfMonth(int(c.f[calMonth])+1, int(c.f[calYear]))); c.f[calDay] > ml {
		c.f[calDay] = ml
	}
	c.dirty = true
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

func floorMod(a, b int64) int64 { return a - floorDiv(a, b)*b }

// daysFromCivil counts days from 1970-01-01 to y-m-d on the proleptic
// Gregorian calendar (m 1..12, d 1..31).
func daysFromCivil(y, m, d int64) int64 {
	if m <= 2 {
		y--
	}
	era := floorDiv(y, 400)
	yoe := y - era*400
	mp := (m + 9) % 12
	doy := (153*mp+2)/5 + d - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return era*146097 + doe - 719468
}

func isLeapYear(y int) bool { return (y%4 == 0 && y%100 != 0) || y%400 == 0 }

func lastDayOfMonth(month, year int) int {
	switch month {
	case 2:
		if isLeapYear(year) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	default:
		return 31
	}
}
