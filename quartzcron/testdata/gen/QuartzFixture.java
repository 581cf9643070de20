// QuartzFixture records what Quartz 2.3.2's CronExpression computes, so the
// Go package can be tested against real Quartz without Java at test time.
//
// Regenerate (from the repository root; needs a JDK and Debian's
// libquartz2-java, 2.3.2):
//
//	make fixture/quartz
//
// It writes quartzcron/testdata/quartz_fixture.json: for every valid
// expression, zone and start instant the chain of getNextValidTimeAfter
// results (epoch milliseconds), and for every invalid expression the
// message of the ParseException the constructor throws.
import java.io.PrintStream;
import java.text.ParseException;
import java.time.Instant;
import java.time.ZoneId;
import java.time.zone.ZoneOffsetTransition;
import java.time.zone.ZoneRules;
import java.util.ArrayList;
import java.util.Date;
import java.util.List;
import java.util.TimeZone;

import org.quartz.CronExpression;

public class QuartzFixture {
    static final int FIRES = 20;

    static final String[] ZONES = {
        "UTC", "Europe/Berlin", "America/New_York", "Australia/Sydney", "Asia/Kolkata",
    };

    // Day-level rules: every special character, names, the year field,
    // 1 = Sunday, leap years, the 31st in short months.
    static final String[] GENERAL = {
        "0 0 0 ? * 1", "0 0 0 ? * 7", "0 0 12 ? * SUN", "0 0 0 ? * sun", "0 0 0 1 jan ?",
        "0 15 10 ? * 6L", "0 0 9 LW * ?", "0 0 0 L * ?", "0 0 0 L-3 * ?", "0 0 0 L-30 * ?",
        "0 0 0 L-1 2 ?", "0 0 0 L-2W * ?", "0 0 0 L-3W * ?", "0 0 0 15W * ?", "0 0 0 1W * ?",
        "0 0 0 31W * ?", "0 0 0 0W * ?", "0 0 12 1W 3 ?", "0 0 0 L 2 ?", "0 0 0 LW 2 ?",
        "0 0 0 ? * 2#1", "0 0 0 ? * 6#3", "0 0 0 ? * 5#5", "0 0 0 ? * 1#5", "0 0 0 ? * 3#4",
        "0 0 0 ? * MON#2", "0 0 0 ? 2 2#5", "0 0 0 ? * 6#3 2027", "0 0 0 ? * 9#3",
        "0 0 0 ? * FRIL", "0 0 0 ? * 1L", "0 0 0 ? * L", "30 45 23 ? * 7L", "0 0 23 ? * 6L",
        "0 0 0 29 2 ?", "0 0 0 31 * ?", "0 0 0 30 * ?", "0 0 0 31 4 ?", "0 0 0 30 2 ?",
        "0 0 0 ? 2 * 2028", "0 0 0 1 1 ? 2026-2030", "0 0 0 1 * ? 2027/2", "0 0 0 1 JAN ? 2020",
        "0 0 0 * * ? 2150", "0 0 0 1 1 ? 2126", "0 0 0 1 1 ? 2127", "0 0 0 ? * 7 2028/1",
        "0 0 0 ? * 2-6 2026-2027", "0 0 0 ? * * *", "0 0 0 * * ? *", "0 0 0 1 JAN-MAR ?",
        "0 0 0 1 NOV-FEB ?", "0 0 0 ? * FRI-MON", "0 0 0 ? * MON-FRI", "0 0 0 ? * MON,WED,FRI",
        "0 0 0 ? * SUN-SAT", "0 0 22-2 * * ?", "0 0 0 1-31/10 * ?", "0 0 0 5/10 * ?",
        "0 0 0 ? * 2/2", "0 0 0 ? * 1-7/3", "0 0 0 1 */5 ?", "0 0 0 1 2/3 ?", "0 0 0 ? JAN,JUL SAT",
        "0 30 10 ? * 2-6", "59 59 23 31 12 ? *", "*/7 * * * * ?", "0/15 * * * * ?",
        "0 */7 * * * ?", "0 0 */5 * * ?", "0 0 0 29 2 ? 2028-2040/4", "5X 0 0 ? * *",
        "0 0 0 ? * MON-FRI/2", "0 0 0 15 * ? 2026,2028", "0 0 0 10-20/3 * ?",
        "0 0 0 ? * TUE 2031-2033", "0 0 0 28-2 * ?", "0 0 6 ? DEC-FEB MON",
        "  0\t0  0 ? * 1  ", "0 0 0 ? * 1 2026 trailing tokens are ignored",
        "0 0 0 ? * 2L-3", "0 0 0 ?X * 1", "0 0 0 ? * L-2",
    };

    // Time-of-day rules, run from instants around daylight-saving changes.
    static final String[] DST = {
        "0 30 2 * * ?", "0 0 2 * * ?", "0 0 3 * * ?", "0 30 1 * * ?", "0 0 * * * ?",
        "0 */30 * * * ?", "0 0/20 1-3 * * ?", "0 0 0 * * ?", "0 0 2 ? * SUN", "0 15 2 LW * ?",
        "0 0 1-3 ? * *", "0 59 1 * * ?", "0 0 12 * * ?", "*/7 * * * * ?", "0 0 2/1 * * ?",
        "0 30 2 ? * 1#1", "0 30 2 L * ?", "0 30 2 15W * ?", "0 30 2 ? * 1L",
    };

    static final String[] INVALID = {
        "", "0 0 0 * *", "0 0 0 * * *", "0 0 0 ? * ?", "0 0 0 * * 1", "0 0 0 ? * 0",
        "0 0 0 ? * 8", "60 0 0 * * ?", "0 60 0 * * ?", "0 0 24 * * ?", "0 0 0 32 * ?",
        "0 0 0 0 * ?", "0 0 0 * 13 ?", "0 0 0 * 0 ?", "0 0 0 ? * MON#6", "0 0 0 ? * 2#0",
        "0 0 0 ? * 2#1,3#2", "0 0 0 L,5 * ?", "0 0 0 ? * 6L,2", "0 0 0 W * ?", "0 0 0 L- * ?",
        "0 0 0 L-31 * ?", "0 0 0 32W * ?", "0 0 0 ? * 5W", "0 0 0 5L * ?", "0 0 0 5#2 * ?",
        "0 0 0 ? FOO *", "0 0 0 ? * FOO", "0 0 0 ? JAN-FOO *", "0 0 0 ? * MON-FOO", "ABC 0 0 * * ?",
        "? 0 0 * * ?", "0 0 0 * * ? ?", "*/ 0 0 * * ?", "5/ 0 0 * * ?", "1-5/ 0 0 ? * *",
        "*/5X 0 0 ? * *", "*/60 * * * * ?", "0 */60 * * * ?", "0 0 */24 * * ?", "0 0 0 */32 * ?",
        "0 0 0 ? */13 *", "0 0 0 ? * */8", "99999999999 0 0 * * ?", "1-X 0 0 * * ?", "# 0 0 * * ?",
        "0 0 0 ? * 1 2100-2000", "0 0 0 ? * 1#", "0 0 0 ? * 1#X", "5/X 0 0 * * ?", "0 0 0 ? * SU",
        "0 0 0 ? * 8L", "0 0 0 ? * MONL,TUE", "0 0 0 1-40 * ?",
        "0 0 25-2 * * ?", "0 0 0 ? JAN-DE *", "0 0 0 L-3 * 1", "@daily", "0 0 0 LW,1 * ?",
    };

    static final long[] GENERAL_STARTS = {
        Instant.parse("2026-01-01T00:00:00Z").toEpochMilli(),
        Instant.parse("2026-06-15T12:34:56Z").toEpochMilli(),
        Instant.parse("2028-02-20T00:00:00Z").toEpochMilli(),
    };

    public static void main(String[] args) throws Exception {
        PrintStream out = new PrintStream(args[0], "UTF-8");
        out.println("{");
        out.println("\"quartz\": \"" + CronExpression.class.getPackage().getImplementationVersion() + "\",");
        out.println("\"java\": \"" + System.getProperty("java.version") + "\",");
        out.println("\"max_year\": " + CronExpression.MAX_YEAR + ",");
        out.println("\"fires\": " + FIRES + ",");
        out.println("\"cases\": [");
        List<String> lines = new ArrayList<>();
        for (String zone : ZONES) {
            for (String expr : GENERAL) {
                for (long start : GENERAL_STARTS) {
                    lines.add(chain(expr, zone, start));
                }
            }
            List<Long> starts = dstStarts(zone);
            for (String expr : DST) {
                for (long start : starts) {
                    lines.add(chain(expr, zone, start));
                }
            }
        }
        out.println(String.join(",\n", lines));
        out.println("],");
        out.println("\"invalid\": [");
        lines.clear();
        for (String expr : INVALID) {
            String msg;
            try {
                new CronExpression(expr);
                throw new IllegalStateException("Quartz accepts " + expr);
            } catch (ParseException e) {
                msg = e.getMessage();
            }
            lines.add("{\"expr\": " + quote(expr) + ", \"error\": " + quote(msg) + "}");
        }
        out.println(String.join(",\n", lines));
        out.println("]");
        out.println("}");
        out.close();
    }

    // dstStarts: for every offset change of the zone in 2026 and 2040 (past
    // 2037 Java's ZoneInfo switches from its transition table to the last
    // rule), a start 3 hours and one 30 minutes before it, plus New Year 2026.
    static List<Long> dstStarts(String zone) {
        List<Long> starts = new ArrayList<>();
        starts.add(GENERAL_STARTS[0]);
        ZoneRules rules = ZoneId.of(zone).getRules();
        for (int year : new int[] {2026, 2040}) {
            Instant t = Instant.parse(year + "-01-01T00:00:00Z");
            Instant end = Instant.parse((year + 1) + "-01-01T00:00:00Z");
            for (;;) {
                ZoneOffsetTransition tr = rules.nextTransition(t);
                if (tr == null || !tr.getInstant().isBefore(end)) {
                    break;
                }
                starts.add(tr.getInstant().toEpochMilli() - 3 * 3600_000L);
                starts.add(tr.getInstant().toEpochMilli() - 30 * 60_000L);
                t = tr.getInstant();
            }
        }
        return starts;
    }

    // chain runs the walk on its own thread: some expressions that Quartz
    // accepts make getNextValidTimeAfter loop forever ("0W"); those are
    // recorded with "hangs": true after the fires computed before the loop.
    @SuppressWarnings("deprecation")
    static String chain(String expr, String zone, long start) throws Exception {
        CronExpression ce = new CronExpression(expr);
        ce.setTimeZone(TimeZone.getTimeZone(zone));
        List<Long> fires = java.util.Collections.synchronizedList(new ArrayList<>());
        boolean[] done = new boolean[1];
        Thread t = new Thread(() -> {
            Date d = new Date(start);
            for (int i = 0; i < FIRES; i++) {
                d = ce.getNextValidTimeAfter(d);
                if (d == null) {
                    break;
                }
                fires.add(d.getTime());
            }
            done[0] = true;
        });
        t.setDaemon(true);
        t.start();
        t.join(10_000);
        boolean hangs = t.isAlive();
        if (hangs) {
            t.stop(); // Quartz would spin for ever; nothing to clean up
            System.err.println("hangs: " + zone + " " + expr);
        }
        StringBuilder b = new StringBuilder();
        b.append("{\"expr\": ").append(quote(expr)).append(", \"zone\": ").append(quote(zone))
            .append(", \"from\": ").append(start);
        if (hangs) {
            b.append(", \"hangs\": true");
        }
        b.append(", \"fires\": [");
        synchronized (fires) {
            for (int i = 0; i < fires.size(); i++) {
                if (i > 0) {
                    b.append(", ");
                }
                b.append(fires.get(i));
            }
        }
        return b.append("]}").toString();
    }

    static String quote(String s) {
        StringBuilder b = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            switch (c) {
            case '"': b.append("\\\""); break;
            case '\\': b.append("\\\\"); break;
            case '\t': b.append("\\t"); break;
            case '\n': b.append("\\n"); break;
            default:
                if (c < 0x20) {
                    b.append(String.format("\\u%04x", (int) c));
                } else {
                    b.append(c);
                }
            }
        }
        return b.append('"').toString();
    }
}
