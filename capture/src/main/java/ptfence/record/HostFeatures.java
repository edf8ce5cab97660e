package ptfence.record;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import ptfence.perfdata.Feature;

/** The header features perf writes about the host: hostname, kernel release, arch, CPUs, CPU description and id. */
final class HostFeatures {
    private HostFeatures() {}

    static List<Feature> read(List<String> cmdline) {
        List<Feature> out = new ArrayList<>();
        out.add(new Feature.Text(Feature.HOSTNAME, firstLine(Path.of("/proc/sys/kernel/hostname"), "localhost")));
        out.add(new Feature.Text(Feature.OSRELEASE, firstLine(Path.of("/proc/sys/kernel/osrelease"), "unknown")));
        out.add(new Feature.Text(Feature.VERSION, "ptrec 0.1.0"));
        out.add(new Feature.Text(Feature.ARCH, System.getProperty("os.arch").equals("amd64") ? "x86_64"
                : System.getProperty("os.arch")));
        int online = Runtime.getRuntime().availableProcessors();
        out.add(new Feature.NrCpus(possibleCpus(online), online));
        String vendor = "", family = "", model = "", stepping = "", name = "";
        try {
            for (String line : Files.readAllLines(Path.of("/proc/cpuinfo"))) {
                if (line.isBlank()) break; // the first CPU is enough
                int colon = line.indexOf(':');
                if (colon < 0) continue;
                String k = line.substring(0, colon).trim(), v = line.substring(colon + 1).trim();
                switch (k) {
                    case "vendor_id" -> vendor = v;
                    case "cpu family" -> family = v;
                    case "model" -> model = v;
                    case "stepping" -> stepping = v;
                    case "model name" -> name = v;
                    default -> { }
                }
            }
        } catch (IOException e) {
            // no /proc/cpuinfo: leave the CPU features out rather than invent them
        }
        if (!name.isEmpty()) out.add(new Feature.Text(Feature.CPUDESC, name));
        if (!vendor.isEmpty()) out.add(new Feature.Text(Feature.CPUID, vendor + "," + family + "," + model + "," + stepping));
        out.add(new Feature.Cmdline(cmdline));
        return out;
    }

    /** /sys/devices/system/cpu/possible, e.g. "0-1", gives the count perf calls "available". */
    static int possibleCpus(int fallback) {
        try {
            String s = Files.readString(Path.of("/sys/devices/system/cpu/possible")).trim();
            return CpuList.parse(s).length;
        } catch (IOException | RuntimeException e) {
            return fallback;
        }
    }

    private static String firstLine(Path p, String fallback) {
        try {
            return Files.readString(p).trim();
        } catch (IOException e) {
            return fallback;
        }
    }
}
