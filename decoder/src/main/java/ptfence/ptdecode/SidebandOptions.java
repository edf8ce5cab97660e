package ptfence.ptdecode;

import java.util.ArrayList;
import java.util.List;
import picocli.CommandLine.Option;
import ptfence.cli.BadInputException;
import ptfence.sideband.PeventDump;
import ptfence.sideband.PeventSession;

/**
 * libipt's sideband options, shared by {@code packets} (ptdump) and {@code flow} (ptxed): how records are
 * printed ({@code --sb:*}) and the perf_event files ({@code --pevent:*}). As in libipt, the {@code --pevent:*}
 * settings apply in command-line order: each file is read with the settings given before it.
 */
public final class SidebandOptions {
    /** A sideband file and the settings it is read with. */
    public record File(String spec, PeventSession.Channel channel) {}

    int sbFlags;
    boolean sbWarn;
    PeventSession.Channel channel = PeventSession.Channel.DEFAULT;
    final List<File> files = new ArrayList<>();
    final List<String> kcore = new ArrayList<>();

    @Option(names = {"--sb:compact", "--sb"}, description = "Show sideband records in compact format.")
    void sbCompact(boolean on) {
        sbFlags = (sbFlags & ~PeventDump.VERBOSE) | PeventDump.COMPACT;
    }

    @Option(names = "--sb:verbose", description = "Show sideband records in verbose format.")
    void sbVerbose(boolean on) {
        sbFlags = (sbFlags & ~PeventDump.COMPACT) | PeventDump.VERBOSE;
    }

    @Option(names = "--sb:filename", description = "Show the filename on sideband records.")
    void sbFilename(boolean on) {
        sbFlags |= PeventDump.FILENAME;
    }

    @Option(names = "--sb:offset", description = "Show the offset on sideband records.")
    void sbOffset(boolean on) {
        sbFlags |= PeventDump.FILE_OFFSET;
    }

    @Option(names = "--sb:time", description = "Show the time on sideband records.")
    void sbTime(boolean on) {
        sbFlags |= PeventDump.TSC;
    }

    @Option(names = "--sb:warn", description = "Show sideband warnings.")
    void sbWarn(boolean on) {
        sbWarn = true;
    }

    @Option(names = {"--pevent:primary", "--pevent"}, paramLabel = "<file>[:<from>[-<to>]]",
            description = "Load a perf_event sideband stream of the traced CPU from <file> (libipt pevent format).")
    void peventPrimary(String file) {
        files.add(new File(file, channel.withPrimary(true)));
    }

    @Option(names = "--pevent:secondary", paramLabel = "<file>[:<from>[-<to>]]",
            description = "Load a perf_event sideband stream of another CPU from <file> (process images only).")
    void peventSecondary(String file) {
        files.add(new File(file, channel.withPrimary(false)));
    }

    @Option(names = "--pevent:sample-type", paramLabel = "<val>", description = "perf_event_attr.sample_type (default: 0).")
    void peventSampleType(String v) {
        format(format().withSampleType(PacketsCommand.number("--pevent:sample-type", v, -1L)));
    }

    @Option(names = "--pevent:sample-config", paramLabel = "<id>:<val>",
            description = "perf_event_attr.sample_type <val> for event <id>.")
    void peventSampleConfig(String v) {
        int colon = v.indexOf(':');
        if (colon < 0) {
            throw new BadInputException("bad sample config --pevent:sample-config: invalid argument");
        }
        format(format().withSampleConfig(PacketsCommand.number("--pevent:sample-config", v.substring(0, colon), -1L),
                PacketsCommand.number("--pevent:sample-config", v.substring(colon + 1), -1L)));
    }

    @Option(names = "--pevent:time-zero", paramLabel = "<val>", description = "perf_event_mmap_page.time_zero (default: 0).")
    void peventTimeZero(String v) {
        format(format().withTimeZero(PacketsCommand.number("--pevent:time-zero", v, -1L)));
    }

    @Option(names = "--pevent:time-shift", paramLabel = "<val>", description = "perf_event_mmap_page.time_shift (default: 0).")
    void peventTimeShift(String v) {
        format(format().withTimeShift((int) PacketsCommand.number("--pevent:time-shift", v, 0xffff)));
    }

    @Option(names = "--pevent:time-mult", paramLabel = "<val>", description = "perf_event_mmap_page.time_mult (default: 1).")
    void peventTimeMult(String v) {
        format(format().withTimeMult(PacketsCommand.number("--pevent:time-mult", v, 0xffffffffL)));
    }

    @Option(names = "--pevent:tsc-offset", paramLabel = "<val>", description = "Show (and apply) perf events <val> ticks earlier.")
    void peventTscOffset(String v) {
        format(format().withTscOffset(PacketsCommand.number("--pevent:tsc-offset", v, -1L)));
    }

    @Option(names = "--pevent:kernel-start", paramLabel = "<val>",
            description = "The start address of the kernel: at and above it the trace is in the kernel (process switches wait for it).")
    void peventKernelStart(String v) {
        channel = channel.withKernelStart(PacketsCommand.number("--pevent:kernel-start", v, -1L));
    }

    @Option(names = "--pevent:sysroot", paramLabel = "<path>", description = "Prepend <path> to the file names of sideband MMAP records.")
    void peventSysroot(String v) {
        channel = channel.withSysroot(v);
    }

    @Option(names = "--pevent:kcore", paramLabel = "<file>[:<base>]",
            description = "Load the kernel (the executable segments of an ELF core dump) into every process's image.")
    void peventKcore(String v) {
        kcore.add(v);
    }

    @Option(names = "--pevent:vdso-x64", paramLabel = "<file>", description = "Use <file> as the 64-bit vdso.")
    void peventVdsoX64(String v) {
        channel = channel.withVdsoX64(v);
    }

    @Option(names = "--pevent:vdso-x32", paramLabel = "<file>", description = "Use <file> as the x32 vdso.")
    void peventVdsoX32(String v) {
        channel = channel.withVdsoX32(v);
    }

    @Option(names = "--pevent:vdso-ia32", paramLabel = "<file>", description = "Use <file> as the 32-bit vdso.")
    void peventVdsoIa32(String v) {
        channel = channel.withVdsoIa32(v);
    }

    private PeventDump.Config format() {
        return channel.format();
    }

    private void format(PeventDump.Config f) {
        channel = channel.withFormat(f);
    }
}
