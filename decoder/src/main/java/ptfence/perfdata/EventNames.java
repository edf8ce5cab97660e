package ptfence.perfdata;

/**
 * Event names as perf 6.1's {@code evsel__name} gives them where the recording stored none (EVENT_DESC): one made
 * from the attr (hardware and software event names, "unknown attr type: N"), with perf's modifiers (":u", ":ku");
 * and the names of the events perf synthesizes from Intel PT ("branches:u"), which take the PT event's modifiers.
 * perf script pads event names to the longest of the recording's.
 */
public final class EventNames {
    private static final long EXCLUDE_HOST = 1L << 19;
    private static final long EXCLUDE_GUEST = 1L << 20;
    private static final long PRECISE = 3L << 15;

    private EventNames() {
    }

    /** perf's name for an event stored without one. */
    public static String name(EventAttr a) {
        String base;
        if (a.type() == 0 && a.config() >= 0 && a.config() < HARDWARE.length) {
            base = HARDWARE[(int) a.config()];
        } else if (a.type() == 1 && a.config() >= 0 && a.config() < SOFTWARE.length) {
            base = SOFTWARE[(int) a.config()];
        } else {
            return "unknown attr type: " + a.type();
        }
        return base + modifiers(a);
    }

    /**
     * perf 6.1's name for it ({@code perf script}'s lines): its evsel__sw_names stop at dummy, so bpf-output and
     * cgroup-switches stored without a name are "unknown-software" there, modifiers and all; ptdecode's own views
     * keep {@link #name}.
     */
    public static String perfName(EventAttr a) {
        if (a.type() == 1 && a.config() > DUMMY) {
            return "unknown-software" + modifiers(a);
        }
        return name(a);
    }

    private static final long DUMMY = 9;

    /** The synthesized event {@code base} ("branches", "instructions") of the PT event {@code pt}: its modifiers. */
    public static String synthesized(String base, EventAttr pt) {
        return base + modifiers(pt);
    }

    /** perf's {@code evsel__add_modifiers}: ":" and k, u, h for what is not excluded, p for precision, H, G. */
    public static String modifiers(EventAttr a) {
        long f = a.flags();
        StringBuilder sb = new StringBuilder();
        boolean excludeGuestDefault = false;
        if ((f & (EventAttr.FLAG_EXCLUDE_KERNEL | EventAttr.FLAG_EXCLUDE_USER | EventAttr.FLAG_EXCLUDE_HV)) != 0) {
            if ((f & EventAttr.FLAG_EXCLUDE_KERNEL) == 0) {
                sb.append('k');
            }
            if ((f & EventAttr.FLAG_EXCLUDE_USER) == 0) {
                sb.append('u');
            }
            if ((f & EventAttr.FLAG_EXCLUDE_HV) == 0) {
                sb.append('h');
            }
            excludeGuestDefault = true;
        }
        long precise = (f & PRECISE) >>> 15;
        for (long i = 0; i < precise; i++) {
            sb.append('p');
        }
        if ((f & EXCLUDE_HOST) != 0 || ((f & EXCLUDE_GUEST) != 0) == excludeGuestDefault) {
            if ((f & EXCLUDE_HOST) == 0) {
                sb.append('H');
            }
            if ((f & EXCLUDE_GUEST) == 0) {
                sb.append('G');
            }
        }
        return sb.length() == 0 ? "" : ":" + sb;
    }

    private static final String[] HARDWARE = {"cycles", "instructions", "cache-references", "cache-misses",
        "branches", "branch-misses", "bus-cycles", "stalled-cycles-frontend", "stalled-cycles-backend",
        "ref-cycles"};

    private static final String[] SOFTWARE = {"cpu-clock", "task-clock", "page-faults", "context-switches",
        "cpu-migrations", "minor-faults", "major-faults", "alignment-faults", "emulation-faults", "dummy",
        "bpf-output", "cgroup-switches"};
}
