package quartzcron

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Field indexes, in the order of the expression.
const (
	fieldSecond = iota
	fieldMinute
	fieldHour
	fieldDayOfMonth
	fieldMonth
	fieldDayOfWeek
	fieldYear
)

// Quartz marks '*' and '?' inside the value sets with these numbers; the
// markers take part in the set lookups, so they are kept as Quartz keeps them.
const (
	allSpec = 99
	noSpec  = 98
)

// MaxYear is the last year an expression can fire in. Quartz computes it as
// the JVM's start year + 100 (2126 for a JVM started in 2026); chime pins it
// so that every node, whenever started, computes the same fire times.
const MaxYear = 2126

var monthNames = map[string]int{
	"JAN": 0, "FEB": 1, "MAR": 2, "APR": 3, "MAY": 4, "JUN": 5,
	"JUL": 6, "AUG": 7, "SEP": 8, "OCT": 9, "NOV": 10, "DEC": 11,
}

var dayNames = map[string]int{"SUN": 1, "MON": 2, "TUE": 3, "WED": 4, "THU": 5, "FRI": 6, "SAT": 7}

var fieldNames = [...]string{"seconds", "minutes", "hours", "day-of-month", "month", "day-of-week", "year"}

// ParseError is an expression Quartz refuses, with Quartz's message.
type ParseError struct {
	Expr string
	// Msg is the message of the ParseException Quartz 2.3.2 throws.
	Msg string
	// Offset is Quartz's error offset (-1 where Quartz gives none).
	Offset int
}

func (e *ParseError) Error() string { return e.Msg }

// parseFailure and javaFailure travel as panics inside the parser, which is
// a port of Quartz's: it throws from deep inside, and Quartz turns any
// runtime exception (an index out of range, a bad number) into a
// ParseException "Illegal cron expression format (...)". Parse recovers only
// these two types, so a real bug still crashes the tests and the fuzzer.
type parseFailure struct {
	msg string
	pos int
}

type javaFailure struct{ text string }

func fail(pos int, format string, args ...any) {
	panic(parseFailure{msg: fmt.Sprintf(format, args...), pos: pos})
}

// Expression is a parsed Quartz cron expression bound to a time zone.
type Expression struct {
	expr string
	loc  *time.Location
	zone *zone

	seconds, minutes, hours, daysOfMonth, months, daysOfWeek, years intSet

	lastdayOfWeek  bool
	nthdayOfWeek   int
	lastdayOfMonth bool
	nearestWeekday bool
	lastdayOffset  int
}

// Parse parses a Quartz 2.3.2 cron expression (6 or 7 fields: seconds,
// minutes, hours, day-of-month, month, day-of-week and an optional year)
// whose wall times are read in loc (nil means UTC). It accepts what
// Quartz's CronExpression accepts and refuses what it refuses, with the
// same message, except where noted in docs/quartz.md.
func Parse(expr string, loc *time.Location) (exp *Expression, err error) {
	if loc == nil {
		loc = time.UTC
	}
	e := &Expression{expr: strings.ToUpper(expr), loc: loc}
	defer func() {
		if r := recover(); r != nil {
			switch f := r.(type) {
			case parseFailure:
				exp, err = nil, &ParseError{Expr: expr, Msg: f.msg, Offset: f.pos}
			case javaFailure:
				exp, err = nil, &ParseError{Expr: expr, Msg: "Illegal cron expression format (" + f.text + ")", Offset: 0}
			default:
				panic(r)
			}
		}
	}()
	e.build()
	e.zone = zoneOf(loc)
	return e, nil
}

// String returns the expression as Quartz keeps it: upper-cased.
func (e *Expression) String() string { return e.expr }

// Location returns the zone the expression's wall times are read in.
func (e *Expression) Location() *time.Location { return e.loc }

func (e *Expression) set(field int) *intSet {
	switch field {
	case fieldSecond:
		return &e.seconds
	case fieldMinute:
		return &e.minutes
	case fieldHour:
		return &e.hours
	case fieldDayOfMonth:
		return &e.daysOfMonth
	case fieldMonth:
		return &e.months
	case fieldDayOfWeek:
		return &e.daysOfWeek
	default:
		return &e.years
	}
}

func (e *Expression) build() {
	field := fieldSecond
	for _, tok := range tokens(e.expr, " \t") {
		if field > fieldYear {
			break // Quartz ignores tokens after the year
		}
		tok = javaTrim(tok)
		if field == fieldDayOfMonth && strings.Contains(tok, "L") && len([]rune(tok)) > 1 && strings.Contains(tok, ",") {
			fail(-1, "Support for specifying 'L' and 'LW' with other days of the month is not implemented")
		}
		if field == fieldDayOfWeek && strings.Contains(tok, "L") && len([]rune(tok)) > 1 && strings.Contains(tok, ",") {
			fail(-1, "Support for specifying 'L' with other days of the week is not implemented")
		}
		if field == fieldDayOfWeek && strings.Count(tok, "#") > 1 {
			fail(-1, "Support for specifying multiple \"nth\" days is not implemented.")
		}
		for _, v := range tokens(tok, ",") {
			e.storeExpressionVals(0, []rune(v), field)
		}
		field++
	}
	if field <= fieldDayOfWeek {
		fail(len([]rune(e.expr)), "Unexpected end of expression.")
	}
	if field <= fieldYear {
		e.storeExpressionVals(0, []rune("*"), fieldYear)
	}
	domSpec := !e.daysOfMonth.contains(noSpec)
	dowSpec := !e.daysOfWeek.contains(noSpec)
	if domSpec == dowSpec {
		fail(0, "Support for specifying both a day-of-week AND a day-of-month parameter is not implemented.")
	}
	// Quartz accepts a field that yields no value at all (a lone "L" in the
	// seconds, say) and then throws NoSuchElementException at the first
	// fire-time computation; refusing it here is the useful equivalent.
	for f := fieldSecond; f <= fieldYear; f++ {
		if f == fieldDayOfMonth && e.lastdayOfMonth {
			continue
		}
		if e.set(f).empty() {
			fail(-1, "Illegal cron expression format (no value in the %s field)", fieldNames[f])
		}
	}
	// Quartz accepts "0W" and then loops for ever looking for its first fire
	// time: refused here, with the message Quartz gives a day 0 elsewhere.
	if e.nearestWeekday && !e.lastdayOfMonth && e.daysOfMonth.first() < 1 {
		fail(-1, "Day of month values must be between 1 and 31")
	}
	// The same loop happens for L-nW once a month has n days or fewer
	// (L-28W in February).
	if e.nearestWeekday && e.lastdayOfMonth && e.lastdayOffset >= 28 {
		fail(-1, "Offset from last day must be <= 27 with 'W'")
	}
}

func (e *Expression) storeExpressionVals(pos int, s []rune, typ int) int {
	incr := 0
	i := skipWhiteSpace(pos, s)
	if i >= len(s) {
		return i
	}
	c := s[i]
	str := string(s)
	if c >= 'A' && c <= 'Z' && str != "L" && str != "LW" && !isLastOffset(s) {
		sub := substring(s, i, i+3)
		sval, eval := -1, -1
		switch typ {
		case fieldMonth:
			sval = monthNumber(sub) + 1
			if sval <= 0 {
				fail(i, "Invalid Month value: '%s'", sub)
			}
			if len(s) > i+3 {
				c = s[i+3]
				if c == '-' {
					i += 4
					sub = substring(s, i, i+3)
					eval = monthNumber(sub) + 1
					if eval <= 0 {
						fail(i, "Invalid Month value: '%s'", sub)
					}
				}
			}
		case fieldDayOfWeek:
			sval = dayNumber(sub)
			if sval < 0 {
				fail(i, "Invalid Day-of-Week value: '%s'", sub)
			}
			if len(s) > i+3 {
				c = s[i+3]
				switch c {
				case '-':
					i += 4
					sub = substring(s, i, i+3)
					eval = dayNumber(sub)
					if eval < 0 {
						fail(i, "Invalid Day-of-Week value: '%s'", sub)
					}
				case '#':
					i += 4
					n, ok := nth(s, i)
					if !ok {
						fail(i, "A numeric value between 1 and 5 must follow the '#' option")
					}
					e.nthdayOfWeek = n
				case 'L':
					e.lastdayOfWeek = true
					i++
				}
			}
		default:
			fail(i, "Illegal characters for this position: '%s'", sub)
		}
		if eval != -1 {
			incr = 1
		}
		e.addToSet(sval, eval, incr, typ)
		return i + 3
	}

	if c == '?' {
		i++
		if i+1 < len(s) && s[i] != ' ' && s[i+1] != '\t' {
			fail(i, "Illegal character after '?': %c", s[i])
		}
		if typ != fieldDayOfWeek && typ != fieldDayOfMonth {
			fail(i, "'?' can only be specified for Day-of-Month or Day-of-Week.")
		}
		if typ == fieldDayOfWeek && !e.lastdayOfMonth {
			if e.daysOfMonth.empty() {
				panic(javaFailure{"java.util.NoSuchElementException"})
			}
			if e.daysOfMonth.last() == noSpec {
				fail(i, "'?' can only be specified for Day-of-Month -OR- Day-of-Week.")
			}
		}
		e.addToSet(noSpec, -1, 0, typ)
		return i
	}

	if c == '*' || c == '/' {
		if c == '*' && i+1 >= len(s) {
			e.addToSet(allSpec, -1, incr, typ)
			return i + 1
		} else if c == '/' && (i+1 >= len(s) || s[i+1] == ' ' || s[i+1] == '\t') {
			fail(i, "'/' must be followed by an integer.")
		} else if c == '*' {
			i++
		}
		c = charAt(s, i)
		if c == '/' {
			i++
			if i >= len(s) {
				fail(i, "Unexpected end of string.")
			}
			// Quartz reads the step up to the end of the value (its
			// findNextWhiteSpace never stops early).
			incr = parseInt(string(s[i:]))
			i++
			if incr > 10 {
				i++
			}
			checkIncrementRange(incr, typ, i)
		} else {
			incr = 1
		}
		e.addToSet(allSpec, -1, incr, typ)
		return i
	} else if c == 'L' {
		i++
		if typ == fieldDayOfMonth {
			e.lastdayOfMonth = true
		}
		if typ == fieldDayOfWeek {
			e.addToSet(7, 7, 0, typ)
		}
		if typ == fieldDayOfMonth && len(s) > i {
			c = s[i]
			if c == '-' {
				v, p := getValue(0, s, i+1)
				e.lastdayOffset = v
				if e.lastdayOffset > 30 {
					fail(i+1, "Offset from last day must be <= 30")
				}
				i = p
			}
			if len(s) > i {
				c = s[i]
				if c == 'W' {
					e.nearestWeekday = true
					i++
				}
			}
		}
		return i
	} else if c >= '0' && c <= '9' {
		val := int(c - '0')
		i++
		if i >= len(s) {
			e.addToSet(val, -1, -1, typ)
		} else {
			c = s[i]
			if c >= '0' && c <= '9' {
				val, i = getValue(val, s, i)
			}
			return e.checkNext(i, s, val, typ)
		}
	} else {
		fail(i, "Unexpected character: %c", c)
	}
	return i
}

func checkIncrementRange(incr, typ, pos int) {
	switch {
	case incr > 59 && (typ == fieldSecond || typ == fieldMinute):
		fail(pos, "Increment > 60 : %d", incr)
	case incr > 23 && typ == fieldHour:
		fail(pos, "Increment > 24 : %d", incr)
	case incr > 31 && typ == fieldDayOfMonth:
		fail(pos, "Increment > 31 : %d", incr)
	case incr > 7 && typ == fieldDayOfWeek:
		fail(pos, "Increment > 7 : %d", incr)
	case incr > 12 && typ == fieldMonth:
		fail(pos, "Increment > 12 : %d", incr)
	}
}

func (e *Expression) checkNext(pos int, s []rune, val, typ int) int {
	end := -1
	i := pos
	if i >= len(s) {
		e.addToSet(val, end, -1, typ)
		return i
	}
	c := s[pos]
	switch c {
	case 'L':
		if typ == fieldDayOfWeek {
			if val < 1 || val > 7 {
				fail(-1, "Day-of-Week values must be between 1 and 7")
			}
			e.lastdayOfWeek = true
		} else {
			fail(i, "'L' option is not valid here. (pos=%d)", i)
		}
		e.set(typ).add(val)
		return i + 1
	case 'W':
		if typ == fieldDayOfMonth {
			e.nearestWeekday = true
		} else {
			fail(i, "'W' option is not valid here. (pos=%d)", i)
		}
		if val > 31 {
			fail(i, "The 'W' option does not make sense with values larger than 31 (max number of days in a month)")
		}
		e.set(typ).add(val)
		return i + 1
	case '#':
		if typ != fieldDayOfWeek {
			fail(i, "'#' option is not valid here. (pos=%d)", i)
		}
		i++
		n, ok := nth(s, i)
		if !ok {
			fail(i, "A numeric value between 1 and 5 must follow the '#' option")
		}
		e.nthdayOfWeek = n
		e.set(typ).add(val)
		return i + 1
	case '-':
		i++
		c = charAt(s, i)
		v := parseInt(string(c))
		end = v
		i++
		if i >= len(s) {
			e.addToSet(val, end, 1, typ)
			return i
		}
		c = s[i]
		if c >= '0' && c <= '9' {
			end, i = getValue(v, s, i)
		}
		if i < len(s) && s[i] == '/' {
			i++
			c = charAt(s, i)
			v2 := parseInt(string(c))
			i++
			if i >= len(s) {
				e.addToSet(val, end, v2, typ)
				return i
			}
			c = s[i]
			if c >= '0' && c <= '9' {
				v3, p := getValue(v2, s, i)
				e.addToSet(val, end, v3, typ)
				return p
			}
			e.addToSet(val, end, v2, typ)
			return i
		}
		e.addToSet(val, end, 1, typ)
		return i
	case '/':
		if i+1 >= len(s) || s[i+1] == ' ' || s[i+1] == '\t' {
			fail(i, "'/' must be followed by an integer.")
		}
		i++
		c = s[i]
		v2 := parseInt(string(c))
		i++
		if i >= len(s) {
			checkIncrementRange(v2, typ, i)
			e.addToSet(val, end, v2, typ)
			return i
		}
		c = s[i]
		if c >= '0' && c <= '9' {
			v3, p := getValue(v2, s, i)
			checkIncrementRange(v3, typ, i)
			e.addToSet(val, end, v3, typ)
			return p
		}
		fail(i, "Unexpected character '%c' after '/'", c)
	}
	// Quartz takes the number and ignores whatever follows it ("5X" is 5).
	e.addToSet(val, end, 0, typ)
	return i + 1
}

func (e *Expression) addToSet(val, end, incr, typ int) {
	set := e.set(typ)
	switch typ {
	case fieldSecond, fieldMinute:
		if (val < 0 || val > 59 || end > 59) && val != allSpec {
			fail(-1, "Minute and Second values must be between 0 and 59")
		}
	case fieldHour:
		if (val < 0 || val > 23 || end > 23) && val != allSpec {
			fail(-1, "Hour values must be between 0 and 23")
		}
	case fieldDayOfMonth:
		if (val < 1 || val > 31 || end > 31) && val != allSpec && val != noSpec {
			fail(-1, "Day of month values must be between 1 and 31")
		}
	case fieldMonth:
		if (val < 1 || val > 12 || end > 12) && val != allSpec {
			fail(-1, "Month values must be between 1 and 12")
		}
	case fieldDayOfWeek:
		if (val == 0 || val > 7 || end > 7) && val != allSpec && val != noSpec {
			fail(-1, "Day-of-Week values must be between 1 and 7")
		}
	}

	if (incr == 0 || incr == -1) && val != allSpec {
		if val != -1 {
			set.add(val)
		} else {
			set.add(noSpec)
		}
		return
	}

	startAt, stopAt := val, end
	if val == allSpec && incr <= 0 {
		incr = 1
		set.add(allSpec) // Quartz's marker, besides the values
	}
	lo, hi := 0, 0
	switch typ {
	case fieldSecond, fieldMinute:
		lo, hi = 0, 59
	case fieldHour:
		lo, hi = 0, 23
	case fieldDayOfMonth:
		lo, hi = 1, 31
	case fieldMonth:
		lo, hi = 1, 12
	case fieldDayOfWeek:
		lo, hi = 1, 7
	case fieldYear:
		lo, hi = 1970, MaxYear
	}
	if stopAt == -1 {
		stopAt = hi
	}
	if startAt == -1 || startAt == allSpec {
		startAt = lo
	}

	// A range whose end is before its start wraps around (22-2, NOV-FEB).
	max := -1
	if stopAt < startAt {
		switch typ {
		case fieldSecond, fieldMinute:
			max = 60
		case fieldHour:
			max = 24
		case fieldMonth:
			max = 12
		case fieldDayOfWeek:
			max = 7
		case fieldDayOfMonth:
			max = 31
		case fieldYear:
			panic(javaFailure{"java.lang.IllegalArgumentException: Start year must be less than stop year"})
		}
		stopAt += max
	}
	if typ == fieldYear && stopAt > MaxYear {
		// A year after MaxYear never fires, so it need not be stored; this
		// also bounds the loop for a hostile "1970-2000000000".
		stopAt = MaxYear
	}
	for i := startAt; i <= stopAt; i += incr {
		if max == -1 {
			set.add(i)
			continue
		}
		i2 := i % max
		if i2 == 0 && (typ == fieldMonth || typ == fieldDayOfWeek || typ == fieldDayOfMonth) {
			i2 = max
		}
		set.add(i2)
	}
}

// isLastOffset reports whether s matches Quartz's ^L-[0-9]*[W]? in full.
func isLastOffset(s []rune) bool {
	if len(s) < 2 || s[0] != 'L' || s[1] != '-' {
		return false
	}
	rest := s[2:]
	if len(rest) > 0 && rest[len(rest)-1] == 'W' {
		rest = rest[:len(rest)-1]
	}
	for _, r := range rest {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// nth parses what follows '#' the way Quartz does: all the rest, 1 to 5.
func nth(s []rune, i int) (n int, ok bool) {
	defer func() {
		if r := recover(); r != nil {
			if _, java := r.(javaFailure); !java {
				panic(r)
			}
			n, ok = 0, false
		}
	}()
	n = parseInt(string(substringFrom(s, i)))
	return n, n >= 1 && n <= 5
}

// getValue reads the digits from s[i] on after the digits of v, as Quartz's
// getValue; the position it returns is one past the end when the digits
// run to the end of s.
func getValue(v int, s []rune, i int) (value, pos int) {
	c := charAt(s, i)
	digits := []rune(strconv.Itoa(v))
	for c >= '0' && c <= '9' {
		digits = append(digits, c)
		i++
		if i >= len(s) {
			break
		}
		c = s[i]
	}
	pos = i
	if i >= len(s) {
		pos = i + 1
	}
	return parseInt(string(digits)), pos
}

func skipWhiteSpace(i int, s []rune) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
		i++
	}
	return i
}

func monthNumber(s string) int {
	if v, ok := monthNames[s]; ok {
		return v
	}
	return -1
}

func dayNumber(s string) int {
	if v, ok := dayNames[s]; ok {
		return v
	}
	return -1
}

// The helpers below behave like the Java methods the parser relies on,
// failing with the same exception text.

func charAt(s []rune, i int) rune {
	if i < 0 || i >= len(s) {
		panic(javaFailure{fmt.Sprintf("java.lang.StringIndexOutOfBoundsException: String index out of range: %d", i)})
	}
	return s[i]
}

func substring(s []rune, begin, end int) string {
	if begin < 0 || end > len(s) || begin > end {
		panic(javaFailure{fmt.Sprintf("java.lang.StringIndexOutOfBoundsException: begin %d, end %d, length %d", begin, end, len(s))})
	}
	return string(s[begin:end])
}

func substringFrom(s []rune, begin int) []rune {
	if begin < 0 || begin > len(s) {
		panic(javaFailure{fmt.Sprintf("java.lang.StringIndexOutOfBoundsException: begin %d, end %d, length %d", begin, len(s), len(s))})
	}
	return s[begin:]
}

// parseInt is Integer.parseInt: an optional sign, decimal digits, 32 bits.
func parseInt(s string) int {
	bad := func() {
		panic(javaFailure{"java.lang.NumberFormatException: For input string: \"" + s + "\""})
	}
	body := s
	if body != "" && (body[0] == '+' || body[0] == '-') {
		body = body[1:]
	}
	if body == "" {
		bad()
	}
	for _, r := range body {
		if r < '0' || r > '9' {
			bad()
		}
	}
	v, err := strconv.ParseInt(s, 10, 32)
	if err != nil {
		bad()
	}
	return int(v)
}

// tokens splits s like java.util.StringTokenizer: on any of delims, without
// empty tokens.
func tokens(s, delims string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return strings.ContainsRune(delims, r) })
}

// javaTrim is String.trim: it strips every character up to U+0020.
func javaTrim(s string) string {
	return strings.TrimFunc(s, func(r rune) bool { return r <= ' ' })
}
