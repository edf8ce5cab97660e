package ptfence.flow;

import java.io.IOException;
import java.io.PrintWriter;
import java.io.Writer;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import ptfence.image.ElfSegments;
import ptfence.image.Image;
import ptfence.image.RawSection;
import ptfence.insn.CodeCache;
import ptfence.insn.InsnClass;
import ptfence.output.CountingSink;
import ptfence.packet.PacketCursor;
import ptfence.packet.TraceSource;

/**
 * Profiling aid (not a test): where a trace's decode time goes. Prints the packet mix (count and bytes per kind),
 * the decision points (instructions by class from a full instruction-level decode), the caches' misses (instruction
 * decodes, blocks built, TNT-path memo lookups and misses), and the time of each layer on its own: packets only,
 * the event layer, the full instruction flow, and the counting fast path ({@code --quiet}). Run it under JFR or
 * {@code -XX:+PrintInlining} for the hot methods (docs/flow.md, "Profile").
 *
 * <pre>
 * java -cp ... ptfence.flow.FlowProfile [--cpu F/M/S] (--elf FILE[:BASE] | --raw FILE:ADDR)... --pt FILE [--repeat N]
 *     [--quiet-only]   (only the counting runs; -Dptfence.profile.skipOnly=true: only those passing timing over;
 *                      -Dptfence.profile.coverage=true: those runs fill a coverage bitmap, as --coverage does)
 * </pre>
 */
public final class FlowProfile {
    private FlowProfile() {}

    public static void main(String[] args) throws IOException {
        FlowConfig cfg = new FlowConfig();
        Image image = new Image();
        Path pt = null;
        int repeat = 3;
        boolean quietOnly = false;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--cpu" -> cfg.setCpu(args[++i]);
                case "--elf" -> image.addAll(ElfSegments.parse(args[++i]));
                case "--raw" -> image.addAll(RawSection.parse(args[++i]));
                case "--pt" -> pt = Path.of(args[++i]);
                case "--repeat" -> repeat = Integer.parseInt(args[++i]);
                case "--quiet-only" -> quietOnly = true;
                default -> throw new IllegalArgumentException(args[i]);
            }
        }
        ByteBuffer trace;
        try (FileChannel ch = FileChannel.open(pt, StandardOpenOption.READ)) {
            trace = ch.map(FileChannel.MapMode.READ_ONLY, 0, ch.size());
        }
        double mb = trace.remaining() / 1e6;
        System.out.printf("trace %s: %.1f MB%n", pt.getFileName(), mb);

        if (quietOnly) {
            quietRuns(image, cfg, trace, repeat, mb);
            return;
        }
        // Packets by kind.
        long[] count = new long[PacketCursor.INVALID + 1];
        long[] bytes = new long[PacketCursor.INVALID + 1];
        long tntBits = 0;
        PacketCursor c = new PacketCursor(TraceSource.of(trace.duplicate()), cfg.errata);
        c.syncForward();
        long t0 = System.nanoTime();
        while (true) {
            int t;
            try {
                t = c.next();
            } catch (ptfence.packet.TraceDecodeException e) {
                if (!c.syncForward()) {
                    break;
                }
                continue;
            }
            if (t == PacketCursor.END) {
                break;
            }
            count[t]++;
            bytes[t] += c.size();
            if (t == PacketCursor.TNT_8 || t == PacketCursor.TNT_64) {
                tntBits += c.tntCount();
            }
        }
        double packetSecs = (System.nanoTime() - t0) / 1e9;
        long packets = 0;
        for (long n : count) {
            packets += n;
        }
        System.out.printf("%-10s %12s %7s %12s %7s%n", "packet", "count", "%", "bytes", "%");
        String[] names = {"PAD", "PSB", "PSBEND", "TNT-8", "TNT-64", "TIP", "TIP.PGE", "TIP.PGD", "FUP", "PIP",
            "MODE.Exec", "MODE.TSX", "TSC", "MTC", "CYC", "TMA", "CBR", "VMCS", "OVF", "MNT", "STOP", "PTW", "EXSTOP",
            "MWAIT", "PWRE", "PWRX", "CFE", "EVD", "TRIG", "BBP", "BIP", "BEP", "invalid"};
        for (int t = 0; t < count.length; t++) {
            if (count[t] > 0) {
                System.out.printf("%-10s %12d %6.1f%% %12d %6.1f%%%n", names[t], count[t], 100.0 * count[t] / packets,
                        bytes[t], 100.0 * bytes[t] / trace.remaining());
            }
        }
        System.out.printf("packets %d, TNT bits %d; packet layer alone %.2f s (%.0f MB/s)%n", packets, tntBits,
                packetSecs, mb / packetSecs);

        // The event layer alone: every event the flow would see, nothing walked.
        EventDecoder evd = new EventDecoder(CursorInput.of(trace.duplicate(), cfg.errata), cfg);
        Event ev = new Event();
        t0 = System.nanoTime();
        long events = 0;
        long from = 0;
        while (evd.syncForward(from) == 0) {
            int st;
            while ((st = evd.next(ev)) == 0) {
                events++;
            }
            if (st == PtError.EOS) {
                break;
            }
            from = evd.position();
        }
        double eventSecs = (System.nanoTime() - t0) / 1e9;
        System.out.printf("event layer alone: %d events, %.2f s (%.0f MB/s)%n", events, eventSecs, mb / eventSecs);

        // Decision points: every instruction by class (instruction-flow decoder, nothing printed).
        long[] byClass = new long[16];
        FlowSink classes = new FlowSink() {
            @Override
            public void insn(long ip, int size, int cls, int mode, boolean speculative) {
                byClass[cls]++;
            }

            @Override
            public void block(long ip, int n, CodeCache code, int off, int mode, boolean speculative) {
            }

            @Override
            public void event(Event e) {
            }

            @Override
            public void error(String kind, int code, long offset, long ip) {
            }

            @Override
            public void endOfTrace() {
            }
        };
        long misses0 = CodeCache.DECODE_MISSES.sum();
        long blocks0 = CodeCache.BLOCK_MISSES.sum();
        t0 = System.nanoTime();
        FlowDecoder full = new FlowDecoder(image, cfg, CursorInput.of(trace.duplicate(), cfg.errata), classes, false);
        full.run();
        double fullSecs = (System.nanoTime() - t0) / 1e9;
        System.out.printf("instruction flow (each instruction to a sink): %d insns, %d errors, %.2f s (%.0f MB/s, %.0f M insn/s)%n",
                full.instructions, full.errors, fullSecs, mb / fullSecs, full.instructions / fullSecs / 1e6);
        String[] cls = {"other", "cond_jump", "jump", "jump_indirect", "call", "call_indirect", "return", "far_call",
            "far_jump", "far_return", "ptwrite"};
        long branches = 0;
        for (int k = 1; k < cls.length; k++) {
            branches += byClass[k];
        }
        System.out.printf("decision points (branches %d, one per %.1f insns):%n", branches,
                (double) full.instructions / Math.max(1, branches));
        for (int k = 1; k < cls.length; k++) {
            if (byClass[k] > 0) {
                System.out.printf("  %-14s %12d %6.1f%%%n", cls[k], byClass[k], 100.0 * byClass[k] / branches);
            }
        }
        long compressed = tntBits - byClass[InsnClass.COND_JUMP];
        System.out.printf("  returns compressed (TNT bit) %d, by TIP %d%n", compressed, byClass[InsnClass.RETURN] - compressed);
        System.out.printf("first decode: instruction decode misses %d, blocks built %d%n",
                CodeCache.DECODE_MISSES.sum() - misses0, CodeCache.BLOCK_MISSES.sum() - blocks0);

        quietRuns(image, cfg, trace, repeat, mb);
    }

    /**
     * The counting fast path (--quiet), timing packets computed and passed over, repeated (warm caches, JIT); with
     * {@code -Dptfence.profile.coverage=true} the coverage path ({@code --coverage}: a bitmap) instead.
     */
    private static void quietRuns(Image image, FlowConfig cfg, ByteBuffer trace, int repeat, double mb) {
        boolean[] modes = Boolean.getBoolean("ptfence.profile.skipOnly") ? new boolean[] {true} : new boolean[] {false, true};
        boolean coverage = Boolean.getBoolean("ptfence.profile.coverage");
        for (boolean skip : modes) {
            for (int r = 0; r < repeat; r++) {
                FlowSink quiet = coverage
                        ? new ptfence.coverage.EdgeCoverage(new PrintWriter(Writer.nullWriter()), false, true)
                        : new CountingSink(new PrintWriter(Writer.nullWriter()));
                java.lang.management.ThreadMXBean mx = java.lang.management.ManagementFactory.getThreadMXBean();
                long c0 = mx.getCurrentThreadCpuTime();
                long t0 = System.nanoTime();
                FlowDecoder d = new FlowDecoder(image, cfg,
                        CursorInput.of(trace.duplicate(), cfg.errata).skipTiming(skip), quiet, false);
                d.run();
                if (coverage) {
                    ((ptfence.coverage.EdgeCoverage) quiet).bitmap(); // the paths' edges added, as --coverage writes it
                }
                double s = (System.nanoTime() - t0) / 1e9;
                double cpu = (mx.getCurrentThreadCpuTime() - c0) / 1e9;
                System.out.printf((coverage ? "coverage" : "quiet") + " run %d%s: %d insns, %.2f s, cpu %.2f s (%.0f MB/s "
                        + "of cpu, %.0f M insn/s); TNT memo lookups %d, misses %d (this thread's, so far)%n", r + 1,
                        skip ? " (timing passed over)" : "", d.instructions, s, cpu, mb / cpu, d.instructions / cpu / 1e6,
                        d.tntPaths().lookups, d.tntPaths().misses);
            }
        }
    }
}
