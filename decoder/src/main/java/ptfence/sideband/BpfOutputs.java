package ptfence.sideband;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import ptfence.perfdata.AttrIds;
import ptfence.perfdata.BpfOutput;
import ptfence.perfdata.EventAttr;
import ptfence.perfdata.PerfRecord;

/**
 * The bpf-output samples of a recording (what BPF programs wrote with bpf_perf_event_output), taken from its records
 * as they are read and kept in time order for the views that place them in the flow: ptdecode's merged flow, the
 * Perfetto views and --func. They are few beside the trace (one per program call that writes), so they are held.
 */
public final class BpfOutputs {
    /**
     * One sample.
     *
     * @param seq   its place among the recording's bpf-output samples, in file order
     * @param event the event's name (EVENT_DESC's, else "bpf-output")
     * @param data  the RAW payload as the kernel padded it (perf shows the same bytes)
     */
    public record Sample(int seq, int cpu, int pid, int tid, long time, long ip, String event, byte[] data) {
    }

    private final Map<Long, EventAttr> attrById = new HashMap<>();
    private final Map<Long, String> nameById = new HashMap<>();
    private final EventAttr single;
    private final String singleName;
    private final List<Sample> samples = new ArrayList<>();
    private boolean sorted = true;

    /** @param names each attr's event name, in the order of {@code attrs} */
    public BpfOutputs(List<AttrIds> attrs, List<String> names) {
        EventAttr only = null;
        String onlyName = null;
        int outputs = 0;
        for (int i = 0; i < attrs.size(); i++) {
            AttrIds a = attrs.get(i);
            if (!BpfOutput.isBpfOutput(a.attr())) {
                continue;
            }
            outputs++;
            only = a.attr();
            onlyName = i < names.size() ? names.get(i) : "bpf-output";
            for (long id : a.ids()) {
                attrById.put(id, a.attr());
                nameById.put(id, onlyName);
            }
        }
        // a recording of one event may carry no ids: its samples are that event's
        this.single = attrs.size() == 1 && outputs == 1 ? only : null;
        this.singleName = onlyName;
    }

    /** Takes {@code r} if it is a bpf-output sample; true if it was. */
    public boolean add(PerfRecord r) {
        if (!(r instanceof PerfRecord.Sample s) || attrById.isEmpty() && single == null) {
            return false;
        }
        long id = s.id() != 0 ? s.id() : s.identifier();
        EventAttr a = attrById.get(id);
        String name = nameById.get(id);
        if (a == null && single != null && id == 0) {
            a = single;
            name = singleName;
        }
        if (a == null) {
            return false;
        }
        ByteBuffer p = BpfOutput.payload(s, a);
        byte[] data = new byte[p.remaining()];
        p.get(data);
        int cpu = (s.sampleType() & ptfence.perfdata.SampleType.CPU) != 0 ? s.cpu() : -1;
        Sample x = new Sample(samples.size(), cpu, s.pid(), s.tid(), s.time(), s.ip(), name, data);
        if (!samples.isEmpty() && samples.get(samples.size() - 1).time() > x.time()) {
            sorted = false;
        }
        samples.add(x);
        return true;
    }

    public boolean isEmpty() {
        return samples.isEmpty();
    }

    /** Every sample, earliest first (samples of one time in file order). */
    public List<Sample> all() {
        if (!sorted) {
            samples.sort(Comparator.comparingLong(Sample::time).thenComparingInt(Sample::seq));
            sorted = true;
        }
        return java.util.Collections.unmodifiableList(samples);
    }

    /** The samples written on {@code cpu}, earliest first. */
    public List<Sample> ofCpu(int cpu) {
        List<Sample> out = new ArrayList<>();
        for (Sample s : all()) {
            if (s.cpu() == cpu) {
                out.add(s);
            }
        }
        return out;
    }
}
