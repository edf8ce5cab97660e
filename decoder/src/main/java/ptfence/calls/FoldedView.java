package ptfence.calls;

import java.io.IOException;
import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import ptfence.symbol.Symbol;
import ptfence.symbol.Symbolizer;

/**
 * {@code --format folded}: one line per distinct call path, "root;caller;callee weight", as flamegraph.pl and
 * speedscope read it (Brendan Gregg's folded stacks). The weight is the instructions run with exactly that path on
 * the stack (or, by time, the nanoseconds between the thread's items). Paths are kept as a tree of (parent, name)
 * nodes, so memory grows with the distinct paths, not with the trace.
 */
public final class FoldedView implements CallView {
    private final PrintWriter out;
    private final Symbolizer names;
    private final boolean byTime;
    private final Map<String, Integer> children = new HashMap<>();
    private final List<String> nodeName = new ArrayList<>();
    private int[] parent = new int[1024];
    private long[] weight = new long[1024];

    /** @param byTime  weight by perf time instead of instructions (items without time weigh nothing) */
    public FoldedView(PrintWriter out, Symbolizer names, boolean byTime) {
        this.out = out;
        this.names = names;
        this.byTime = byTime;
        nodeName.add(""); // node 0: above every root
    }

    @Override
    public void enter(ThreadStack t, int level, long time) {
        long a = t.address(level);
        Symbol sym = names.symbol(a, time, t.pid());
        String name = sym == null ? null : sym.name();
        if (name == null) {
            name = "0x" + Long.toHexString(a);
        }
        int up = level == 0 ? 0 : (int) t.tag(level - 1);
        t.tag(level, node(up, name));
    }

    private int node(int up, String name) {
        String key = up + ";" + name;
        Integer n = children.get(key);
        if (n == null) {
            n = nodeName.size();
            nodeName.add(name);
            if (n == parent.length) {
                parent = Arrays.copyOf(parent, n * 2);
                weight = Arrays.copyOf(weight, n * 2);
            }
            parent[n] = up;
            children.put(key, n);
        }
        return n;
    }

    @Override
    public void ran(ThreadStack t, long insns, long time) {
        if (byTime) {
            if (time >= 0 && t.lastTime() >= 0 && time > t.lastTime()) {
                weight[(int) t.tag(t.depth())] += time - t.lastTime();
            }
        } else {
            weight[(int) t.tag(t.depth())] += insns;
        }
    }

    @Override
    public void item(ThreadStack t, FlowItem item) {
    }

    @Override
    public void end() throws IOException {
        List<String> lines = new ArrayList<>();
        StringBuilder sb = new StringBuilder();
        List<String> path = new ArrayList<>();
        for (int n = 1; n < nodeName.size(); n++) {
            if (weight[n] == 0) {
                continue;
            }
            path.clear();
            for (int k = n; k != 0; k = parent[k]) {
                path.add(nodeName.get(k));
            }
            sb.setLength(0);
            for (int i = path.size() - 1; i >= 0; i--) {
                sb.append(path.get(i).replace(';', ':'));
                if (i > 0) {
                    sb.append(';');
                }
            }
            lines.add(sb.append(' ').append(weight[n]).toString());
        }
        lines.sort(null);
        for (String l : lines) {
            out.append(l).append('\n');
        }
    }
}
