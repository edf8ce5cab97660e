package ptfence.ptdecode;

import java.io.IOException;
import java.io.PrintWriter;
import picocli.CommandLine.Option;
import ptfence.calls.BranchSink;
import ptfence.calls.BranchView;
import ptfence.calls.CallStacks;
import ptfence.calls.CallTraceView;
import ptfence.calls.CallView;
import ptfence.calls.FlowItem;
import ptfence.calls.FoldedView;
import ptfence.calls.PerfettoView;
import ptfence.calls.ThreadStack;
import ptfence.cli.BadInputException;
import ptfence.sideband.Sideband;

/**
 * The whole-recording views built on branches and call stacks (--call-trace, --call-ret-trace, --branches,
 * --format perfetto and folded without --func): their options, and the run that feeds every CPU's branches, merged by
 * time, through the threads' stacks into the view.
 */
final class CallViews {
    @Option(names = "--call-trace", description = "Calls of every thread, indented by call depth (perf script "
            + "--call-trace).")
    boolean callTrace;

    @Option(names = "--call-ret-trace", description = "Calls and returns, indented, with flags (perf script "
            + "--call-ret-trace).")
    boolean callRetTrace;

    @Option(names = "--branches", description = "Every taken branch: from -> to with flags (call, return, jcc, jmp, "
            + "syscall, sysret, int, iret, hw int, tr strt, tr end, ...), as perf script --itrace=b.")
    boolean branches;

    @Option(names = "--weight", paramLabel = "insns|time", defaultValue = "insns",
            description = "--format folded: weigh stacks by instructions (default) or by time.")
    String weight;

    /**
     * perf script's --itrace=c / r on the branch view: only branches with one of these flags (perf's branches_filter:
     * calls, asynchronous transfers and trace ends for c; returns and trace begins for r); 0: every branch.
     */
    int branchFilter;

    /** True if the command line asks for one of these views (given no --func). */
    boolean wanted(String format) {
        return callTrace || callRetTrace || branches || format.equals("perfetto") || format.equals("folded");
    }

    /** Refuses combinations that would silently drop a view. */
    void check(String format, String func) {
        int views = (callTrace ? 1 : 0) + (callRetTrace ? 1 : 0) + (branches ? 1 : 0);
        if (views > 1) {
            throw new BadInputException("--call-trace, --call-ret-trace and --branches are views of the recording: "
                    + "give one");
        }
        if (views > 0 && func != null) {
            throw new BadInputException("--call-trace, --call-ret-trace and --branches show the whole recording: "
                    + "leave out --func");
        }
        if (views > 0 && !format.equals("text") && !format.equals("jsonl")) {
            throw new BadInputException("--format " + format + " draws call stacks: give it without --call-trace, "
                    + "--call-ret-trace or --branches");
        }
        if (format.equals("folded") && func != null) {
            throw new BadInputException("--format folded is for a whole recording: leave out --func");
        }
        if (!weight.equals("insns") && !weight.equals("time")) {
            throw new BadInputException("--weight " + weight + ": expected insns or time");
        }
    }

    /** Runs the view asked for over the whole recording. */
    void run(RecordingDecode rd, RecordingDecode.Request req, String format, PrintWriter out) throws Exception {
        CallNames names = new CallNames(rd.symbols, rd.sideband);
        boolean jsonl = format.equals("jsonl");
        CallView view;
        if (format.equals("perfetto")) {
            view = new PerfettoView(req.recording().toString(), out, names, rd.tscEnabled,
                    tid -> rd.sideband.commAt(tid, -1));
        } else if (format.equals("folded")) {
            view = new FoldedView(out, names, weight.equals("time"));
        } else if (branches) {
            view = new BranchView(out, jsonl, names, req.timeFrom(), req.timeTo());
            if (branchFilter != 0) {
                view = filtered(view, branchFilter);
            }
        } else {
            view = new CallTraceView(out, jsonl, callRetTrace, names, req.timeFrom(), req.timeTo());
        }
        run(rd, view);
    }

    /** {@code view} with only the branches that have one of {@code flags} (the stacks still see every one). */
    private static CallView filtered(CallView view, int flags) {
        return new CallView() {
            @Override
            public void item(ThreadStack t, ptfence.calls.FlowItem item) throws IOException {
                if (!(item instanceof ptfence.calls.FlowItem.Branch b) || (b.flags() & flags) != 0) {
                    view.item(t, item);
                }
            }

            @Override
            public void end() throws IOException {
                view.end();
            }

            @Override
            public void ran(ThreadStack t, long insns, long time) {
                view.ran(t, insns, time);
            }

            @Override
            public void enter(ThreadStack t, int level, long time) {
                view.enter(t, level, time);
            }

            @Override
            public void leave(ThreadStack t, int level, long time, boolean lost) {
                view.leave(t, level, time, lost);
            }
        };
    }

    /** Every CPU's branches, merged by time, through the threads' stacks into {@code view}. */
    static void run(RecordingDecode rd, CallView view) throws Exception {
        Sideband sb = rd.sideband;
        CallStacks stacks = new CallStacks((cpu, time) -> {
            if (time < 0 && sb.tasks(cpu).size() > 1) {
                return null; // untimed: which of the CPU's tasks is unknown
            }
            Sideband.Task t = sb.taskAt(cpu, time < 0 ? Long.MAX_VALUE : time);
            return t == null || t.pid() < 0 ? null : new int[] {t.pid(), t.tid()};
        }, view);
        boolean timed = rd.code.timed();
        rd.<FlowItem>decodeMerged((t, q) -> {
            BranchSink s = new BranchSink(t.cpu(), item -> q.add(item.time(), item),
                    rd.code.forCpu(t.cpu(), t.tid() >= 0 ? t.tid() : -1));
            return new RecordingDecode.CpuPart(s, d -> s.decoder(d, tsc -> timed ? rd.code.clock().toPerf(tsc) : -1),
                    () -> { });
        }, item -> {
            ThreadStack th = stacks.apply(item);
            try {
                view.item(th, item);
            } catch (IOException e) {
                throw new java.io.UncheckedIOException(e);
            }
        });
        stacks.end();
        view.end();
    }
}
