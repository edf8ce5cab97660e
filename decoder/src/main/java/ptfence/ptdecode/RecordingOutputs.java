package ptfence.ptdecode;

import java.io.IOException;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.List;
import ptfence.cli.BadInputException;
import ptfence.perfdata.AttrIds;
import ptfence.perfdata.PerfDataFile;
import ptfence.perfdata.PerfRecord;
import ptfence.sideband.BpfOutputFormat;
import ptfence.sideband.BpfOutputs;
import ptfence.sideband.CodeMap;

/** What BPF programs wrote into a recording (bpf-output samples), as ptdecode's own views select and show it. */
final class RecordingOutputs {
    private RecordingOutputs() {
    }

    /**
     * The samples within -C, --time and the thread filters, read from the records once more (only when the
     * recording has a bpf-output event: other recordings pay nothing).
     */
    static BpfOutputs samples(RecordingDecode rd) throws IOException {
        List<AttrIds> attrs = new ArrayList<>();
        for (int i = 0; i < rd.eventAttrs.size(); i++) {
            attrs.add(new AttrIds(rd.eventAttrs.get(i), rd.eventIds.get(i)));
        }
        BpfOutputs kept = new BpfOutputs(attrs, rd.eventNames());
        if (attrs.stream().noneMatch(a -> ptfence.perfdata.BpfOutput.isBpfOutput(a.attr()))) {
            return kept;
        }
        try (PerfDataFile f = rd.openRecording()) {
            PerfDataFile.RecordReader r = f.records();
            try {
                while (r.hasNext()) {
                    PerfRecord rec = r.next();
                    if (rec instanceof PerfRecord.Sample s && wanted(rd, s)) {
                        kept.add(rec);
                    }
                }
            } catch (BadInputException e) {
                // the load reported the damage; the samples stop where the records do
            }
        }
        return kept;
    }

    private static boolean wanted(RecordingDecode rd, PerfRecord.Sample s) {
        RecordingDecode.Request req = rd.request();
        if (s.time() < req.timeFrom() || s.time() > req.timeTo()) {
            return false;
        }
        if (req.cpus() != null && (s.sampleType() & ptfence.perfdata.SampleType.CPU) != 0
                && !req.cpus().contains(s.cpu())) {
            return false;
        }
        return !rd.threads.filters() || rd.threads.accepts(s.pid(), s.tid(), rd.sideband.commAt(s.tid(), s.time()));
    }

    /** The payloads' rendering with the BTF of the recording's programs (archive metadata, perf's BPF_BTF). */
    static BpfOutputFormat format(RecordingDecode rd, String typeName) throws IOException {
        List<byte[]> btfs = new ArrayList<>();
        for (CodeMap.Program p : rd.code.programs()) {
            if (p.metadata() != null && p.metadata().btf().length > 0) {
                btfs.add(p.metadata().btf());
            }
        }
        try (PerfDataFile f = rd.openRecording()) {
            for (var b : f.features().bpfBtf()) {
                byte[] raw = new byte[b.data().remaining()];
                b.data().duplicate().get(raw);
                btfs.add(raw);
            }
        } catch (BadInputException e) {
            // no usable BPF_BTF section: the archive's BTF only
        }
        return BpfOutputFormat.of(btfs, typeName, () -> {
            try {
                return Files.isReadable(ptfence.bpf.Btf.VMLINUX) ? ptfence.bpf.Btf.vmlinux() : null;
            } catch (IOException | RuntimeException e) {
                return null;
            }
        });
    }
}
