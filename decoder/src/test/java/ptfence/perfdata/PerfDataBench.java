package ptfence.perfdata;

import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/**
 * Bench (not a test): writes a recording of sideband records and AUX buffers with {@link PerfDataWriter}, then
 * reads it back as typed records and extracts the AUX; prints a table of MB/s and records/s.
 * {@code java -cp ... ptfence.perfdata.PerfDataBench [records] [auxMiB]}
 */
public final class PerfDataBench {
    public static void main(String[] args) throws Exception {
        int records = args.length > 0 ? Integer.parseInt(args[0]) : 2_000_000;
        int auxMiB = args.length > 1 ? Integer.parseInt(args[1]) : 256;
        Path p = Files.createTempFile("ptfence-bench", ".perf");
        try {
            EventAttr pt = Samples.ptAttr();
            EventAttr sb = Samples.sidebandAttr(Samples.PT_SAMPLE_TYPE);
            List<AttrIds> attrs = List.of(new AttrIds(pt, List.of(1L, 2L)), new AttrIds(sb, List.of(3L, 4L)));
            ByteBuffer aux = Samples.ptBytes(1 << 20);
            long t0 = System.nanoTime();
            try (PerfDataWriter w = PerfDataWriter.create(p, attrs)) {
                w.write(Samples.ptInfo("").toRecord());
                int auxEvery = Math.max(1, records / Math.max(1, auxMiB));
                int auxLeft = auxMiB;
                for (int i = 0; i < records; i++) {
                    SampleId s = Samples.sid(Samples.SID_LAYOUT, i & 3, 1_000_000L + i, 3);
                    switch (i % 4) {
                        case 0 -> w.write(new PerfRecord.SwitchCpuWide(PerfRecord.MISC_SWITCH_OUT, 100 + i, 100 + i, s));
                        case 1 -> w.write(new PerfRecord.Mmap2(2, i, i, 0x400000L + i * 4096L, 4096, 0, 8, 1, i, 0, 5, 2,
                                "/usr/lib/x86_64-linux-gnu/libc.so.6", s));
                        case 2 -> w.write(new PerfRecord.Ksymbol(0, 0xffffffffc0000000L + i * 64L, 64, 1, 0,
                                "bpf_prog_6deef7357e7b4530_sd_fw_egress", s));
                        default -> w.write(new PerfRecord.Aux(0, (long) i << 12, 4096, 0, s));
                    }
                    if (auxLeft > 0 && i % auxEvery == 0) {
                        auxLeft--;
                        w.write(new PerfRecord.Auxtrace(0, aux.remaining(), 0, i, i & 3, -1, i & 3, 0, aux.duplicate()));
                    }
                    if (i % 500_000 == 0) {
                        w.flush();
                    }
                }
            }
            long t1 = System.nanoTime();
            long size = Files.size(p);
            long n = 0;
            long t2 = System.nanoTime();
            try (PerfDataFile f = PerfDataFile.open(p)) {
                PerfDataFile.RecordReader r = f.records();
                while (r.hasNext()) {
                    r.next();
                    n++;
                }
            }
            long t3 = System.nanoTime();
            long auxBytes = 0;
            try (PerfDataFile f = PerfDataFile.open(p)) {
                for (AuxBuffer b : AuxTrace.extract(f).buffers()) {
                    auxBytes += b.data().remaining();
                }
            }
            long t4 = System.nanoTime();
            System.out.printf("%-28s %10s %12s %12s%n", "phase", "seconds", "MB/s", "records/s");
            row("write (PerfDataWriter)", t1 - t0, size, n);
            row("read typed records", t3 - t2, size, n);
            row("extract AUX (records+AUX)", t4 - t3, size, n);
            System.out.printf("file %d MB, %d records, %d MB of AUX%n", size >> 20, n, auxBytes >> 20);
        } finally {
            Files.deleteIfExists(p);
        }
    }

    private static void row(String name, long nanos, long bytes, long records) {
        double s = nanos / 1e9;
        System.out.printf("%-28s %10.2f %12.0f %12.0f%n", name, s, bytes / 1e6 / s, records / s);
    }
}
