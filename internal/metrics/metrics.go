// Package metrics declares chime's Prometheus metrics in one place, so every
// name starts with chime_ and the API serves them all from one registry.
// Engines update them; nothing here reads the database.
//
// metrics imports only the Prometheus client.
package metrics

import (
	"regexp"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// Registry holds every chime metric plus the Go and process collectors.
var Registry = prometheus.NewRegistry()

var (
	// Fires counts job rows written by the schedule engine, by kind ("normal", "catch_up").
	Fires = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "chime_fires_total", Help: "Fires written as job rows, by kind (normal, catch_up).",
	}, []string{"kind"})
	// DuplicateFires counts fires that the unique key turned into no-ops.
	DuplicateFires = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "chime_fires_duplicate_total", Help: "Fires already written (by this or another node) and skipped by the unique key.",
	})
	// MisfiresCollapsed counts missed fires folded into a catch-up job.
	MisfiresCollapsed = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "chime_misfires_collapsed_total", Help: "Missed fires folded into a single catch-up job (fire_once).",
	})
	// MisfiresDropped counts missed fires not written (skip, catch-up window, fire_all cap).
	MisfiresDropped = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "chime_misfires_dropped_total", Help: "Missed fires dropped by policy, catch-up window or cap.",
	})
	// FireLateness observes commit time minus scheduled_at.
	FireLateness = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "chime_fire_lateness_seconds", Help: "Commit time of a fire minus its scheduled_at.",
		Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
	})
	// JobsFinished counts jobs reaching a final state, by status.
	JobsFinished = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "chime_jobs_finished_total", Help: "Jobs that reached a final status, and runs sent back to pending (status=retry, or snoozed by the task).",
	}, []string{"status"})
	// JobDuration observes Execute's run time.
	JobDuration = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "chime_job_duration_seconds", Help: "Run time of job attempts.",
		Buckets: prometheus.ExponentialBuckets(0.001, 4, 12),
	})
	// JobStartLateness observes started_at minus scheduled_at.
	JobStartLateness = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "chime_job_start_lateness_seconds", Help: "started_at minus scheduled_at of job attempts.",
		Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
	})
	// PoolBusy is the number of busy workers.
	PoolBusy = prometheus.NewGauge(prometheus.GaugeOpts{Name: "chime_pool_busy", Help: "Busy workers in the task pool."})
	// PoolBacklog is the jobs handed to this node past its free workers,
	// waiting for one (taskengine.Config.Backlog).
	PoolBacklog = prometheus.NewGauge(prometheus.GaugeOpts{Name: "chime_pool_backlog", Help: "Jobs queued on this node waiting for a free worker of the task pool."})
	// PoolCapacity is the pool size.
	PoolCapacity = prometheus.NewGauge(prometheus.GaugeOpts{Name: "chime_pool_capacity", Help: "Workers in the task pool."})
	// ClaimDuration observes the claim transaction.
	ClaimDuration = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "chime_claim_duration_seconds", Help: "Duration of one claim transaction.", Buckets: prometheus.DefBuckets,
	})
	// PollDuration observes one poll cycle (claim plus dispatch).
	PollDuration = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "chime_poll_duration_seconds", Help: "Duration of one poll of the job table.", Buckets: prometheus.DefBuckets,
	})
	// NotificationFailures counts emails that could not be sent after retries.
	NotificationFailures = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "chime_notification_failures_total", Help: "Notification emails that failed after retries.",
	})
	// JobsWaiting is the number of pending jobs that are due, counted by the
	// node holding the maintenance lease (0 on the others).
	JobsWaiting = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "chime_jobs_waiting",
		Help: "Pending jobs whose run_at has come: due but not yet claimed by a worker. Set by the maintenance leader, 0 on other nodes.",
	})
	// WorkflowRuns is the number of workflow runs by status, counted by the
	// node holding the maintenance lease (absent on the others).
	WorkflowRuns = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "chime_workflow_runs",
		Help: "Workflow runs by status (pending, running, paused, succeeded, failed, canceled). Set by the maintenance leader.",
	}, []string{"status"})
	// JobsHeld counts, per claim, the due jobs a limit held back, by kind
	// (chimedb.Limit*).
	JobsHeld = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "chime_jobs_held_total", Help: "Due jobs a claim left pending because of a limit or of placement (kind: queue_max_running, definition_max_running, queue_paused, queue_rate, definition_rate, invalid, placement: no live node has the tags the job requires), counted per claim.",
	}, []string{"kind"})
	// QueueJobs is the number of jobs per queue and state (running: queued,
	// running or paused; waiting: pending and due), set by the
	// maintenance leader.
	QueueJobs = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "chime_queue_jobs", Help: "Jobs per queue: state=running (queued, running or paused) and state=waiting (pending and due). Set by the maintenance leader.",
	}, []string{"queue", "state"})
	// Draining is 1 while this node's nodes.drain asks it not to claim.
	Draining = prometheus.NewGauge(prometheus.GaugeOpts{Name: "chime_node_draining",
		Help: "1 while this node is draining or drained (nodes.drain): it claims no jobs."})
	// IsLeader is 1 while this node holds the scheduler lease.
	IsLeader = prometheus.NewGauge(prometheus.GaugeOpts{Name: "chime_scheduler_leader", Help: "1 while this node holds the scheduler lease."})
	// AlertsSent and AlertsFailed count alert deliveries by channel name:
	// accepted by the receiver, and given up after retries or refused for good.
	AlertsSent = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "chime_alerts_sent_total", Help: "Alerts delivered, by channel.",
	}, []string{"channel"})
	AlertsFailed = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "chime_alerts_failed_total", Help: "Alerts given up (attempts used up or refused for good), by channel.",
	}, []string{"channel"})
	// TxRetries counts transactions the database aborted and chime ran
	// again: a steady rate of deadlocks means two paths lock rows in
	// different orders.
	TxRetries = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "chime_tx_retries_total", Help: "Transactions aborted by the database and run again, by reason (deadlock, lock_wait, serialization, lock_not_available, busy).",
	}, []string{"reason"})
	// SecretResolutions counts the jobs whose params refer to secrets, by
	// how resolving them on the worker ended: ok, refused (missing secret,
	// no key, a row that does not decrypt: the job failed at once) or
	// error (the table could not be read: an ordinary failed attempt).
	SecretResolutions = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "chime_secret_resolutions_total", Help: "Jobs whose secret references were resolved on this worker, by result (ok, refused, error).",
	}, []string{"result"})
)

// chimeCollectors are chime's own metrics, as registered.
var chimeCollectors = []prometheus.Collector{
	Fires, DuplicateFires, MisfiresCollapsed, MisfiresDropped, FireLateness,
	JobsFinished, JobDuration, JobStartLateness, PoolBusy, PoolBacklog, PoolCapacity,
	ClaimDuration, PollDuration, NotificationFailures, IsLeader, JobsWaiting,
	AlertsSent, AlertsFailed, WorkflowRuns, JobsHeld, QueueJobs, TxRetries, SecretResolutions, Draining,
}

func init() {
	Registry.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	Registry.MustRegister(chimeCollectors...)
}

var fqName = regexp.MustCompile(`fqName: "([^"]+)"`)

// Names lists the names of chime's metrics, those of vectors without a
// series yet included (Gather leaves them out): what dashboards and
// alerting rules may name. Histograms add _bucket, _sum and _count.
func Names() []string {
	ch := make(chan *prometheus.Desc, 64)
	go func() {
		for _, c := range chimeCollectors {
			c.Describe(ch)
		}
		close(ch)
	}()
	var out []string
	for d := range ch {
		if m := fqName.FindStringSubmatch(d.String()); m != nil {
			out = append(out, m[1])
		}
	}
	return out
}
