package ptfence.pmu;

import static org.junit.jupiter.api.Assertions.*;

import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;
import ptfence.cli.BadInputException;

/** Discovery and config against synthetic sysfs trees (a Skylake-like intel_pt, an AMD machine without one). */
class IntelPtPmuTest {
    static Path devices(String name) throws URISyntaxException {
        return Path.of(IntelPtPmuTest.class.getResource("/ptfence/pmu/" + name).toURI());
    }

    @Test
    void noIntelPtIsTheOneLineError() throws Exception {
        Path amd = devices("devices-amd");
        BadInputException e = assertThrows(BadInputException.class, () -> IntelPtPmu.discover(amd));
        assertEquals("no intel_pt PMU in " + amd + ": this CPU or VM does not expose Intel PT; --sideband-only still "
                + "records the sideband (tasks, mappings, BPF events) and runs the text fence, without the trace",
                e.getMessage());
    }

    @Test
    void thisMachineMatchesSysfs() {
        boolean present = Files.isDirectory(IntelPtPmu.SYSFS_DEVICES.resolve("intel_pt"));
        if (present) {
            assertTrue(IntelPtPmu.discover().type() > 0);
        } else {
            BadInputException e = assertThrows(BadInputException.class, IntelPtPmu::discover);
            assertTrue(e.getMessage().startsWith("no intel_pt PMU in /sys/bus/event_source/devices: this CPU or VM "
                    + "does not expose Intel PT; --sideband-only still records"), e.getMessage());
        }
    }

    @Test
    void readsTypeFormatAndCaps() throws Exception {
        IntelPtPmu pmu = IntelPtPmu.discover(devices("devices-skylake"));
        assertEquals(8, pmu.type());
        assertEquals(12, pmu.format().size());
        assertEquals(0x249, pmu.cap("mtc_periods"));
        assertEquals(0x3fff, pmu.cap("cycle_thresholds"));
        assertEquals(24, pmu.maxNonturboRatio());
        assertEquals(2, pmu.tscArtNumerator());
        assertEquals(172, pmu.tscArtDenominator());
        assertEquals(2, pmu.nrAddrFilters());
        assertEquals(0xfL << 14, pmu.bit("mtc_period"));
        assertEquals(1L << 10, pmu.bit("tsc"));
    }

    @Test
    void perfDefaultConfig() throws Exception {
        // perf record -e intel_pt// on Skylake: "config: 0x300e601" (tsc,mtc,mtc_period=3,psb_period=3,pt,branch)
        PtConfig c = PtConfig.defaults(IntelPtPmu.discover(devices("devices-skylake")));
        assertEquals(0x300e601L, c.config());
        assertEquals("tsc=1,mtc=1,mtc_period=3,psb_period=3,pt=1,branch=1", c.describe());
    }

    @Test
    void optionsOverDefaultsAreValidatedAgainstCaps() throws Exception {
        IntelPtPmu pmu = IntelPtPmu.discover(devices("devices-skylake"));
        assertEquals(0x300e601L | 2 | (1L << 11) | (5L << 19),
                PtConfig.defaults(pmu).set("cyc", 1).set("cyc-thresh", 5).set("noretcomp", 1).config());
        assertEquals(0x300e601L & ~(1L << 13),
                PtConfig.defaults(pmu).set("branch", 0).config());
        // mtc_periods 0x249 = {0,3,6,9}: 2 is not allowed
        BadInputException e = assertThrows(BadInputException.class,
                () -> PtConfig.defaults(pmu).set("mtc-period", 2).config());
        assertEquals("--mtc-period=2: not supported by this CPU (caps/mtc_periods = 0x249 allows 0,3,6,9)", e.getMessage());
        e = assertThrows(BadInputException.class, () -> PtConfig.defaults(pmu).set("ptw", 1).config());
        assertEquals("--ptw: not supported by this CPU (caps/ptwrite = 0)", e.getMessage());
        assertThrows(BadInputException.class, () -> PtConfig.defaults(pmu).set("psb-period", 16));
    }

    @Test
    void pickBitIsPerfs() {
        assertEquals(3, PtConfig.nearestBit(0x249, 3));
        assertEquals(3, PtConfig.nearestBit(0x249, 5)); // the largest not above
        assertEquals(4, PtConfig.nearestBit(0x30, 3)); // else the smallest
    }

    @Test
    void filtersInPerfSyntaxBecomeKernelSyntax() {
        Map<String, AddressFilters.Symbol> syms = Map.of("bpf_prog_59f4a931744dcdc6_probe",
                new AddressFilters.Symbol(0xffffffffc0022064L, 20), "do_sys_open",
                new AddressFilters.Symbol(0xffffffff81234560L, 0x120));
        assertEquals("filter 0xffffffffc0022064/0x14,filter 0x401000/0x100@/bin/x,tracestop 0xffffffff81234560/0x10",
                AddressFilters.toKernel("filter bpf_prog_59f4a931744dcdc6_probe, filter 0x401000/0x100@/bin/x,"
                        + " tracestop do_sys_open/16", syms::get, 3));
        assertThrows(BadInputException.class, () -> AddressFilters.toKernel("filter nosuch", syms::get, 2));
        BadInputException e = assertThrows(BadInputException.class,
                () -> AddressFilters.toKernel("filter 1/1, filter 2/2, filter 3/3", syms::get, 2));
        assertEquals("--filter: 3 address ranges, this CPU has 2", e.getMessage());
    }
}
