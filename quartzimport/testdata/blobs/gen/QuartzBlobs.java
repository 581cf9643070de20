// QuartzBlobs writes the BLOBs a Quartz 2.3.2 JDBC job store holds, made by
// real Quartz, and what Quartz itself says about them, so that the Go
// decoder in quartzimport is tested against Java without Java at test time.
//
// Regenerate (from the repository root; needs a JDK and Debian's
// libquartz2-java, 2.3.2):
//
//	make fixture/quartzblobs
//
// It writes into quartzimport/testdata/blobs/:
//   - cal_*.bin: a Quartz calendar serialized as StdJDBCDelegate stores it
//     in QRTZ_CALENDARS.CALENDAR (an ObjectOutputStream of the calendar);
//   - jobdata_*.bin: a JobDataMap as StdJDBCDelegate stores it in
//     QRTZ_JOB_DETAILS.JOB_DATA: an ObjectOutputStream of the map, or with
//     useProperties=true the map's Properties.store(out, "") text;
//   - expect.json: for every calendar, isTimeIncluded at every probe
//     instant (one '1' or '0' per probe) and getNextIncludedTime from some
//     excluded instants; for every map, its entries as JSON, or the class
//     a reader must refuse.
//
// The JVM's default zone is set to Asia/Kolkata first: a calendar with no
// zone of its own is read by Quartz in that default, so the fixtures show
// what a zone-less calendar made on a non-UTC machine looks like.
import java.io.ByteArrayOutputStream;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.ObjectOutputStream;
import java.io.PrintStream;
import java.io.Serializable;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.time.LocalDate;
import java.time.LocalTime;
import java.time.ZoneId;
import java.time.ZonedDateTime;
import java.util.ArrayList;
import java.util.Calendar;
import java.util.Date;
import java.util.GregorianCalendar;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TimeZone;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;

import org.quartz.JobDataMap;
import org.quartz.impl.calendar.AnnualCalendar;
import org.quartz.impl.calendar.BaseCalendar;
import org.quartz.impl.calendar.CronCalendar;
import org.quartz.impl.calendar.DailyCalendar;
import org.quartz.impl.calendar.HolidayCalendar;
import org.quartz.impl.calendar.MonthlyCalendar;
import org.quartz.impl.calendar.WeeklyCalendar;

public class QuartzBlobs {
    static final String JVM_ZONE = "Asia/Kolkata";
    // America/Havana: its spring-forward skips midnight (00:00 -> 01:00).
    static final String[] ZONES = {"UTC", "Europe/Berlin", "America/New_York", "Australia/Sydney", JVM_ZONE, "America/Havana"};

    static String dir;
    static List<Long> probes = new ArrayList<>();
    static StringBuilder cals = new StringBuilder();
    static StringBuilder maps = new StringBuilder();

    /** A serializable class no reader knows: a map holding one must be refused by name. */
    static class Money implements Serializable {
        private static final long serialVersionUID = 1L;
        long cents = 1999;
        String currency = "EUR";
    }

    public static void main(String[] args) throws Exception {
        dir = args[0];
        TimeZone.setDefault(TimeZone.getTimeZone(JVM_ZONE));
        makeProbes();
        calendars();
        jobData();
        try (PrintStream out = new PrintStream(new FileOutputStream(dir + "/expect.json"), false, "UTF-8")) {
            out.print("{\n\"jvm_zone\": \"" + JVM_ZONE + "\",\n\"probes\": [");
            for (int i = 0; i < probes.size(); i++) {
                out.print((i > 0 ? (i % 10 == 0 ? ",\n" : ",") : "\n") + probes.get(i));
            }
            out.print("],\n\"calendars\": [\n" + cals + "\n],\n\"jobdata\": [\n" + maps + "\n]\n}\n");
        }
    }

    // Probe instants: every 5h07m03s over 2026-2028 (whole seconds at every
    // wall time), and in every zone the instants around midnight, the daily
    // ranges used below and the small hours, on the days around 2026's
    // daylight-saving changes and around 29 February 2028.
    static void makeProbes() {
        long start = ZonedDateTime.of(2025, 12, 20, 0, 0, 0, 0, ZoneId.of("UTC")).toInstant().toEpochMilli();
        long end = ZonedDateTime.of(2028, 4, 10, 0, 0, 0, 0, ZoneId.of("UTC")).toInstant().toEpochMilli();
        for (long t = start; t < end; t += (5 * 3600 + 7 * 60 + 3) * 1000L) {
            probes.add(t);
        }
        LocalTime[] times = {
            LocalTime.of(0, 0), LocalTime.of(0, 0, 0, 1_000_000), LocalTime.of(0, 0, 1), LocalTime.of(1, 59, 59),
            LocalTime.of(2, 0), LocalTime.of(2, 30), LocalTime.of(3, 0), LocalTime.of(8, 59, 59),
            LocalTime.of(9, 0), LocalTime.of(9, 0, 1), LocalTime.of(12, 0), LocalTime.of(16, 59, 59),
            LocalTime.of(17, 0), LocalTime.of(17, 0, 1), LocalTime.of(22, 30), LocalTime.of(23, 59, 59),
            LocalTime.of(23, 59, 59, 999_000_000),
        };
        LocalDate[][] spans = {
            {LocalDate.of(2026, 3, 6), LocalDate.of(2026, 3, 9)},
            {LocalDate.of(2026, 3, 26), LocalDate.of(2026, 4, 7)},
            {LocalDate.of(2026, 10, 1), LocalDate.of(2026, 10, 6)},
            {LocalDate.of(2026, 10, 23), LocalDate.of(2026, 11, 3)},
            {LocalDate.of(2026, 12, 23), LocalDate.of(2027, 1, 2)},
            {LocalDate.of(2028, 2, 26), LocalDate.of(2028, 3, 2)},
        };
        TreeSet<Long> extra = new TreeSet<>();
        for (String z : ZONES) {
            for (LocalDate[] span : spans) {
                for (LocalDate d = span[0]; !d.isAfter(span[1]); d = d.plusDays(1)) {
                    for (LocalTime t : times) {
                        extra.add(ZonedDateTime.of(d, t, ZoneId.of(z)).toInstant().toEpochMilli());
                    }
                }
            }
        }
        extra.removeAll(probes);
        probes.addAll(extra);
        probes.sort(null);
    }

    static TimeZone tz(String id) {
        return TimeZone.getTimeZone(id);
    }

    static Date day(String zone, int y, int m, int d) {
        Calendar c = Calendar.getInstance(tz(zone));
        c.clear();
        c.set(y, m - 1, d);
        return c.getTime();
    }

    static void calendars() throws Exception {
        // Holiday: dates around daylight-saving changes, in a zone and in
        // the JVM's default zone, with a description and a base calendar.
        HolidayCalendar h = new HolidayCalendar(tz("Europe/Berlin"));
        h.setDescription("Berlin holidays");
        for (int[] d : new int[][] {{2026, 3, 29}, {2026, 10, 25}, {2026, 12, 25}, {2027, 1, 1}, {2028, 2, 29}}) {
            h.addExcludedDate(day("Europe/Berlin", d[0], d[1], d[2]));
        }
        cal("holiday_berlin", h);

        HolidayCalendar hny = new HolidayCalendar(tz("America/New_York"));
        hny.addExcludedDate(day("America/New_York", 2026, 3, 8));
        hny.addExcludedDate(day("America/New_York", 2026, 11, 1));
        // Any instant of the day: Quartz stores that day's midnight.
        hny.addExcludedDate(new Date(day("America/New_York", 2026, 7, 4).getTime() + 15 * 3600_000L));
        cal("holiday_new_york", hny);

        HolidayCalendar hz = new HolidayCalendar();
        hz.addExcludedDate(day(JVM_ZONE, 2026, 1, 26));
        hz.addExcludedDate(day(JVM_ZONE, 2026, 8, 15));
        cal("holiday_nozone", hz);

        cal("holiday_empty", new HolidayCalendar(tz("UTC")));

        // A day whose midnight does not exist: Quartz stores its first
        // instant, 01:00.
        HolidayCalendar hh = new HolidayCalendar(tz("America/Havana"));
        hh.addExcludedDate(day("America/Havana", 2026, 3, 8));
        hh.addExcludedDate(day("America/Havana", 2026, 3, 9));
        cal("holiday_havana", hh);

        // Dates added before the zone was set: midnights of the JVM's zone,
        // which Quartz then never matches in the calendar's.
        HolidayCalendar hl = new HolidayCalendar();
        hl.addExcludedDate(day(JVM_ZONE, 2026, 10, 2));
        hl.setTimeZone(tz("Europe/Berlin"));
        hl.addExcludedDate(day("Europe/Berlin", 2026, 10, 3));
        cal("holiday_zone_set_late", hl);

        // Annual: days as java.util.Calendars in their own zones, Feb 29.
        AnnualCalendar a = new AnnualCalendar(tz("Australia/Sydney"));
        a.setDescription("Sydney public holidays");
        a.setDayExcluded(new GregorianCalendar(2024, Calendar.FEBRUARY, 29), true);
        Calendar c = Calendar.getInstance(tz("Australia/Sydney"));
        c.clear();
        c.set(2026, Calendar.JANUARY, 26);
        a.setDayExcluded(c, true);
        Calendar c2 = Calendar.getInstance(tz("America/New_York"));
        c2.setTimeInMillis(day("America/New_York", 2026, 12, 25).getTime() + 20 * 3600_000L);
        a.setDayExcluded(c2, true);
        Calendar c3 = Calendar.getInstance(tz("UTC"));
        c3.clear();
        c3.set(2026, Calendar.OCTOBER, 5);
        a.setDayExcluded(c3, true);
        cal("annual_sydney", a);

        AnnualCalendar an = new AnnualCalendar();
        an.setDayExcluded(new GregorianCalendar(2026, Calendar.DECEMBER, 31), true);
        an.setDayExcluded(new GregorianCalendar(2026, Calendar.JANUARY, 1), true);
        cal("annual_nozone", an);

        // Monthly: the 1st, 15th, 29th-31st.
        MonthlyCalendar mo = new MonthlyCalendar(tz("America/New_York"));
        for (int d : new int[] {1, 15, 29, 30, 31}) {
            mo.setDayExcluded(d, true);
        }
        cal("monthly_new_york", mo);
        MonthlyCalendar mo2 = new MonthlyCalendar(tz("UTC"));
        cal("monthly_none", mo2);
        // Java's own zone IDs: a custom offset and an old three-letter ID.
        MonthlyCalendar mg = new MonthlyCalendar(tz("GMT-03:00"));
        mg.setDayExcluded(2, true);
        cal("monthly_gmt_minus_3", mg);
        WeeklyCalendar wp = new WeeklyCalendar(tz("PST"));
        wp.setDayExcluded(Calendar.WEDNESDAY, true);
        cal("weekly_pst", wp);

        // Weekly: the default (Saturday, Sunday), and Monday + Friday in Sydney.
        cal("weekly_default", new WeeklyCalendar());
        WeeklyCalendar w = new WeeklyCalendar(tz("Australia/Sydney"));
        w.setDayExcluded(Calendar.SATURDAY, false);
        w.setDayExcluded(Calendar.SUNDAY, false);
        w.setDayExcluded(Calendar.MONDAY, true);
        w.setDayExcluded(Calendar.FRIDAY, true);
        w.setDescription("no Mondays, no Fridays");
        cal("weekly_sydney", w);

        // Daily: a range, an inverted range, milliseconds, a base calendar.
        DailyCalendar dc = new DailyCalendar("09:00", "17:00");
        dc.setTimeZone(tz("Europe/Berlin"));
        cal("daily_berlin", dc);
        DailyCalendar di = new DailyCalendar("09:00:00:000", "17:00:00:000");
        di.setInvertTimeRange(true);
        di.setTimeZone(tz("America/New_York"));
        cal("daily_inverted_new_york", di);
        DailyCalendar dm = new DailyCalendar("01:30:00:500", "02:30:00:250");
        dm.setTimeZone(tz("Europe/Berlin"));
        dm.setDescription("night, with milliseconds");
        cal("daily_millis_berlin", dm);
        DailyCalendar dz = new DailyCalendar("22:30", "23:59:59");
        cal("daily_nozone", dz);
        WeeklyCalendar base = new WeeklyCalendar(tz("Europe/Berlin"));
        DailyCalendar db = new DailyCalendar(base, "12:00", "16:59:59");
        db.setTimeZone(tz("UTC"));
        db.setDescription("afternoons, and weekends by its base");
        cal("daily_with_base", db);

        // Cron: zones through the CronExpression, none, and a chain of bases.
        cal("cron_berlin", new CronCalendar(null, "* * 0-7 ? * MON-FRI", tz("Europe/Berlin")));
        cal("cron_nozone", new CronCalendar("* 0-29 2 * * ?"));
        HolidayCalendar hb = new HolidayCalendar(tz("UTC"));
        hb.addExcludedDate(day("UTC", 2026, 5, 1));
        MonthlyCalendar mb = new MonthlyCalendar(hb, tz("Asia/Kolkata"));
        mb.setDayExcluded(10, true);
        CronCalendar cc = new CronCalendar(mb, "* * 12 ? * 6L", tz("America/New_York"));
        cc.setDescription("lunch on the last Friday; base: 10th of the month; its base: May Day");
        cal("cron_base_chain", cc);

        // Not a chime kind: a plain BaseCalendar.
        writeBlob("cal_plain_base.bin", serialize(new BaseCalendar(tz("UTC"))));
        cals.append(",\n{\"file\": \"cal_plain_base.bin\", \"class\": \"org.quartz.impl.calendar.BaseCalendar\"}");
    }

    static void cal(String name, BaseCalendar c) throws Exception {
        byte[] blob = serialize(c); // before evaluating: CronExpression.getTimeZone sets a zone
        String file = "cal_" + name + ".bin";
        writeBlob(file, blob);
        StringBuilder inc = new StringBuilder();
        List<long[]> next = new ArrayList<>();
        for (long p : probes) {
            boolean in = c.isTimeIncluded(p);
            inc.append(in ? '1' : '0');
            if (!in && next.size() < 40 && p % 3 == 0) {
                next.add(new long[] {p, c.getNextIncludedTime(p)});
            }
        }
        if (cals.length() > 0) {
            cals.append(",\n");
        }
        TimeZone z = c.getTimeZone();
        cals.append("{\"file\": \"").append(file).append("\", \"class\": \"").append(c.getClass().getName())
            .append("\", \"timezone\": ").append(z == null ? "\"\"" : str(z.getID()))
            .append(", \"description\": ").append(c.getDescription() == null ? "\"\"" : str(c.getDescription()))
            .append(",\n \"included\": \"").append(inc).append("\",\n \"next\": [");
        for (int i = 0; i < next.size(); i++) {
            cals.append(i > 0 ? "," : "").append("[").append(next.get(i)[0]).append(",").append(next.get(i)[1]).append("]");
        }
        cals.append("]}");
    }

    static void jobData() throws Exception {
        JobDataMap s = new JobDataMap();
        s.put("url", "https://example.com/report?x=1&y=2");
        s.put("empty", "");
        s.put("key with spaces=and:colons", "value with = and : and #hash");
        s.put("multi", "line one\nline two\ttabbed");
        s.put("unicode", "Grüße, 東京, \uD83D\uDE00");
        s.put(" leading", "  leading and trailing spaces  ");
        s.put("backslash", "C:\\temp\\x");
        s.put("!bang", "#not a comment");
        jobMap("strings", s, "{\"url\": \"https://example.com/report?x=1&y=2\", \"empty\": \"\","
            + " \"key with spaces=and:colons\": \"value with = and : and #hash\","
            + " \"multi\": \"line one\\nline two\\ttabbed\", \"unicode\": \"Grüße, 東京, \uD83D\uDE00\","
            + " \" leading\": \"  leading and trailing spaces  \", \"backslash\": \"C:\\\\temp\\\\x\","
            + " \"!bang\": \"#not a comment\"}");
        writeBlob("jobdata_strings_properties.bin", properties(s));
        maps.append(",\n{\"file\": \"jobdata_strings_properties.bin\", \"same_as\": \"jobdata_strings.bin\"}");

        JobDataMap t = new JobDataMap();
        t.put("count", 42);
        t.put("negative", -7);
        t.put("big", 9007199254740993L);
        t.put("flag", true);
        t.put("off", false);
        t.put("ratio", 0.25);
        t.put("single", 1.1f);
        t.put("short", (short) 12);
        t.put("byte", (byte) -3);
        t.put("char", 'x');
        t.put("nothing", null);
        t.put("when", new Date(1767225600123L));
        t.put("unit", TimeUnit.SECONDS);
        t.put("decimal", new BigDecimal("-12345678901234567890.125"));
        t.put("integer", new BigInteger("123456789012345678901234567890"));
        jobMap("typed", t, "{\"count\": 42, \"negative\": -7, \"big\": 9007199254740993, \"flag\": true, \"off\": false,"
            + " \"ratio\": 0.25, \"single\": 1.1, \"short\": 12, \"byte\": -3, \"char\": \"x\", \"nothing\": null,"
            + " \"when\": \"2026-01-01T00:00:00.123Z\", \"unit\": \"SECONDS\", \"decimal\": -12345678901234567890.125,"
            + " \"integer\": 123456789012345678901234567890}");

        JobDataMap n = new JobDataMap();
        ArrayList<Object> list = new ArrayList<>();
        list.add("a");
        list.add(1);
        list.add(null);
        HashMap<String, Object> inner = new HashMap<>();
        inner.put("depth", 2);
        inner.put("tags", new String[] {"x", "y"});
        LinkedHashMap<String, Object> deeper = new LinkedHashMap<>();
        deeper.put("ok", Boolean.TRUE);
        inner.put("deeper", deeper);
        list.add(inner);
        n.put("list", list);
        n.put("ints", new int[] {1, 2, 3});
        TreeSet<String> set = new TreeSet<>();
        set.add("b");
        set.add("a");
        n.put("set", set);
        Properties props = new Properties();
        props.setProperty("p", "q");
        n.put("props", props);
        n.put("again", list); // a back-reference to the same list
        jobMap("nested", n, "{\"list\": [\"a\", 1, null, {\"depth\": 2, \"tags\": [\"x\", \"y\"], \"deeper\": {\"ok\": true}}],"
            + " \"ints\": [1, 2, 3], \"set\": [\"a\", \"b\"], \"props\": {\"p\": \"q\"},"
            + " \"again\": [\"a\", 1, null, {\"depth\": 2, \"tags\": [\"x\", \"y\"], \"deeper\": {\"ok\": true}}]}");

        // The JDK's other collections, as a job might have put them.
        JobDataMap cl = new JobDataMap();
        cl.put("linked", new java.util.LinkedList<>(List.of("l1", "l2")));
        cl.put("hashset", new java.util.HashSet<>(List.of(7)));
        cl.put("linkedset", new java.util.LinkedHashSet<>(List.of("s1", "s2")));
        cl.put("vector", new java.util.Vector<>(List.of(1L, 2L)));
        cl.put("aslist", java.util.Arrays.asList("a1", "a2"));
        cl.put("listof", List.of("o1", "o2"));
        cl.put("setof", java.util.Set.of("only"));
        cl.put("mapof", Map.of("mk", "mv"));
        cl.put("emptylist", java.util.Collections.emptyList());
        cl.put("emptymap", java.util.Collections.emptyMap());
        cl.put("singleton", java.util.Collections.singletonList("one"));
        cl.put("singletonmap", java.util.Collections.singletonMap("k", 1));
        cl.put("unmodlist", java.util.Collections.unmodifiableList(new ArrayList<>(List.of("u1"))));
        cl.put("unmodmap", java.util.Collections.unmodifiableMap(new HashMap<>(Map.of("uk", "uv"))));
        cl.put("syncmap", java.util.Collections.synchronizedMap(new HashMap<>(Map.of("sk", "sv"))));
        cl.put("treemap", new java.util.TreeMap<>(Map.of("b", 2, "a", 1)));
        cl.put("hashtable", new java.util.Hashtable<>(Map.of("h", "t")));
        cl.put("concurrent", new java.util.concurrent.ConcurrentHashMap<>(Map.of("c", "m")));
        cl.put("linkedmap", new LinkedHashMap<>(Map.of("lk", "lv")));
        cl.put("uuid", java.util.UUID.fromString("123e4567-e89b-12d3-a456-426614174000"));
        cl.put("longs", new long[] {-1L, 5L});
        cl.put("chars", new char[] {'h', 'i'});
        cl.put("bytes", new byte[] {1, -1});
        cl.put("doubles", new double[] {0.5});
        cl.put("objects", new Object[] {"x", 1, true});
        cl.put("sqltime", new java.sql.Timestamp(1767225600000L));
        jobMap("collections", cl, "{\"linked\": [\"l1\", \"l2\"], \"hashset\": [7], \"linkedset\": [\"s1\", \"s2\"],"
            + " \"vector\": [1, 2], \"aslist\": [\"a1\", \"a2\"], \"listof\": [\"o1\", \"o2\"], \"setof\": [\"only\"],"
            + " \"mapof\": {\"mk\": \"mv\"}, \"emptylist\": [], \"emptymap\": {}, \"singleton\": [\"one\"],"
            + " \"singletonmap\": {\"k\": 1}, \"unmodlist\": [\"u1\"], \"unmodmap\": {\"uk\": \"uv\"},"
            + " \"syncmap\": {\"sk\": \"sv\"}, \"treemap\": {\"a\": 1, \"b\": 2}, \"hashtable\": {\"h\": \"t\"},"
            + " \"concurrent\": {\"c\": \"m\"}, \"linkedmap\": {\"lk\": \"lv\"},"
            + " \"uuid\": \"123e4567-e89b-12d3-a456-426614174000\", \"longs\": [-1, 5], \"chars\": \"hi\","
            + " \"bytes\": \"Af8=\", \"doubles\": [0.5], \"objects\": [\"x\", 1, true], \"sqltime\": \"2026-01-01T00:00:00Z\"}");

        JobDataMap big = new JobDataMap();
        StringBuilder huge = new StringBuilder();
        for (int i = 0; i < 70000; i++) {
            huge.append((char) ('a' + i % 26));
        }
        big.put("huge", huge.toString()); // over 65535 bytes: TC_LONGSTRING
        StringBuilder exp = new StringBuilder("{\"huge\": \"" + huge + "\"");
        for (int i = 0; i < 300; i++) {
            big.put("k" + i, i * 1000L); // map data over 1024 bytes: several block-data records
            exp.append(", \"k").append(i).append("\": ").append(i * 1000L);
        }
        jobMap("large", big, exp + "}");

        jobMap("empty", new JobDataMap(), "{}");
        writeBlob("jobdata_empty_properties.bin", properties(new JobDataMap()));
        maps.append(",\n{\"file\": \"jobdata_empty_properties.bin\", \"json\": {}}");

        JobDataMap u = new JobDataMap();
        u.put("name", "ok");
        u.put("price", new Money());
        writeBlob("jobdata_unknown_class.bin", serialize(u));
        maps.append(",\n{\"file\": \"jobdata_unknown_class.bin\", \"error\": \"QuartzBlobs$Money\"}");
    }

    static void jobMap(String name, JobDataMap m, String json) throws Exception {
        String file = "jobdata_" + name + ".bin";
        writeBlob(file, serialize(m));
        if (maps.length() > 0) {
            maps.append(",\n");
        }
        maps.append("{\"file\": \"").append(file).append("\", \"json\": ").append(json).append("}");
    }

    /** StdJDBCDelegate.serializeObject. */
    static byte[] serialize(Object o) throws IOException {
        ByteArrayOutputStream b = new ByteArrayOutputStream();
        ObjectOutputStream out = new ObjectOutputStream(b);
        out.writeObject(o);
        out.flush();
        return b.toByteArray();
    }

    /** StdJDBCDelegate.serializeProperties (useProperties=true). */
    static byte[] properties(JobDataMap m) throws IOException {
        Properties p = new Properties();
        for (Map.Entry<String, Object> e : m.getWrappedMap().entrySet()) {
            p.put(e.getKey(), e.getValue() == null ? "" : e.getValue());
        }
        ByteArrayOutputStream b = new ByteArrayOutputStream();
        p.store(b, "");
        return b.toByteArray();
    }

    static void writeBlob(String file, byte[] b) throws IOException {
        try (FileOutputStream f = new FileOutputStream(dir + "/" + file)) {
            f.write(b);
        }
    }

    static String str(String s) {
        StringBuilder b = new StringBuilder("\"");
        for (char ch : s.toCharArray()) {
            if (ch == '"' || ch == '\\') {
                b.append('\\').append(ch);
            } else if (ch < 0x20) {
                b.append(String.format("\\u%04x", (int) ch));
            } else {
                b.append(ch);
            }
        }
        return b.append('"').toString();
    }
}
