package scheduleengine

import (
	"encoding/binary"
	"hash/maphash"
	"time"

	"github.com/chimesched/chime/models"
)

// rowSum stands for a schedules row in its entry: every sync re-reads
// rows, and one whose sum matches its entry's needs no new entry. An entry
// used to keep a copy of the whole row for that comparison, a third of its
// size; the sum is 16 bytes. The seeds are random per process, so no row
// can be written to collide with another, and two different rows share a
// sum with a chance of 2⁻¹²⁸.
type rowSum [2]uint64

var rowSeeds = [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}

// sumOf sums every field of s. TestRowSumCoversSchedule fails when
// models.Schedule gains a field this leaves out.
func sumOf(s *models.Schedule) rowSum {
	var buf [320]byte
	b := buf[:0]
	b = binary.LittleEndian.AppendUint64(b, uint64(s.ID))
	b = appendString(b, s.Name)
	b = binary.LittleEndian.AppendUint64(b, uint64(s.JobDefinitionID))
	b = appendInt64Ptr(b, s.WorkflowID)
	b = appendString(b, string(s.ScheduleType))
	b = appendStringPtr(b, s.CronExpr)
	b = appendString(b, string(s.CronSyntax))
	b = appendString(b, string(s.DSTPolicy))
	b = appendInt64Ptr(b, s.CalendarID)
	b = appendIntPtr(b, s.IntervalSeconds)
	b = appendTimePtr(b, s.RunAt)
	b = appendString(b, s.Timezone)
	b = appendTimePtr(b, s.StartAt)
	b = appendTimePtr(b, s.EndAt)
	b = appendIntPtr(b, s.MaxRuns)
	b = appendString(b, string(s.MisfirePolicy))
	b = appendIntPtr(b, s.CatchupWindowSeconds)
	b = appendString(b, string(s.Concurrency))
	b = appendString(b, string(s.Params))
	b = appendString(b, string(s.Status))
	b = appendString(b, s.StatusReason)
	b = appendIntPtr(b, s.Priority)
	b = appendStringPtr(b, s.Queue)
	b = appendStringPtr(b, s.RequiredTags)
	b = appendTime(b, s.CreatedAt)
	b = appendTime(b, s.UpdatedAt)
	b = appendString(b, s.Unreadable)
	return rowSum{maphash.Bytes(rowSeeds[0], b), maphash.Bytes(rowSeeds[1], b)}
}

// Each value is written with its length or a presence byte, so that two
// rows whose fields differ never write the same bytes.

func appendString(b []byte, s string) []byte {
	b = binary.LittleEndian.AppendUint64(b, uint64(len(s)))
	return append(b, s...)
}

func appendStringPtr(b []byte, s *string) []byte {
	if s == nil {
		return append(b, 0)
	}
	return appendString(append(b, 1), *s)
}

func appendInt64Ptr(b []byte, n *int64) []byte {
	if n == nil {
		return append(b, 0)
	}
	return binary.LittleEndian.AppendUint64(append(b, 1), uint64(*n))
}

func appendIntPtr(b []byte, n *int) []byte {
	if n == nil {
		return append(b, 0)
	}
	return binary.LittleEndian.AppendUint64(append(b, 1), uint64(*n))
}

// appendTime writes the instant, not its zone: the engine reads times as
// instants (a time's zone is the timezone column's business).
func appendTime(b []byte, t time.Time) []byte {
	b = binary.LittleEndian.AppendUint64(b, uint64(t.Unix()))
	return binary.LittleEndian.AppendUint32(b, uint32(t.Nanosecond()))
}

func appendTimePtr(b []byte, t *time.Time) []byte {
	if t == nil {
		return append(b, 0)
	}
	return appendTime(append(b, 1), *t)
}
