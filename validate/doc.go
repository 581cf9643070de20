// Package validate holds the rules a row must meet before any of chime's
// doors writes it to job_definitions, schedules or calendars: the API's
// handlers (and through them the console, whose forms are API calls, and
// the CLI, a client of the API) and `chime import quartz`. One set of
// rules for every door, so a row one door writes another would accept.
//
// The checks are the database's limits said in words (column sizes, INT
// ranges, the priority CHECK), what the engines need to run a row (task
// types a node registers, params a task accepts, a trigger the schedule
// engine can compute: trigger.New and trigger.ParseCalendar have the last
// word), and text any database can store (no NUL, which PostgreSQL
// refuses). A refusal is an *Error naming the field at fault by its JSON
// key, the field the API's 400 answers name.
//
// Each table has a request type, the writable part of a row as the API's
// JSON carries it (DefinitionRequest, ScheduleRequest, CalendarRequest),
// whose Validate method turns it into the row to store; and a function
// for writers that hold a row instead (Definition, Schedule, Calendar),
// which checks it as a create request carrying it would be checked.
//
// validate imports models, tasks and trigger only: no database, no HTTP.
package validate
