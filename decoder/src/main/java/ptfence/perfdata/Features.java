package ptfence.perfdata;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/** The feature sections of a recording, by HEADER_* id, with typed getters for the common ones. */
public final class Features {
    private final Map<Integer, Feature> byId;

    public Features(Map<Integer, Feature> byId) {
        this.byId = Collections.unmodifiableMap(new LinkedHashMap<>(byId));
    }

    public Map<Integer, Feature> all() {
        return byId;
    }

    public Optional<Feature> get(int id) {
        return Optional.ofNullable(byId.get(id));
    }

    public <T extends Feature> Optional<T> get(int id, Class<T> type) {
        Feature f = byId.get(id);
        return type.isInstance(f) ? Optional.of(type.cast(f)) : Optional.empty();
    }

    private Optional<String> text(int id) {
        return get(id, Feature.Text.class).map(Feature.Text::value);
    }

    public Optional<String> hostname() { return text(Feature.HOSTNAME); }
    public Optional<String> osRelease() { return text(Feature.OSRELEASE); }
    public Optional<String> perfVersion() { return text(Feature.VERSION); }
    public Optional<String> arch() { return text(Feature.ARCH); }
    public Optional<String> cpuDesc() { return text(Feature.CPUDESC); }
    public Optional<String> cpuId() { return text(Feature.CPUID); }
    public Optional<Feature.NrCpus> nrCpus() { return get(Feature.NRCPUS, Feature.NrCpus.class); }

    public List<String> cmdline() {
        return get(Feature.CMDLINE, Feature.Cmdline.class).map(Feature.Cmdline::args).orElse(List.of());
    }

    public List<Feature.EventDescEntry> eventDesc() {
        return get(Feature.EVENT_DESC, Feature.EventDesc.class).map(Feature.EventDesc::events).orElse(List.of());
    }

    public List<Feature.BuildIdEntry> buildIds() {
        return get(Feature.BUILD_ID, Feature.BuildIds.class).map(Feature.BuildIds::entries).orElse(List.of());
    }

    public List<Feature.BpfProgInfo> bpfProgInfo() {
        return get(Feature.BPF_PROG_INFO, Feature.BpfProgInfos.class).map(Feature.BpfProgInfos::programs)
                .orElse(List.of());
    }

    public List<Feature.BpfBtf> bpfBtf() {
        return get(Feature.BPF_BTF, Feature.BpfBtfs.class).map(Feature.BpfBtfs::btfs).orElse(List.of());
    }

    public List<Feature.AuxtraceIndexEntry> auxtraceIndex() {
        return get(Feature.AUXTRACE, Feature.AuxtraceIndex.class).map(Feature.AuxtraceIndex::entries)
                .orElse(List.of());
    }

    /** ptfence's list of the text regions the recording used, if it has one ({@link Feature#PTFENCE_TEXT}). */
    public Optional<Feature.TextRegions> textRegions() {
        return get(Feature.PTFENCE_TEXT, Feature.TextRegions.class);
    }

    @Override
    public String toString() {
        return "Features" + byId.keySet();
    }
}
