package ptfence.packet;

import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.stream.Stream;
import ptfence.output.JsonlPacketPrinter;
import ptfence.output.PtdumpOptions;
import ptfence.output.PtdumpPrinter;
import ptfence.output.TextSink;
import ptfence.timing.TimingConfig;

/**
 * Mutation fuzzing of the packet layer over the libipt corpus traces: bit flips, byte stores, truncation,
 * insertion, deletion and splices of two traces. For every mutant it checks that decoding never throws
 * anything but {@link TraceDecodeException}, always terminates within a bound set by the input size,
 * gives the same packets and errors through {@link PacketCursor#next()} and {@link PacketCursor#skipAll()},
 * and that the ptdump and JSONL printers (with time tracking, last-IP, raw bytes) run through it with
 * output bounded by the input size.
 *
 * <p>{@code PacketFuzzTest} runs a fixed number of mutants; {@link #main} runs for as long as asked:
 * <pre>java ... ptfence.packet.PacketFuzz [seconds] [seed]</pre>
 */
public final class PacketFuzz {
    private final List<byte[]> seeds;
    private final Random rnd;
    private long mutants;
    private long packets;
    private long errors;

    public PacketFuzz(List<byte[]> seeds, long seed) {
        this.seeds = seeds;
        this.rnd = new Random(seed);
    }

    /** All corpus traces under {@code corpusDir} (each case's {@code <name>.pt}). */
    public static List<byte[]> corpusTraces(Path corpusDir) throws java.io.IOException {
        List<byte[]> out = new ArrayList<>();
        try (Stream<Path> s = Files.walk(corpusDir, 2)) {
            for (Path p : s.filter(p -> p.toString().endsWith(".pt")).sorted().toList()) {
                out.add(Files.readAllBytes(p));
            }
        }
        return out;
    }

    public long mutants() {
        return mutants;
    }

    public long packets() {
        return packets;
    }

    public long errors() {
        return errors;
    }

    /** Runs {@code count} mutants; throws AssertionError (with the mutant in hex) on the first violation. */
    public void run(long count) {
        for (long k = 0; k < count; k++) {
            byte[] m = mutate();
            try {
                check(m, (k & 7) == 0);
            } catch (AssertionError | RuntimeException e) {
                throw new AssertionError("mutant " + k + " (" + m.length + " bytes): " + hex(m) + ": " + e, e);
            }
            mutants++;
        }
    }

    byte[] mutate() {
        byte[] a = seeds.get(rnd.nextInt(seeds.size()));
        byte[] m = a.clone();
        int ops = 1 + rnd.nextInt(4);
        for (int op = 0; op < ops; op++) {
            if (m.length == 0) {
                m = new byte[] {(byte) rnd.nextInt(256)};
            }
            switch (rnd.nextInt(7)) {
                case 0, 1 -> { // bit flips
                    int flips = 1 + rnd.nextInt(8);
                    for (int f = 0; f < flips; f++) {
                        int i = rnd.nextInt(m.length);
                        m[i] ^= (byte) (1 << rnd.nextInt(8));
                    }
                }
                case 2 -> m[rnd.nextInt(m.length)] = (byte) rnd.nextInt(256);
                case 3 -> m = java.util.Arrays.copyOf(m, rnd.nextInt(m.length + 1));
                case 4 -> { // insert random bytes
                    int at = rnd.nextInt(m.length + 1);
                    int n = 1 + rnd.nextInt(16);
                    byte[] r = new byte[m.length + n];
                    System.arraycopy(m, 0, r, 0, at);
                    for (int j = 0; j < n; j++) {
                        r[at + j] = (byte) rnd.nextInt(256);
                    }
                    System.arraycopy(m, at, r, at + n, m.length - at);
                    m = r;
                }
                case 5 -> { // delete a range
                    int at = rnd.nextInt(m.length);
                    int n = Math.min(m.length - at, 1 + rnd.nextInt(16));
                    byte[] r = new byte[m.length - n];
                    System.arraycopy(m, 0, r, 0, at);
                    System.arraycopy(m, at + n, r, at, m.length - at - n);
                    m = r;
                }
                default -> { // splice: prefix of this one, suffix of another trace
                    byte[] b = seeds.get(rnd.nextInt(seeds.size()));
                    int cutA = rnd.nextInt(m.length + 1);
                    int cutB = b.length == 0 ? 0 : rnd.nextInt(b.length);
                    byte[] r = new byte[cutA + b.length - cutB];
                    System.arraycopy(m, 0, r, 0, cutA);
                    System.arraycopy(b, cutB, r, cutA, b.length - cutB);
                    m = r;
                }
            }
        }
        return m;
    }

    /** One decode outcome: packets (offset, type, size) and errors (offset, kind), in order. */
    private static List<long[]> decodeWithNext(PacketCursor c, boolean sync, long bound) {
        List<long[]> out = new ArrayList<>();
        long steps = 0;
        if (sync) {
            if (!c.syncForward()) {
                return out;
            }
        } else {
            c.seek(0);
        }
        for (;;) {
            if (++steps > bound) {
                throw new AssertionError("no progress: more than " + bound + " steps");
            }
            try {
                long before = c.position();
                int t = c.next();
                if (t == PacketCursor.END) {
                    return out;
                }
                if (c.position() <= before) {
                    throw new AssertionError("cursor did not advance at " + before);
                }
                c.packet(); // the record face must accept every packet the cursor returns
                out.add(new long[] {c.offset(), t, c.size()});
            } catch (TraceDecodeException e) {
                out.add(new long[] {e.offset(), -1 - e.error().ordinal(), 0});
                if (e.error() == DecodeError.TRUNCATED) {
                    return out;
                }
                long before = c.position();
                if (!c.syncForward()) {
                    return out;
                }
                if (c.position() < before - PacketCursor.PSB_SIZE) {
                    throw new AssertionError("sync went backwards from " + before + " to " + c.position());
                }
            }
        }
    }

    /** The same walk with skipAll(): only the packet counts between errors and the errors themselves. */
    private static List<long[]> summarize(List<long[]> full) {
        List<long[]> out = new ArrayList<>();
        long n = 0;
        for (long[] e : full) {
            if (e[1] < 0) {
                out.add(new long[] {n, e[0], e[1]});
                n = 0;
            } else {
                n++;
            }
        }
        out.add(new long[] {n, -1, 0});
        return out;
    }

    private static List<long[]> decodeWithSkip(PacketCursor c, long bound) {
        List<long[]> out = new ArrayList<>();
        if (!c.syncForward()) {
            out.add(new long[] {0, -1, 0});
            return out;
        }
        for (long steps = 0; ; steps++) {
            if (steps > bound) {
                throw new AssertionError("skipAll: no progress");
            }
            try {
                long n = c.skipAll();
                out.add(new long[] {n, -1, 0});
                return out;
            } catch (TraceDecodeException e) {
                out.add(new long[] {c.skipped(), e.offset(), -1 - e.error().ordinal()});
                if (e.error() == DecodeError.TRUNCATED || !c.syncForward()) {
                    out.add(new long[] {0, -1, 0});
                    return out;
                }
            }
        }
    }

    void check(byte[] m, boolean printers) {
        long bound = 4L * m.length + 8;
        List<long[]> synced = decodeWithNext(new PacketCursor(TraceSource.of(m)), true, bound);
        List<long[]> raw = decodeWithNext(new PacketCursor(TraceSource.of(m), errataFor(m)), false, bound);
        for (long[] e : synced) {
            if (e[1] < 0) {
                errors++;
            } else {
                packets++;
            }
        }
        packets += raw.size();
        List<long[]> viaNext = summarize(synced);
        List<long[]> viaSkip = decodeWithSkip(new PacketCursor(TraceSource.of(m)), bound);
        if (viaNext.size() != viaSkip.size()) {
            throw new AssertionError("next() and skipAll() disagree: " + viaNext.size() + " vs " + viaSkip.size()
                    + " segments");
        }
        for (int i = 0; i < viaNext.size(); i++) {
            if (!java.util.Arrays.equals(viaNext.get(i), viaSkip.get(i))) {
                throw new AssertionError("next() and skipAll() disagree at segment " + i + ": "
                        + java.util.Arrays.toString(viaNext.get(i)) + " vs " + java.util.Arrays.toString(viaSkip.get(i)));
            }
        }
        if (printers) {
            CountingSink sink = new CountingSink();
            TextSink out = new TextSink(sink, 4096);
            PtdumpOptions opt = new PtdumpOptions(true, true, true, true, true, rnd.nextBoolean(), false, true,
                    rnd.nextBoolean(), false, false, rnd.nextBoolean(), rnd.nextBoolean(), rnd.nextBoolean(), false,
                    false, errataFor(m), new TimingConfig(rnd.nextInt(16), rnd.nextInt(8), 1 + rnd.nextInt(3),
                    rnd.nextInt(9), rnd.nextBoolean()));
            new PtdumpPrinter(opt, out, null).dump(new PacketCursor(TraceSource.of(m), opt.errata()));
            PtdumpOptions tcal = new PtdumpOptions(false, false, false, false, true, false, true, rnd.nextBoolean(),
                    false, false, true, false, false, false, false, false, Errata.NONE,
                    new TimingConfig(3, 4, 2, 7, true));
            new PtdumpPrinter(tcal, out, null).dump(new PacketCursor(TraceSource.of(m)));
            new JsonlPacketPrinter(out, rnd.nextBoolean(), false).dump(new PacketCursor(TraceSource.of(m)));
            out.flush();
            if (sink.count > 3000L * (m.length + 16)) {
                throw new AssertionError("output not bounded by input: " + sink.count + " bytes for " + m.length);
            }
        }
    }

    private Errata errataFor(byte[] m) {
        // Exercise the erratum paths (SKD007 CYC/OVF, SKZ84 TMA) on some mutants.
        return (m.length & 3) == 0 ? Errata.of(new Errata.Cpu(6, 0x9e, 0)) : (m.length & 3) == 1
                ? Errata.of(new Errata.Cpu(6, 0x55, 0)) : Errata.NONE;
    }

    private static String hex(byte[] m) {
        StringBuilder s = new StringBuilder();
        for (int i = 0; i < Math.min(m.length, 512); i++) {
            s.append(String.format("%02x", m[i]));
        }
        return s.toString();
    }

    private static final class CountingSink extends OutputStream {
        long count;

        @Override
        public void write(int b) {
            count++;
        }

        @Override
        public void write(byte[] b, int off, int len) {
            count += len;
        }
    }

    /** Long fuzz run: {@code PacketFuzz [seconds=600] [seed=random]} over fixtures/data/corpus/libipt. */
    public static void main(String[] args) throws Exception {
        long seconds = args.length > 0 ? Long.parseLong(args[0]) : 600;
        long seed = args.length > 1 ? Long.parseLong(args[1]) : System.nanoTime();
        Path corpus = Path.of(System.getProperty("ptfence.data", "../fixtures/data"), "corpus", "libipt");
        PacketFuzz f = new PacketFuzz(corpusTraces(corpus), seed);
        long deadline = System.nanoTime() + seconds * 1_000_000_000L;
        System.out.println("fuzzing the packet layer for " + seconds + " s, seed " + seed);
        while (System.nanoTime() < deadline) {
            f.run(10_000);
        }
        System.out.printf("%d mutants, %d packets, %d decode errors, no violations%n", f.mutants(), f.packets(),
                f.errors());
    }
}
