package ptfence.record;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.TreeSet;
import ptfence.cli.BadInputException;

/** CPU lists in the kernel's and perf's syntax: {@code 0-3,6}. */
public final class CpuList {
    private CpuList() {}

    public static int[] parse(String list) {
        TreeSet<Integer> cpus = new TreeSet<>();
        for (String part : list.trim().split(",")) {
            String p = part.trim();
            if (p.isEmpty()) continue;
            try {
                int dash = p.indexOf('-');
                int lo = Integer.parseInt(dash < 0 ? p : p.substring(0, dash));
                int hi = dash < 0 ? lo : Integer.parseInt(p.substring(dash + 1));
                if (lo < 0 || hi < lo || hi > 65535) throw new NumberFormatException();
                for (int c = lo; c <= hi; c++) cpus.add(c);
            } catch (NumberFormatException e) {
                throw new BadInputException("CPU list '" + list + "': bad entry '" + p + "'");
            }
        }
        if (cpus.isEmpty()) throw new BadInputException("CPU list '" + list + "' is empty");
        return cpus.stream().mapToInt(Integer::intValue).toArray();
    }

    /** The online CPUs (/sys/devices/system/cpu/online). */
    public static int[] online() {
        try {
            return parse(Files.readString(Path.of("/sys/devices/system/cpu/online")));
        } catch (IOException e) {
            int n = Runtime.getRuntime().availableProcessors();
            int[] all = new int[n];
            for (int i = 0; i < n; i++) all[i] = i;
            return all;
        }
    }

    /** Only CPUs that are online: -C with an offline CPU is a user error. */
    public static int[] requireOnline(int[] wanted) {
        int[] online = online();
        for (int c : wanted) {
            if (java.util.Arrays.binarySearch(online, c) < 0) {
                throw new BadInputException("-C: CPU " + c + " is not online (online: " + format(online) + ")");
            }
        }
        return wanted;
    }

    public static String format(int[] cpus) {
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < cpus.length; i++) {
            int j = i;
            while (j + 1 < cpus.length && cpus[j + 1] == cpus[j] + 1) j++;
            if (sb.length() > 0) sb.append(',');
            sb.append(cpus[i]);
            if (j > i) sb.append('-').append(cpus[j]);
            i = j;
        }
        return sb.toString();
    }
}
