package ptfence.record;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;
import ptfence.cli.BadInputException;
import ptfence.sys.Bpf;
import ptfence.sys.BpfException;
import ptfence.sys.BpfFd;
import ptfence.sys.PerfEvent;

/**
 * The BPF_MAP_TYPE_PERF_EVENT_ARRAY maps whose programs' bpf_perf_event_output() ptrec records (--bpf-output): a map
 * named by id (another loader's map, BPF_MAP_GET_FD_BY_ID) or by the path it is pinned at (BPF_OBJ_GET). ptrec puts
 * its own per-CPU bpf-output events into the map at each CPU's index, as perf record does for the map a program it
 * loads names.
 * <p>
 * What that does to the program's own reader: an entry holds one event, so ptrec's event replaces the reader's for the
 * whole recording (the reader gets nothing meanwhile), and the kernel removes the entries ptrec put when ptrec closes
 * the map (perf_event_fd_array_release: entries go with the map file that set them), so after the recording the
 * reader's CPUs are empty until it puts its events back. The kernel cannot give the old entries back to put them
 * back ourselves (a lookup on a perf event array is EOPNOTSUPP). Hence an explicit option, never automatic.
 */
public final class BpfOutputMaps implements AutoCloseable {
    /** One map: how the user named it, its id, entries, and ptrec's reference. */
    public record Target(String spec, int id, int maxEntries, String name, BpfFd fd) {}

    private final List<Target> targets = new ArrayList<>();

    private BpfOutputMaps() {}

    /** Opens each map (a number: map id; else a pinned path) and checks it is a perf event array. */
    public static BpfOutputMaps open(List<String> specs) {
        BpfOutputMaps m = new BpfOutputMaps();
        try {
            for (String s : specs) m.targets.add(target(s));
        } catch (RuntimeException e) {
            m.close();
            throw e;
        }
        return m;
    }

    private static Target target(String spec) {
        Bpf bpf = Bpf.get();
        BpfFd fd;
        try {
            if (spec.matches("\\d+")) {
                fd = bpf.mapGetFdById(Integer.parseInt(spec));
                if (fd == null) throw new BadInputException("--bpf-output " + spec + ": no BPF map with that id");
            } else {
                fd = bpf.objGet(spec);
            }
        } catch (BpfException e) {
            throw new BadInputException("--bpf-output " + spec + ": " + e.getMessage());
        }
        byte[] info = new byte[88]; // struct bpf_map_info up to name
        try {
            bpf.objGetInfo(fd, info, List.of());
        } catch (BpfException e) {
            fd.close();
            throw new BadInputException("--bpf-output " + spec + ": " + e.getMessage());
        }
        ByteBuffer b = ByteBuffer.wrap(info).order(ByteOrder.LITTLE_ENDIAN);
        int type = b.getInt(0), id = b.getInt(4), maxEntries = b.getInt(16);
        int end = 24;
        while (end < 40 && info[end] != 0) end++;
        String name = new String(info, 24, end - 24, java.nio.charset.StandardCharsets.US_ASCII);
        if (type != Bpf.MAP_TYPE_PERF_EVENT_ARRAY) {
            fd.close();
            throw new BadInputException("--bpf-output " + spec + ": map " + id + (name.isEmpty() ? "" : " (" + name + ")")
                    + " is of type " + type + ", not a perf event array (" + Bpf.MAP_TYPE_PERF_EVENT_ARRAY + ")");
        }
        return new Target(spec, id, maxEntries, name, fd);
    }

    public List<Target> targets() {
        return List.copyOf(targets);
    }

    /**
     * Puts {@code event} at index {@code cpu} of every map (a program writes with BPF_F_CURRENT_CPU into its CPU's
     * index); a CPU past a map's entries is skipped, as the program could not write there either.
     */
    public void attach(int cpu, PerfEvent event) {
        for (Target t : targets) {
            if (cpu >= t.maxEntries()) continue;
            byte[] key = ByteBuffer.allocate(4).order(ByteOrder.LITTLE_ENDIAN).putInt(cpu).array();
            byte[] value = ByteBuffer.allocate(4).order(ByteOrder.LITTLE_ENDIAN).putInt(event.fd()).array();
            try {
                Bpf.get().mapUpdate(t.fd(), key, value);
            } catch (BpfException e) {
                throw new BadInputException("--bpf-output " + t.spec() + ": putting the bpf-output event of cpu " + cpu
                        + " into map " + t.id() + ": " + e.getMessage());
            }
        }
    }

    /** "map 12 (events, 2 CPUs)" for each map, for the summary. */
    public String describe() {
        List<String> out = new ArrayList<>();
        for (Target t : targets) {
            out.add("map " + t.id() + (t.name().isEmpty() ? "" : " (" + t.name() + ")"));
        }
        return String.join(", ", out);
    }

    public boolean isEmpty() {
        return targets.isEmpty();
    }

    /** Drops ptrec's references: the kernel then removes the entries ptrec put (see the class comment). */
    @Override
    public void close() {
        for (Target t : targets) t.fd().close();
        targets.clear();
    }
}
