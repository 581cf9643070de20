package quartzimport

import (
	"encoding/json"
	"errors"

	"github.com/chimesched/chime/models"
)

// QuartzCalendar is a Quartz calendar decoded from QRTZ_CALENDARS.CALENDAR,
// in chime's terms: Kind, Definition and Timezone fill a calendars row.
type QuartzCalendar struct {
	// Class is the Java class, e.g. org.quartz.impl.calendar.HolidayCalendar.
	Class string
	// Kind and Definition are chime's (docs/quartz.md "Calendars"); the
	// definition passes trigger.ParseCalendar.
	Kind       models.CalendarKind
	Definition json.RawMessage
	// Timezone is the IANA name of the calendar's zone; "" when it had
	// none, so that Quartz used its JVM's default zone (the importer
	// reports it; chime reads such a calendar in UTC).
	Timezone    string
	Description string
	// Base is the calendar's base calendar (Quartz excludes what either
	// excludes); chime has no chaining, so the importer reports it.
	Base *QuartzCalendar
	// Notes are what chime cannot say exactly as Quartz did, in words for
	// the import report (e.g. a daily range with milliseconds).
	Notes []string
}

// DecodeCalendar reads a serialized org.quartz.Calendar, as Quartz's
// StdJDBCDelegate stores it in QRTZ_CALENDARS.CALENDAR.
func DecodeCalendar(blob []byte) (*QuartzCalendar, error) {
	return nil, errors.New("quartz calendar: not implemented yet")
}

// DecodeJobDataMap reads QRTZ_JOB_DETAILS.JOB_DATA or QRTZ_TRIGGERS.JOB_DATA:
// a serialized org.quartz.JobDataMap, or java.util.Properties text when the
// store ran with org.quartz.jobStore.useProperties=true. An empty or NULL
// blob is an empty map.
func DecodeJobDataMap(blob []byte) (map[string]any, error) {
	return nil, errors.New("quartz job data: not implemented yet")
}
