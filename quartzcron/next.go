package quartzcron

import "time"

// maxSteps bounds one Next. Quartz's loop has no bound but the year 2999;
// a search that advances by at least a month every few steps reaches
// MaxYear from 1970 in well under this.
const maxSteps = 200_000

// Next returns the first fire time strictly after after, in the
// expression's zone, or the zero time when there is none (the years are
// exhausted, or the expression can never match). It is Quartz's
// getNextValidTimeAfter: fire times are whole seconds.
func (e *Expression) Next(after time.Time) time.Time {
	ms, ok := e.timeAfter(after.UnixMilli())
	if !ok {
		return time.Time{}
	}
	return time.UnixMilli(ms).In(e.loc)
}

// timeAfter is a port of Quartz 2.3.2's CronExpression.getTimeAfter, step
// by step, including the calls on the lenient calendar whose roll-overs
// decide what happens at month ends and daylight-saving changes.
func (e *Expression) timeAfter(afterMs int64) (int64, bool) {
	afterTime := afterMs + 1000 // the time *after* the given one
	cl := newCalendar(e.zone, afterTime)
	cl.set(calMilli, 0)

	for step := 0; step < maxSteps; step++ {
		if cl.get(calYear) > 2999 {
			return 0, false
		}

		// second
		sec := cl.get(calSecond)
		min := cl.get(calMinute)
		if v, ok := e.seconds.ceil(sec); ok {
			sec = v
		} else {
			sec = e.seconds.first()
			min++
			cl.set(calMinute, min)
		}
		cl.set(calSecond, sec)

		// minute
		min = cl.get(calMinute)
		hr := cl.get(calHour)
		t := -1
		if v, ok := e.minutes.ceil(min); ok {
			t = min
			min = v
		} else {
			min = e.minutes.first()
			hr++
		}
		if min != t {
			cl.set(calSecond, 0)
			cl.set(calMinute, min)
			setCalendarHour(cl, hr)
			continue
		}
		cl.set(calMinute, min)

		// hour
		hr = cl.get(calHour)
		day := cl.get(calDay)
		t = -1
		if v, ok := e.hours.ceil(hr); ok {
			t = hr
			hr = v
		} else {
			hr = e.hours.first()
			day++
		}
		if hr != t {
			cl.set(calSecond, 0)
			cl.set(calMinute, 0)
			cl.set(calDay, day)
			setCalendarHour(cl, hr)
			continue
		}
		cl.set(calHour, hr)

		// day
		day = cl.get(calDay)
		mon := cl.get(calMonth) + 1
		t = -1
		tmon := mon
		domSpec := !e.daysOfMonth.contains(noSpec)
		dowSpec := !e.daysOfWeek.contains(noSpec)
		switch {
		case domSpec && !dowSpec:
			st, stOK := e.daysOfMonth.ceil(day)
			switch {
			case e.lastdayOfMonth && !e.nearestWeekday:
				t = day
				day = lastDayOfMonth(mon, cl.get(calYear)) - e.lastdayOffset
				if t > day {
					mon++
					if mon > 12 {
						mon = 1
						tmon = 3333 // the month test below must fail
						cl.addYear(1)
					}
					day = 1
				}
			case e.lastdayOfMonth:
				t = day
				var nTime int64
				day, nTime = e.weekdayNear(cl, lastDayOfMonth(mon, cl.get(calYear))-e.lastdayOffset, mon, sec, min, hr)
				if nTime < afterTime {
					day = 1
					mon++
				}
			case e.nearestWeekday:
				t = day
				var nTime int64
				day, nTime = e.weekdayNear(cl, e.daysOfMonth.first(), mon, sec, min, hr)
				if nTime < afterTime {
					day = e.daysOfMonth.first()
					mon++
				}
			case stOK:
				t = day
				day = st
				// don't over-run a short month, such as February
				if day > lastDayOfMonth(mon, cl.get(calYear)) {
					day = e.daysOfMonth.first()
					mon++
				}
			default:
				day = e.daysOfMonth.first()
				mon++
			}
			if day != t || mon != tmon {
				cl.set(calSecond, 0)
				cl.set(calMinute, 0)
				cl.set(calHour, 0)
				cl.set(calDay, day)
				cl.set(calMonth, mon-1)
				continue
			}
		case dowSpec && !domSpec:
			switch {
			case e.lastdayOfWeek: // the last xxx day of the month
				dow := e.daysOfWeek.first()
				cDow := cl.dayOfWeek()
				daysToAdd := 0
				if cDow < dow {
					daysToAdd = dow - cDow
				}
				if cDow > dow {
					daysToAdd = dow + (7 - cDow)
				}
				lDay := lastDayOfMonth(mon, cl.get(calYear))
				if day+daysToAdd > lDay { // missed the last one already
					cl.set(calSecond, 0)
					cl.set(calMinute, 0)
					cl.set(calHour, 0)
					cl.set(calDay, 1)
					cl.set(calMonth, mon) // the next month
					continue
				}
				for day+daysToAdd+7 <= lDay {
					daysToAdd += 7
				}
				day += daysToAdd
				if daysToAdd > 0 {
					cl.set(calSecond, 0)
					cl.set(calMinute, 0)
					cl.set(calHour, 0)
					cl.set(calDay, day)
					cl.set(calMonth, mon-1)
					continue
				}
			case e.nthdayOfWeek != 0: // the nth xxx day of the month
				dow := e.daysOfWeek.first()
				cDow := cl.dayOfWeek()
				daysToAdd := 0
				if cDow < dow {
					daysToAdd = dow - cDow
				} else if cDow > dow {
					daysToAdd = dow + (7 - cDow)
				}
				dayShifted := daysToAdd > 0
				day += daysToAdd
				weekOfMonth := day / 7
				if day%7 > 0 {
					weekOfMonth++
				}
				daysToAdd = (e.nthdayOfWeek - weekOfMonth) * 7
				day += daysToAdd
				if daysToAdd < 0 || day > lastDayOfMonth(mon, cl.get(calYear)) {
					cl.set(calSecond, 0)
					cl.set(calMinute, 0)
					cl.set(calHour, 0)
					cl.set(calDay, 1)
					cl.set(calMonth, mon) // the next month
					continue
				} else if daysToAdd > 0 || dayShifted {
					cl.set(calSecond, 0)
					cl.set(calMinute, 0)
					cl.set(calHour, 0)
					cl.set(calDay, day)
					cl.set(calMonth, mon-1)
					continue
				}
			default:
				cDow := cl.dayOfWeek()
				dow := e.daysOfWeek.first()
				if v, ok := e.daysOfWeek.ceil(cDow); ok {
					dow = v
				}
				daysToAdd := 0
				if cDow < dow {
					daysToAdd = dow - cDow
				}
				if cDow > dow {
					daysToAdd = dow + (7 - cDow)
				}
				lDay := lastDayOfMonth(mon, cl.get(calYear))
				if day+daysToAdd > lDay { // past the end of the month
					cl.set(calSecond, 0)
					cl.set(calMinute, 0)
					cl.set(calHour, 0)
					cl.set(calDay, 1)
					cl.set(calMonth, mon) // the next month
					continue
				} else if daysToAdd > 0 {
					cl.set(calSecond, 0)
					cl.set(calMinute, 0)
					cl.set(calHour, 0)
					cl.set(calDay, day+daysToAdd)
					cl.set(calMonth, mon-1)
					continue
				}
			}
		default:
			// Parse refuses both or neither day field being '?'.
			return 0, false
		}
		cl.set(calDay, day)

		// month
		mon = cl.get(calMonth) + 1
		year := cl.get(calYear)
		t = -1
		if year > MaxYear {
			return 0, false
		}
		if v, ok := e.months.ceil(mon); ok {
			t = mon
			mon = v
		} else {
			mon = e.months.first()
			year++
		}
		if mon != t {
			cl.set(calSecond, 0)
			cl.set(calMinute, 0)
			cl.set(calHour, 0)
			cl.set(calDay, 1)
			cl.set(calMonth, mon-1)
			cl.set(calYear, year)
			continue
		}
		cl.set(calMonth, mon-1)

		// year
		year = cl.get(calYear)
		t = -1
		if v, ok := e.years.ceil(year); ok {
			t = year
			year = v
		} else {
			return 0, false // ran out of years
		}
		if year != t {
			cl.set(calSecond, 0)
			cl.set(calMinute, 0)
			cl.set(calHour, 0)
			cl.set(calDay, 1)
			cl.set(calMonth, 0)
			cl.set(calYear, year)
			continue
		}
		cl.set(calYear, year)
		return cl.time(), true
	}
	return 0, false
}

// weekdayNear moves day to the nearest weekday within its month, as
// Quartz does for W, and returns the candidate instant Quartz compares with
// the search start. Quartz uses a fresh calendar: set to midnight of the
// unadjusted day in cl's year, read for the day of the week (a read that
// normalizes it: day 0 becomes the previous month's last), then set to the
// adjusted day and the time found so far. The same sequence is replayed.
func (e *Expression) weekdayNear(cl *calendar, day, mon, sec, min, hr int) (int, int64) {
	tcal := newCalendar(e.zone, 0)
	tcal.set(calSecond, 0)
	tcal.set(calMinute, 0)
	tcal.set(calHour, 0)
	tcal.set(calDay, day)
	tcal.set(calMonth, mon-1)
	tcal.set(calYear, cl.get(calYear))
	ldom := lastDayOfMonth(mon, cl.get(calYear))
	switch dow := tcal.dayOfWeek(); {
	case dow == 7 && day == 1:
		day += 2
	case dow == 7:
		day--
	case dow == 1 && day == ldom:
		day -= 2
	case dow == 1:
		day++
	}
	tcal.set(calSecond, sec)
	tcal.set(calMinute, min)
	tcal.set(calHour, hr)
	tcal.set(calDay, day)
	tcal.set(calMonth, mon-1)
	return day, tcal.time()
}

// setCalendarHour sets the hour; when that hour does not exist (a
// daylight-saving gap), Quartz sets the hour after it.
func setCalendarHour(cal *calendar, hour int) {
	cal.set(calHour, hour)
	if cal.get(calHour) != hour && hour != 24 {
		cal.set(calHour, hour+1)
	}
}
