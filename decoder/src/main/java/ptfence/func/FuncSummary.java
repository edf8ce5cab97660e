package ptfence.func;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import ptfence.cli.Json;
import ptfence.image.Section;
import ptfence.insn.ExecMode;
import ptfence.insn.InsnClass;
import ptfence.insn.X86Decoder;

/**
 * The aggregate view of a function's invocations ({@code --summary}): how many, how long (instructions), how each
 * conditional branch went, how much of the code ran (basic blocks of the JIT image), which paths were the common
 * ones, and what the function called out to and for how long.
 *
 * <p>Basic blocks come from a linear decode of the function's code (JIT images hold code only): a block starts at
 * the start of a region, at the target of a direct jump or call inside the region, and after any jump, branch or
 * return; calls do not end a block (the callee returns to the next instruction).
 */
public final class FuncSummary {

    /** A conditional branch: its address, its target (-1 when not decoded), and how often it went each way. */
    public record Branch(long address, long target, long taken, long notTaken) {}

    /** A basic block of the code, [start, end), and the invocations that ran at least one of its instructions. */
    public record Block(long start, long end, long invocations) {
        public long size() {
            return end - start;
        }
    }

    /**
     * A distinct path: the exact sequence of instruction addresses, shared by {@code count} invocations.
     *
     * @param signature  16 hex digits: FNV-1a (64-bit) over the path's addresses, each 8 bytes little-endian
     * @param insns      its length in instructions
     * @param decisions  its non-plain steps in order ({@code T N C c r t j} as in the invocation's {@code steps})
     * @param count      invocations that took exactly this path
     * @param example    index (in the summarized list) of the first invocation that took it
     */
    public record PathCount(String signature, int insns, String decisions, long count, int example) {}

    /**
     * Calls out to one target name.
     *
     * @param name     callee
     * @param count    calls
     * @param timed    calls whose enter and exit times are known
     * @param totalNs  summed duration of the timed calls
     * @param insns    instructions traced inside the callee, summed
     */
    public record CallStats(String name, long count, long timed, long totalNs, long insns) {
        /** Mean duration of the timed calls (ns); 0 when none was timed. */
        public double meanNs() {
            return timed == 0 ? 0 : (double) totalNs / timed;
        }
    }

    private final String function;
    private final int invocations;
    private final int insnsMin, insnsMedian, insnsMax;
    private final List<Branch> branches;
    private final List<Block> blocks;
    private final long outsideBlocks;
    private final int distinctPaths;
    private final List<PathCount> hottestPaths;
    private final List<CallStats> calls;

    private FuncSummary(String function, int invocations, int[] insns, List<Branch> branches, List<Block> blocks,
            long outsideBlocks, int distinctPaths, List<PathCount> hottestPaths, List<CallStats> calls) {
        this.function = function;
        this.invocations = invocations;
        this.insnsMin = insns[0];
        this.insnsMedian = insns[1];
        this.insnsMax = insns[2];
        this.branches = List.copyOf(branches);
        this.blocks = List.copyOf(blocks);
        this.outsideBlocks = outsideBlocks;
        this.distinctPaths = distinctPaths;
        this.hottestPaths = List.copyOf(hottestPaths);
        this.calls = List.copyOf(calls);
    }

    /**
     * Summarizes {@code invocations} of {@code function} over its code.
     *
     * @param code      the function's code regions (and of any program it tail-calls), as decoded
     * @param topPaths  how many of the hottest distinct paths to keep
     */
    public static FuncSummary of(String function, List<Invocation> invocations, Collection<Section> code,
            int topPaths) {
        Builder b = new Builder(function);
        invocations.forEach(b::add);
        return b.build(code, topPaths);
    }

    /**
     * Gathers invocations one at a time, keeping one copy of each distinct path (with its steps) and counts, not
     * the invocations: memory follows how varied the function's runs are, not how many there were.
     */
    public static final class Builder {
        private final String function;
        private final InsnCounts insns = new InsnCounts();
        /** (path, steps) → {count, index of the first invocation that ran it}. */
        private final Map<PathKey, long[]> runs = new LinkedHashMap<>();
        private final Map<String, long[]> calls = new HashMap<>(); // name -> {count, timed, total, insns}
        private int added;

        public Builder(String function) {
            this.function = function;
        }

        public void add(Invocation inv) {
            insns.add(inv.instructions());
            long[] c = runs.computeIfAbsent(new PathKey(inv.path(), inv.steps()), k -> new long[2]);
            if (c[0]++ == 0) c[1] = added;
            for (Invocation.Call call : inv.calls()) {
                long[] s = calls.computeIfAbsent(call.name(), n -> new long[4]);
                s[0]++;
                if (call.duration() >= 0) {
                    s[1]++;
                    s[2] += call.duration();
                }
                s[3] += call.insns();
            }
            added++;
        }

        /**
         * @param code      the function's code regions (and of any program it tail-calls), as decoded
         * @param topPaths  how many of the hottest distinct paths to keep
         */
        public FuncSummary build(Collection<Section> code, int topPaths) {
            CodeLayout map = CodeLayout.of(code);

            // Conditional branches: every one the code has (counted in arrays: this loop sees every instruction of
            // every distinct run), then any the paths saw that the code did not explain.
            long[] taken = new long[map.condAddress.length], notTaken = new long[map.condAddress.length];
            Map<Long, long[]> unexplained = new HashMap<>();
            long[] hitBy = new long[map.blockStarts.length];
            int[] lastHit = new int[map.blockStarts.length];
            Arrays.fill(lastHit, -1);
            long outside = 0;
            int k = 0;
            for (Map.Entry<PathKey, long[]> e : runs.entrySet()) {
                long[] path = e.getKey().path;
                byte[] steps = e.getKey().steps;
                long count = e.getValue()[0];
                for (int i = 0; i < path.length; i++) {
                    byte step = i < steps.length ? steps[i] : Invocation.STEP_PLAIN;
                    if (step == Invocation.STEP_TAKEN || step == Invocation.STEP_NOT_TAKEN) {
                        int c = map.conditionalAt(path[i]);
                        int way = step == Invocation.STEP_TAKEN ? 0 : 1;
                        if (c >= 0) (way == 0 ? taken : notTaken)[c] += count;
                        else unexplained.computeIfAbsent(path[i], a -> new long[2])[way] += count;
                    }
                    int b = map.blockAt(path[i]);
                    if (b < 0) {
                        outside += count;
                    } else if (lastHit[b] != k) {
                        lastHit[b] = k;
                        hitBy[b] += count;
                    }
                }
                k++;
            }
            List<Branch> branches = new ArrayList<>(taken.length + unexplained.size());
            for (int c = 0; c < taken.length; c++) {
                branches.add(new Branch(map.condAddress[c], map.condTarget[c], taken[c], notTaken[c]));
            }
            unexplained.forEach((a, c) -> branches.add(new Branch(a, -1, c[0], c[1])));
            branches.sort((x, y) -> Long.compareUnsigned(x.address(), y.address()));
            List<Block> blocks = new ArrayList<>(map.blockStarts.length);
            for (int b = 0; b < map.blockStarts.length; b++) {
                blocks.add(new Block(map.blockStarts[b], map.blockEnds[b], hitBy[b]));
            }

            // Distinct paths (address sequences; runs that differ only in a step's recorded direction join).
            Map<PathKey, PathCount> byPath = new LinkedHashMap<>();
            runs.forEach((run, c) -> byPath.merge(new PathKey(run.path, null),
                    new PathCount(signature(run.path), run.path.length, decisions(run.steps), c[0], (int) c[1]),
                    (a, b) -> {
                        PathCount first = a.example() <= b.example() ? a : b;
                        return new PathCount(first.signature(), first.insns(), first.decisions(),
                                a.count() + b.count(), first.example());
                    }));
            List<PathCount> hottest = new ArrayList<>(byPath.values());
            hottest.sort(Comparator.comparingLong(PathCount::count).reversed().thenComparingInt(PathCount::example));
            int distinct = hottest.size();
            List<PathCount> top = hottest.subList(0, Math.min(Math.max(0, topPaths), distinct));

            List<CallStats> callStats = new ArrayList<>();
            calls.forEach((n, s) -> callStats.add(new CallStats(n, s[0], s[1], s[2], s[3])));
            callStats.sort(Comparator.comparingLong(CallStats::count).reversed().thenComparing(CallStats::name));

            return new FuncSummary(function, added, new int[] {insns.min(), insns.median(), insns.max()}, branches,
                    blocks, outside, distinct, new ArrayList<>(top), callStats);
        }
    }

    public String function() { return function; }
    public int invocations() { return invocations; }
    public int insnsMin() { return insnsMin; }
    /** The median: the middle length, or the upper of the two middle ones for an even count (as FuncPrinter). */
    public int insnsMedian() { return insnsMedian; }
    public int insnsMax() { return insnsMax; }
    /** Every conditional branch of the code and of the paths, by address. */
    public List<Branch> branches() { return branches; }
    /** Every basic block of the code, by address within each region. */
    public List<Block> blocks() { return blocks; }
    /** Path instructions that fall in no block (code the summary was not given). */
    public long outsideBlocks() { return outsideBlocks; }
    public int distinctPaths() { return distinctPaths; }
    /** The most frequent distinct paths, most frequent first (ties: first seen first). */
    public List<PathCount> hottestPaths() { return hottestPaths; }
    /** Calls out by callee name, most frequent first. */
    public List<CallStats> calls() { return calls; }

    public int blocksHit() {
        return (int) blocks.stream().filter(b -> b.invocations > 0).count();
    }

    public long bytesHit() {
        return blocks.stream().filter(b -> b.invocations > 0).mapToLong(Block::size).sum();
    }

    public long bytesTotal() {
        return blocks.stream().mapToLong(Block::size).sum();
    }

    /** The view as text for a terminal. */
    public String text() {
        return text(null);
    }

    /** The view as text, never-run blocks and branches followed by their source line when {@code source} knows it. */
    public String text(SourceLines source) {
        StringBuilder sb = new StringBuilder();
        sb.append(String.format("%s: %d invocations, instructions per invocation min %d, median %d, max %d%n",
                function, invocations, insnsMin, insnsMedian, insnsMax));
        sb.append(String.format("coverage: %d of %d basic blocks (%s), %d of %d bytes (%s)%s%n", blocksHit(),
                blocks.size(), percent(blocksHit(), blocks.size()), bytesHit(), bytesTotal(),
                percent(bytesHit(), bytesTotal()),
                outsideBlocks == 0 ? "" : ", " + outsideBlocks + " instructions outside the given code"));
        int shown = 0;
        for (Block b : blocks) {
            if (b.invocations > 0) continue;
            if (shown++ == UNRUN_BLOCKS_SHOWN) {
                sb.append(String.format("  ... %d more%n", blocks.size() - blocksHit() - UNRUN_BLOCKS_SHOWN));
                break;
            }
            if (shown == 1) sb.append("never run:\n");
            sb.append(String.format("  %s-%s %5d bytes%s%n", Json.hex(b.start), Json.hex(b.end), b.size(),
                    where(source, b.start)));
        }
        sb.append(String.format("conditional branches: %d%n", branches.size()));
        if (!branches.isEmpty()) {
            sb.append(String.format("  %-18s %-18s %10s %10s%n", "address", "target", "taken", "not-taken"));
            for (Branch b : branches) {
                sb.append(String.format("  %-18s %-18s %10d %10d%s%n", Json.hex(b.address),
                        b.target == -1 ? "?" : Json.hex(b.target), b.taken, b.notTaken, where(source, b.address)));
            }
        }
        sb.append(String.format("paths: %d distinct, %d hottest:%n", distinctPaths, hottestPaths.size()));
        for (PathCount p : hottestPaths) {
            String d = p.decisions.length() > 60 ? p.decisions.substring(0, 60) + "..." : p.decisions;
            sb.append(String.format("  %8d x  %s  %6d insns  %s%n", p.count, p.signature, p.insns,
                    d.isEmpty() ? "(straight)" : d));
        }
        sb.append(String.format("calls out: %d targets%n", calls.size()));
        if (!calls.isEmpty()) {
            sb.append(String.format("  %-32s %10s %14s %12s%n", "target", "calls", "total ns", "mean ns"));
            for (CallStats c : calls) {
                sb.append(String.format("  %-32s %10d %14s %12s%n", c.name, c.count,
                        c.timed == 0 ? "-" : Long.toString(c.totalNs),
                        c.timed == 0 ? "-" : String.format("%.1f", c.meanNs())));
            }
        }
        return sb.toString();
    }

    /** The view as one {@code "type":"summary"} JSON object (docs/func.md). */
    public String json() {
        StringBuilder br = new StringBuilder("[");
        for (Branch b : branches) {
            if (br.length() > 1) br.append(',');
            br.append(new Json().address("address", b.address)
                    .field("target", b.target == -1 ? null : Json.hex(b.target)).field("taken", b.taken)
                    .field("not_taken", b.notTaken));
        }
        StringBuilder ps = new StringBuilder("[");
        for (PathCount p : hottestPaths) {
            if (ps.length() > 1) ps.append(',');
            ps.append(new Json().field("signature", p.signature).field("count", p.count).field("insns", p.insns)
                    .field("decisions", p.decisions).field("example", p.example));
        }
        StringBuilder bl = new StringBuilder("[");
        for (Block b : blocks) {
            if (bl.length() > 1) bl.append(',');
            bl.append(new Json().address("start", b.start).address("end", b.end)
                    .field("invocations", b.invocations));
        }
        StringBuilder cs = new StringBuilder("[");
        for (CallStats c : calls) {
            if (cs.length() > 1) cs.append(',');
            cs.append(new Json().field("name", c.name).field("count", c.count).field("timed", c.timed)
                    .field("total_ns", c.totalNs).field("mean_ns", c.meanNs()).field("insns", c.insns));
        }
        return new Json().field("type", "summary").field("function", function).field("invocations", invocations)
                .field("insns_min", insnsMin).field("insns_median", insnsMedian).field("insns_max", insnsMax)
                .field("blocks_hit", blocksHit()).field("blocks_total", blocks.size())
                .field("bytes_hit", bytesHit()).field("bytes_total", bytesTotal())
                .field("outside_insns", outsideBlocks).field("distinct_paths", distinctPaths)
                .raw("blocks", bl.append(']').toString()).raw("branches", br.append(']').toString())
                .raw("paths", ps.append(']').toString())
                .raw("calls", cs.append(']').toString()).toString();
    }

    private static final int UNRUN_BLOCKS_SHOWN = 20;

    private static String where(SourceLines source, long address) {
        if (source == null) return "";
        return source.at(address).map(l -> "  " + l.location() + "  " + l.text().strip()).orElse("");
    }

    private static String percent(long part, long whole) {
        return whole == 0 ? "-" : String.format("%.1f%%", 100.0 * part / whole);
    }

    /** FNV-1a, 64-bit, over each address as 8 little-endian bytes. */
    static String signature(long[] path) {
        long h = 0xcbf29ce484222325L;
        for (long a : path) {
            for (int i = 0; i < 8; i++) {
                h ^= (a >>> (8 * i)) & 0xff;
                h *= 0x100000001b3L;
            }
        }
        return String.format("%016x", h);
    }

    /** The steps without the plain ones ("." in docs/func.md's spelling). */
    static String decisions(byte[] steps) {
        return FuncPrinter.steps(steps).replace(".", "");
    }

    /** A path, with or without its steps, compared by content. */
    private record PathKey(long[] path, byte[] steps) {
        @Override
        public boolean equals(Object o) {
            return o instanceof PathKey k && Arrays.equals(path, k.path) && Arrays.equals(steps, k.steps);
        }

        @Override
        public int hashCode() {
            return Arrays.hashCode(path) * 31 + Arrays.hashCode(steps);
        }
    }

    /** The blocks and conditional branches of the code, found by one linear decode of each region. */
    private static final class CodeLayout {
        long[] blockStarts = new long[0], blockEnds = new long[0];
        /** Conditional branches by address, and their targets. */
        long[] condAddress = new long[0], condTarget = new long[0];
        private final TreeMap<Long, Long> conditionals = new TreeMap<>(Long::compareUnsigned);

        static CodeLayout of(Collection<Section> code) {
            CodeLayout m = new CodeLayout();
            X86Decoder d = new X86Decoder();
            List<long[]> blocks = new ArrayList<>();
            java.util.Set<String> seen = new java.util.HashSet<>();
            for (Section s : code) {
                // A program loaded again at the same address with the same code is the same blocks.
                if (seen.add(s.address() + "/" + s.contentId())) m.decode(d, s, blocks);
            }
            blocks.sort((x, y) -> Long.compareUnsigned(x[0], y[0]));
            m.blockStarts = blocks.stream().mapToLong(b -> b[0]).toArray();
            m.blockEnds = blocks.stream().mapToLong(b -> b[1]).toArray();
            m.condAddress = m.conditionals.keySet().stream().mapToLong(Long::longValue).toArray();
            m.condTarget = m.conditionals.values().stream().mapToLong(Long::longValue).toArray();
            return m;
        }

        private void decode(X86Decoder d, Section s, List<long[]> out) {
            byte[] code = s.bytes();
            int n = code.length;
            boolean[] leader = new boolean[n + 1], boundary = new boolean[n + 1];
            int[] length = new int[n];
            leader[0] = true;
            int off = 0;
            while (off < n) {
                int len = d.decode(code, off, n - off, ExecMode.BITS64);
                if (len == 0) { // not code: a block boundary on each side of the byte
                    boundary[off] = true;
                    leader[off] = true;
                    length[off] = -1;
                    leader[off + 1] = true;
                    off++;
                    continue;
                }
                boundary[off] = true;
                length[off] = len;
                long ip = s.address() + off;
                byte cls = d.cls;
                boolean direct = cls == InsnClass.COND_JUMP || cls == InsnClass.JUMP || cls == InsnClass.CALL;
                if (direct) {
                    long target = ip + len + d.displacement;
                    long rel = target - s.address();
                    if (rel >= 0 && rel < n) leader[(int) rel] = true;
                    if (cls == InsnClass.COND_JUMP) conditionals.put(ip, target);
                }
                if (InsnClass.isBranch(cls) && cls != InsnClass.CALL && cls != InsnClass.CALL_INDIRECT) {
                    leader[off + len] = true;
                }
                off += len;
            }
            int start = -1;
            for (int i = 0; i <= n; i++) {
                boolean cut = i == n || (boundary[i] && leader[i]);
                if (cut && start >= 0) {
                    out.add(new long[] {s.address() + start, s.address() + i});
                    start = -1;
                }
                if (i < n && boundary[i] && length[i] > 0 && start < 0) start = i;
            }
        }

        /** Index of the conditional branch at {@code address}, or -1. */
        int conditionalAt(long address) {
            int i = SortedAddresses.lastAtOrBelow(condAddress, address);
            return i >= 0 && condAddress[i] == address ? i : -1;
        }

        /** Index of the block holding {@code address}, or -1. */
        int blockAt(long address) {
            int found = SortedAddresses.lastAtOrBelow(blockStarts, address);
            return found >= 0 && Long.compareUnsigned(address, blockEnds[found]) < 0 ? found : -1;
        }
    }
}
