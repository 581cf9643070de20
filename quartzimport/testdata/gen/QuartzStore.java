// QuartzStore fills a Quartz 2.3.2 JDBC job store with Quartz itself, so that
// `chime import quartz` is tested against rows, blobs and fire times Quartz
// wrote, without Java at test time.
//
// Regenerate (from the repository root; needs a JDK, Debian's
// libquartz2-java and libmariadb-java, and a MariaDB server):
//
//	make fixture/quartz-store
//
// It creates Quartz's MySQL DDL (tables_mysql_innodb.sql from the Quartz jar)
// in the empty database of the JDBC URL it is given, schedules the fixture's
// jobs, triggers and calendars through a StdScheduler with JobStoreTX that is
// never started (nothing fires), and writes, per trigger, the state Quartz
// stored and Quartz's own next fire times to the JSON file named by its
// second argument. The script then dumps the QRTZ_ tables.
//
// Every start time is fixed (most in 2030), so the output is the same
// whenever it is run. Run it with -Duser.timezone=UTC: a cron trigger without
// a time zone takes the JVM's.
import java.io.InputStream;
import java.io.PrintStream;
import java.lang.reflect.Field;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.Statement;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Calendar;
import java.util.Date;
import java.util.GregorianCalendar;
import java.util.List;
import java.util.Properties;
import java.util.TimeZone;

import org.quartz.CalendarIntervalScheduleBuilder;
import org.quartz.CronScheduleBuilder;
import org.quartz.CronTrigger;
import org.quartz.DailyTimeIntervalScheduleBuilder;
import org.quartz.DateBuilder;
import org.quartz.JobBuilder;
import org.quartz.JobDetail;
import org.quartz.JobKey;
import org.quartz.Scheduler;
import org.quartz.SimpleScheduleBuilder;
import org.quartz.SimpleTrigger;
import org.quartz.Trigger;
import org.quartz.TriggerBuilder;
import org.quartz.TriggerKey;
import org.quartz.impl.StdSchedulerFactory;
import org.quartz.impl.calendar.AnnualCalendar;
import org.quartz.impl.calendar.CronCalendar;
import org.quartz.impl.calendar.DailyCalendar;
import org.quartz.impl.calendar.HolidayCalendar;
import org.quartz.impl.calendar.MonthlyCalendar;
import org.quartz.impl.calendar.WeeklyCalendar;
import org.quartz.impl.matchers.GroupMatcher;
import org.quartz.spi.JobStore;
import org.quartz.spi.OperableTrigger;

public class QuartzStore {
    static final int FIRES = 10;

    static Date at(String iso) {
        return Date.from(Instant.parse(iso));
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 4) {
            System.err.println("usage: QuartzStore JDBC_URL USER PASSWORD EXPECTATIONS.json");
            System.exit(2);
        }
        String url = args[0], user = args[1], password = args[2];
        createTables(url, user, password);

        Properties p = new Properties();
        p.setProperty("org.quartz.scheduler.instanceName", "chimeImport");
        p.setProperty("org.quartz.scheduler.instanceId", "generator");
        p.setProperty("org.quartz.scheduler.skipUpdateCheck", "true");
        p.setProperty("org.quartz.threadPool.threadCount", "1");
        p.setProperty("org.quartz.jobStore.class", "org.quartz.impl.jdbcjobstore.JobStoreTX");
        p.setProperty("org.quartz.jobStore.driverDelegateClass", "org.quartz.impl.jdbcjobstore.StdJDBCDelegate");
        p.setProperty("org.quartz.jobStore.tablePrefix", "QRTZ_");
        p.setProperty("org.quartz.jobStore.dataSource", "store");
        p.setProperty("org.quartz.dataSource.store.provider", "hikaricp");
        p.setProperty("org.quartz.dataSource.store.driver", "org.mariadb.jdbc.Driver");
        p.setProperty("org.quartz.dataSource.store.URL", url);
        p.setProperty("org.quartz.dataSource.store.user", user);
        p.setProperty("org.quartz.dataSource.store.password", password);
        p.setProperty("org.quartz.dataSource.store.maxConnections", "2");
        Scheduler s = new StdSchedulerFactory(p).getScheduler();
        // Never started: nothing fires, the rows stay as scheduled.

        calendars(s);
        jobs(s);
        triggers(s);
        fired(s);

        try (PrintStream out = new PrintStream(args[3], "UTF-8")) {
            expectations(s, out);
        }
        s.shutdown(false);
    }

    // createTables runs Quartz's own MySQL/InnoDB DDL from its jar.
    static void createTables(String url, String user, String password) throws Exception {
        String ddl;
        try (InputStream in = QuartzStore.class.getClassLoader()
                .getResourceAsStream("org/quartz/impl/jdbcjobstore/tables_mysql_innodb.sql")) {
            ddl = new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
        StringBuilder b = new StringBuilder();
        for (String line : ddl.split("\n")) {
            if (!line.startsWith("#")) {
                b.append(line).append('\n');
            }
        }
        try (Connection c = DriverManager.getConnection(url, user, password); Statement st = c.createStatement()) {
            for (String stmt : b.toString().split(";")) {
                String t = stmt.trim();
                if (!t.isEmpty() && !t.equalsIgnoreCase("commit")) {
                    st.execute(t);
                }
            }
        }
    }

    static void calendars(Scheduler s) throws Exception {
        TimeZone berlin = TimeZone.getTimeZone("Europe/Berlin");

        HolidayCalendar holidays = new HolidayCalendar();
        holidays.setTimeZone(berlin);
        holidays.setDescription("Christmas and New Year");
        holidays.addExcludedDate(day(2030, 12, 25, berlin));
        holidays.addExcludedDate(day(2030, 12, 26, berlin));
        holidays.addExcludedDate(day(2031, 1, 1, berlin));
        s.addCalendar("holidays", holidays, false, false);

        AnnualCalendar annual = new AnnualCalendar();
        annual.setDayExcluded(calendarDay(12, 24), true);
        annual.setDayExcluded(calendarDay(5, 1), true);
        s.addCalendar("annual", annual, false, false);

        MonthlyCalendar monthly = new MonthlyCalendar();
        monthly.setDayExcluded(1, true);
        monthly.setDayExcluded(15, true);
        s.addCalendar("monthly", monthly, false, false);

        WeeklyCalendar weekly = new WeeklyCalendar(); // excludes Saturday and Sunday by default
        weekly.setDescription("weekends");
        s.addCalendar("weekly", weekly, false, false);

        DailyCalendar daily = new DailyCalendar("08:00", "17:00:00");
        daily.setTimeZone(berlin);
        s.addCalendar("daily", daily, false, false);

        DailyCalendar dailyInverted = new DailyCalendar("09:00", "12:00");
        dailyInverted.setInvertTimeRange(true);
        s.addCalendar("daily-inverted", dailyInverted, false, false);

        CronCalendar cron = new CronCalendar("* * 0-6 ? * *");
        s.addCalendar("cron", cron, false, false);

        // chime has no base calendars: the importer reports this one.
        HolidayCalendar chained = new HolidayCalendar(weekly);
        chained.addExcludedDate(day(2030, 7, 4, TimeZone.getTimeZone("UTC")));
        s.addCalendar("holidays-on-weekly", chained, false, false);
    }

    static Date day(int y, int m, int d, TimeZone tz) {
        Calendar c = new GregorianCalendar(tz);
        c.clear();
        c.set(y, m - 1, d);
        return c.getTime();
    }

    static Calendar calendarDay(int m, int d) {
        Calendar c = new GregorianCalendar(TimeZone.getTimeZone("UTC"));
        c.clear();
        c.set(2000, m - 1, d);
        return c;
    }

    static void jobs(Scheduler s) throws Exception {
        JobDetail report = JobBuilder.newJob(com.acme.ReportJob.class).withIdentity("daily-report", "reports")
            .withDescription("the daily sales report").storeDurably().requestRecovery()
            .usingJobData("command", "echo report for $DAY").build();
        s.addJob(report, false);

        JobDetail cleanup = JobBuilder.newJob(com.acme.CleanupJob.class).withIdentity("cleanup", "ops")
            .storeDurably().usingJobData("duration", "1s").usingJobData("fail", Boolean.FALSE).build();
        s.addJob(cleanup, false);

        // A class the map file does not name: --default-task decides.
        JobDetail audit = JobBuilder.newJob(com.acme.AuditJob.class).withIdentity("audit", "ops")
            .storeDurably().usingJobData("duration", "2s").build();
        s.addJob(audit, false);

        // Not concurrent, and its data saved after each run (annotations).
        JobDetail exclusive = JobBuilder.newJob(com.acme.ExclusiveJob.class).withIdentity("exclusive", "ops")
            .storeDurably().usingJobData("duration", "3s").build();
        s.addJob(exclusive, false);

        // Its data does not fit the shell task the map gives its class.
        JobDetail legacy = JobBuilder.newJob(com.acme.ReportJob.class).withIdentity("legacy-report", "reports")
            .storeDurably().usingJobData("reportName", "legacy").usingJobData("copies", 3).build();
        s.addJob(legacy, false);
    }

    static JobKey job(String group, String name) {
        return JobKey.jobKey(name, group);
    }

    static void triggers(Scheduler s) throws Exception {
        TimeZone berlin = TimeZone.getTimeZone("Europe/Berlin");
        JobKey report = job("reports", "daily-report"), cleanup = job("ops", "cleanup"), audit = job("ops", "audit"),
            legacy = job("reports", "legacy-report");

        // CRON triggers.
        add(s, TriggerBuilder.newTrigger().withIdentity("month-end", "reports").forJob(report).withPriority(7)
            .withDescription("the last Friday of every month")
            .startAt(at("2030-01-01T00:00:00Z"))
            .withSchedule(CronScheduleBuilder.cronSchedule("0 15 10 ? * 6L").inTimeZone(berlin)
                .withMisfireHandlingInstructionDoNothing()).build());
        add(s, TriggerBuilder.newTrigger().withIdentity("last-weekday", "reports").forJob(report)
            .startAt(at("2030-01-01T00:00:00Z")).endAt(at("2031-06-30T00:00:00Z"))
            .withSchedule(CronScheduleBuilder.cronSchedule("0 0 9 LW * ?")).build());
        add(s, TriggerBuilder.newTrigger().withIdentity("new-year", "ops").forJob(cleanup).withPriority(1)
            .startAt(at("2030-01-01T00:00:00Z"))
            .withSchedule(CronScheduleBuilder.cronSchedule("0 0 12 1 JAN ? 2031-2033")
                .inTimeZone(TimeZone.getTimeZone("Asia/Kolkata")).withMisfireHandlingInstructionFireAndProceed()).build());
        add(s, TriggerBuilder.newTrigger().withIdentity("exclusive-minutely", "ops").forJob(job("ops", "exclusive"))
            .startAt(at("2030-01-01T00:00:00Z"))
            .withSchedule(CronScheduleBuilder.cronSchedule("0 * * * * ?")).build());
        add(s, TriggerBuilder.newTrigger().withIdentity("ignore-misfires", "ops").forJob(cleanup)
            .startAt(at("2030-01-01T00:00:00Z"))
            .withSchedule(CronScheduleBuilder.cronSchedule("0 0/20 * * * ?")
                .withMisfireHandlingInstructionIgnoreMisfires()).build());
        // With its own JobDataMap: schedule params.
        add(s, TriggerBuilder.newTrigger().withIdentity("holiday-mornings", "reports").forJob(report)
            .startAt(at("2030-12-20T00:00:00Z")).modifiedByCalendar("holidays").usingJobData("command", "echo holiday run")
            .withSchedule(CronScheduleBuilder.cronSchedule("0 0 8 * * ?").inTimeZone(berlin)).build());

        // A calendar of each other kind.
        add(s, TriggerBuilder.newTrigger().withIdentity("annual-days", "cal").forJob(audit)
            .startAt(at("2030-04-28T00:00:00Z")).modifiedByCalendar("annual")
            .withSchedule(CronScheduleBuilder.cronSchedule("0 0 12 * * ?")).build());
        add(s, TriggerBuilder.newTrigger().withIdentity("monthly-days", "cal").forJob(audit)
            .startAt(at("2030-01-13T00:00:00Z")).modifiedByCalendar("monthly")
            .withSchedule(CronScheduleBuilder.cronSchedule("0 0 12 * * ?")).build());
        add(s, TriggerBuilder.newTrigger().withIdentity("weekdays", "cal").forJob(audit)
            .startAt(at("2030-01-03T00:00:00Z")).modifiedByCalendar("weekly")
            .withSchedule(SimpleScheduleBuilder.simpleSchedule().withIntervalInHours(12).repeatForever()).build());
        add(s, TriggerBuilder.newTrigger().withIdentity("outside-office-hours", "cal").forJob(audit)
            .startAt(at("2030-01-07T05:00:00Z")).modifiedByCalendar("daily")
            .withSchedule(SimpleScheduleBuilder.simpleSchedule().withIntervalInMinutes(150).repeatForever()).build());
        add(s, TriggerBuilder.newTrigger().withIdentity("mornings-only", "cal").forJob(audit)
            .startAt(at("2030-01-07T00:00:00Z")).modifiedByCalendar("daily-inverted")
            .withSchedule(CronScheduleBuilder.cronSchedule("0 0 * * * ?")).build());
        add(s, TriggerBuilder.newTrigger().withIdentity("not-at-night", "cal").forJob(audit)
            .startAt(at("2030-01-07T00:00:00Z")).modifiedByCalendar("cron")
            .withSchedule(CronScheduleBuilder.cronSchedule("0 0 0/3 * * ?")).build());
        add(s, TriggerBuilder.newTrigger().withIdentity("chained-calendar", "cal").forJob(audit)
            .startAt(at("2030-07-01T00:00:00Z")).modifiedByCalendar("holidays-on-weekly")
            .withSchedule(CronScheduleBuilder.cronSchedule("0 0 12 * * ?")).build());

        // SIMPLE triggers.
        add(s, TriggerBuilder.newTrigger().withIdentity("every-90s", "ops").forJob(cleanup).withPriority(9)
            .startAt(at("2030-03-01T00:00:00Z"))
            .withSchedule(SimpleScheduleBuilder.simpleSchedule().withIntervalInSeconds(90).withRepeatCount(9)
                .withMisfireHandlingInstructionNextWithRemainingCount()).build());
        add(s, TriggerBuilder.newTrigger().withIdentity("hourly-forever", "ops").forJob(cleanup)
            .startAt(at("2030-12-24T20:00:00Z")).modifiedByCalendar("holidays")
            .withSchedule(SimpleScheduleBuilder.simpleSchedule().withIntervalInHours(1).repeatForever()
                .withMisfireHandlingInstructionIgnoreMisfires()).build());
        add(s, TriggerBuilder.newTrigger().withIdentity("once", "ops").forJob(audit)
            .startAt(at("2030-06-01T06:30:00Z"))
            .withSchedule(SimpleScheduleBuilder.simpleSchedule().withMisfireHandlingInstructionFireNow()).build());
        add(s, TriggerBuilder.newTrigger().withIdentity("daily-until", "ops").forJob(audit)
            .startAt(at("2030-02-01T00:00:00Z")).endAt(at("2030-02-05T12:00:00Z"))
            .withSchedule(SimpleScheduleBuilder.simpleSchedule().withIntervalInHours(24).withRepeatCount(100)
                .withMisfireHandlingInstructionNowWithExistingCount()).build());
        add(s, TriggerBuilder.newTrigger().withIdentity("every-5m-now-remaining", "ops").forJob(audit)
            .startAt(at("2030-02-01T00:00:00Z"))
            .withSchedule(SimpleScheduleBuilder.simpleSchedule().withIntervalInMinutes(5).withRepeatCount(3)
                .withMisfireHandlingInstructionNowWithRemainingCount()).build());
        add(s, TriggerBuilder.newTrigger().withIdentity("every-5m-next-existing", "ops").forJob(audit)
            .startAt(at("2030-02-01T00:00:00Z"))
            .withSchedule(SimpleScheduleBuilder.simpleSchedule().withIntervalInMinutes(5).withRepeatCount(3)
                .withMisfireHandlingInstructionNextWithExistingCount()).build());

        // Paused: one trigger, and a whole group.
        add(s, TriggerBuilder.newTrigger().withIdentity("paused-cron", "reports").forJob(report)
            .startAt(at("2030-01-01T00:00:00Z"))
            .withSchedule(CronScheduleBuilder.cronSchedule("0 0 6 * * ?").inTimeZone(berlin)).build());
        s.pauseTrigger(TriggerKey.triggerKey("paused-cron", "reports"));
        add(s, TriggerBuilder.newTrigger().withIdentity("nightly", "batch").forJob(cleanup)
            .startAt(at("2030-01-01T00:00:00Z"))
            .withSchedule(CronScheduleBuilder.cronSchedule("0 30 1 * * ?")).build());
        s.pauseTriggers(GroupMatcher.triggerGroupEquals("batch"));

        // Past: Quartz would misfire it at start; so does chime at import.
        add(s, TriggerBuilder.newTrigger().withIdentity("overdue", "ops").forJob(cleanup)
            .startAt(at("2020-01-01T00:00:00Z"))
            .withSchedule(CronScheduleBuilder.cronSchedule("0 0 0 * * ?").withMisfireHandlingInstructionFireAndProceed()).build());
        add(s, TriggerBuilder.newTrigger().withIdentity("overdue-skip", "ops").forJob(cleanup)
            .startAt(at("2020-01-01T00:00:00Z"))
            .withSchedule(CronScheduleBuilder.cronSchedule("0 0 0 * * ?").withMisfireHandlingInstructionDoNothing()).build());

        // Not mappable.
        add(s, TriggerBuilder.newTrigger().withIdentity("every-3-months", "other").forJob(audit)
            .startAt(at("2030-01-31T10:00:00Z"))
            .withSchedule(CalendarIntervalScheduleBuilder.calendarIntervalSchedule().withIntervalInMonths(3)).build());
        add(s, TriggerBuilder.newTrigger().withIdentity("office-hours", "other").forJob(audit)
            .startAt(at("2030-01-01T00:00:00Z"))
            .withSchedule(DailyTimeIntervalScheduleBuilder.dailyTimeIntervalSchedule()
                .startingDailyAt(org.quartz.TimeOfDay.hourAndMinuteOfDay(9, 0))
                .endingDailyAt(org.quartz.TimeOfDay.hourAndMinuteOfDay(17, 0))
                .withIntervalInMinutes(30).onMondayThroughFriday()).build());
        add(s, TriggerBuilder.newTrigger().withIdentity("every-1500ms", "other").forJob(audit)
            .startAt(at("2030-01-01T00:00:00Z"))
            .withSchedule(SimpleScheduleBuilder.simpleSchedule().withIntervalInMilliseconds(1500).repeatForever()).build());
        add(s, TriggerBuilder.newTrigger().withIdentity("legacy", "reports").forJob(legacy)
            .startAt(at("2030-01-01T00:00:00Z"))
            .withSchedule(CronScheduleBuilder.cronSchedule("0 0 7 * * ?")).build());
    }

    static void add(Scheduler s, Trigger t) throws Exception {
        s.scheduleJob(t);
    }

    // fired advances two triggers as if they had fired, with Quartz's own
    // OperableTrigger.triggered, and stores them through the JobStore, so
    // their rows carry PREV_FIRE_TIME and TIMES_TRIGGERED as a running
    // scheduler leaves them. The scheduler is never started.
    static void fired(Scheduler s) throws Exception {
        JobStore store = jobStore(s);
        JobKey cleanup = job("ops", "cleanup");
        add(s, TriggerBuilder.newTrigger().withIdentity("fired-simple", "ops").forJob(cleanup)
            .startAt(at("2030-01-01T00:00:00Z"))
            .withSchedule(SimpleScheduleBuilder.simpleSchedule().withIntervalInMinutes(10).withRepeatCount(20)).build());
        add(s, TriggerBuilder.newTrigger().withIdentity("fired-cron", "ops").forJob(cleanup)
            .startAt(at("2030-01-01T00:00:00Z"))
            .withSchedule(CronScheduleBuilder.cronSchedule("0 0 10 ? * MON-FRI")).build());
        for (String[] k : new String[][] {{"ops", "fired-simple", "3"}, {"ops", "fired-cron", "2"}}) {
            OperableTrigger t = (OperableTrigger) s.getTrigger(TriggerKey.triggerKey(k[1], k[0]));
            for (int i = 0; i < Integer.parseInt(k[2]); i++) {
                t.triggered(null);
            }
            store.storeTrigger(t, true);
        }
    }

    static JobStore jobStore(Scheduler s) throws Exception {
        Field f = s.getClass().getDeclaredField("sched");
        f.setAccessible(true);
        Object qs = f.get(s);
        Field r = qs.getClass().getDeclaredField("resources");
        r.setAccessible(true);
        return ((org.quartz.core.QuartzSchedulerResources) r.get(qs)).getJobStore();
    }

    // expectations writes, per trigger as Quartz stored it, the next fire
    // times Quartz would fire: getNextFireTime, then triggered(calendar)
    // and again, FIRES times (TriggerUtils.computeFireTimes, but from the
    // stored state rather than from the start time, so fired triggers go
    // on where they are).
    static void expectations(Scheduler s, PrintStream out) throws Exception {
        List<String> rows = new ArrayList<>();
        List<String> groups = new ArrayList<>(s.getTriggerGroupNames());
        java.util.Collections.sort(groups);
        for (String g : groups) {
            List<TriggerKey> keys = new ArrayList<>(s.getTriggerKeys(GroupMatcher.triggerGroupEquals(g)));
            keys.sort(null);
            for (TriggerKey k : keys) {
                OperableTrigger t = (OperableTrigger) s.getTrigger(k);
                org.quartz.Calendar cal = t.getCalendarName() == null ? null : s.getCalendar(t.getCalendarName());
                StringBuilder b = new StringBuilder();
                b.append("  {\"group\": \"").append(k.getGroup()).append("\", \"name\": \"").append(k.getName())
                    .append("\", \"class\": \"").append(t.getClass().getSimpleName())
                    .append("\", \"state\": \"").append(s.getTriggerState(k)).append("\", \"next_fire_time\": ")
                    .append(ms(t.getNextFireTime())).append(", \"fires\": [");
                for (int i = 0; i < FIRES && t.getNextFireTime() != null; i++) {
                    if (i > 0) {
                        b.append(", ");
                    }
                    b.append(ms(t.getNextFireTime()));
                    t.triggered(cal);
                }
                b.append("]}");
                rows.add(b.toString());
            }
        }
        out.println("[");
        out.println(String.join(",\n", rows));
        out.println("]");
    }

    static String ms(Date d) {
        return d == null ? "null" : Long.toString(d.getTime());
    }
}
