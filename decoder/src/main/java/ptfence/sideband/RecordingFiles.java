package ptfence.sideband;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import ptfence.bundle.BundleFile;
import ptfence.bundle.MappedFiles;
import ptfence.cli.BadInputException;
import ptfence.image.Elf;
import ptfence.perfdata.Feature;
import ptfence.perfdata.PerfDataFile;
import ptfence.perfdata.PerfRecord;

/**
 * The user-space files a recording maps (its MMAP/MMAP2 records, the BUILD_ID header) and their copies here: what
 * {@code ptarchive export --binaries} carries. A file counts as the recording's when its build id matches the
 * recorded one (or none was recorded); else perf's build-id cache ({@code ~/.debug/.build-id/xx/…/elf}) may have it.
 * JIT files too: each jitdump the recording maps and the perf maps of its processes with anonymous code, from beside
 * the recording (where ptrec keeps them) when they are there.
 */
public final class RecordingFiles implements MappedFiles {
    @Override
    public List<BundleFile> of(Path perfData) {
        Sideband sideband = new Sideband();
        Map<String, byte[]> headerIds = new LinkedHashMap<>();
        try (PerfDataFile f = PerfDataFile.open(perfData)) {
            PerfDataFile.RecordReader r = f.records();
            while (r.hasNext()) {
                PerfRecord rec = r.next();
                if (!(rec instanceof PerfRecord.Auxtrace)) {
                    sideband.add(rec);
                }
            }
            try {
                for (Feature.BuildIdEntry e : f.features().buildIds()) {
                    byte[] id = new byte[e.buildId().remaining()];
                    e.buildId().duplicate().get(id);
                    headerIds.putIfAbsent(e.filename(), id);
                }
            } catch (BadInputException e) {
                // no usable BUILD_ID header: the MMAP2 build ids (if any) still say
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        Map<String, byte[]> files = new LinkedHashMap<>();
        for (Sideband.Mapping m : sideband.mappings()) {
            if (m.kernel() || m.file().startsWith("[") || m.file().startsWith("//") || !m.file().startsWith("/")) {
                continue; // [vdso], //anon, kernel maps: nothing on disk to carry
            }
            byte[] id = sideband.buildIds().getOrDefault(m.file(), headerIds.getOrDefault(m.file(), new byte[0]));
            files.merge(m.file(), id, (a, b) -> a.length > 0 ? a : b);
        }
        List<BundleFile> out = new ArrayList<>();
        Path beside = perfData.toAbsolutePath().getParent();
        java.util.Set<Integer> anonymous = new java.util.TreeSet<>();
        for (Sideband.Mapping m : sideband.mappings()) {
            if (!m.kernel() && ptfence.jit.JitProcesses.anonymous(m.file())) {
                anonymous.add(m.pid());
            }
        }
        files.forEach((file, id) -> {
            // a jitdump: ptrec's copy beside the recording first (the JIT's own may be gone or rewritten)
            Path kept = ptfence.jit.JitProcesses.dumpPid(file) < 0 || beside == null ? null
                    : ptfence.jit.JitProcesses.find(List.of(beside), Path.of(file).getFileName().toString());
            out.add(new BundleFile(BundleFile.BINARY, file, id, kept != null ? kept : localCopy(file, id)));
        });
        for (int pid : anonymous) {
            // the perf maps naming anonymous code: beside the recording (ptrec keeps them), else where perf reads
            String name = "perf-" + pid + ".map";
            Path local = ptfence.jit.JitProcesses.find(beside == null ? List.of(Path.of("/tmp"))
                    : List.of(beside, Path.of("/tmp")), name);
            if (local != null) {
                out.add(new BundleFile(BundleFile.BINARY, ptfence.jit.JitProcesses.mapName(pid), new byte[0], local));
            }
        }
        return out;
    }

    /** The file at its path if it is that build, else perf's build-id cache's copy, else null. */
    static Path localCopy(String file, byte[] buildId) {
        Path p = Path.of(file);
        if (Files.isRegularFile(p) && (buildId.length == 0 || Arrays.equals(trim(buildId), trim(idOf(p))))) {
            return p;
        }
        if (buildId.length == 0) {
            return null;
        }
        String hex = HexFormat.of().formatHex(trim(buildId));
        Path cached = Path.of(System.getProperty("user.home"), ".debug", ".build-id", hex.substring(0, 2),
                hex.substring(2), "elf");
        return Files.isRegularFile(cached) ? cached : null;
    }

    private static byte[] idOf(Path p) {
        try {
            return Elf.read(p).buildId();
        } catch (RuntimeException e) {
            return new byte[0]; // not an ELF file (or unreadable): no build id to match
        }
    }

    /** perf pads build ids to 20 bytes with zeros; a 16-byte id matches its padded form. */
    private static byte[] trim(byte[] id) {
        int n = id.length;
        while (n > 0 && id[n - 1] == 0) {
            n--;
        }
        return Arrays.copyOf(id, n);
    }
}
