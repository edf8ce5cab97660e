package ptfence.timing;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/**
 * Time tracking worked by hand from the SDM's definitions (TSC ticks = CTC ticks * EBX / EAX of CPUID
 * 0x15; MTC carries CTC bits [mtcFreq+7:mtcFreq]; TMA gives the CTC and the fast counter at the TSC).
 * The ptdump corpus checks the same classes against libipt's output.
 */
class TimingTest {
    // MTC every 2^4 CTC ticks; one CTC tick = 4 TSC ticks.
    final TimingConfig config = new TimingConfig(4, 4, 1, 4, false);

    @Test
    void tscTmaMtcCycGiveTheSdmTimes() {
        Timing t = new Timing(config);
        assertFalse(t.haveTsc());
        assertNull(t.updateTsc(0x1000));
        assertEquals(0x1000, t.tsc());
        // At the TSC, CTC was 0x10 and the fast counter 8 TSC ticks past that CTC edge.
        assertNull(t.updateTma(0x10, 8));
        // The next MTC says CTC 0x20: 16 CTC ticks (64 TSC ticks) after the edge at TSC - 8.
        assertNull(t.updateMtc(0x02));
        assertEquals(0x1000 - 8 + 0x40, t.tsc());
        // 16 cycles at 2 TSC ticks per cycle (fcr is fixed point with 8 fraction bits).
        assertNull(t.updateCyc(0x10, 2 << TimeCalibration.FCR_SHIFT));
        assertEquals(0x1038 + 0x20, t.tsc());
        // An MTC whose 8-bit payload wrapped (0x02 -> 0x01): 0xff0 CTC ticks later.
        assertNull(t.updateMtc(0x01));
        assertEquals(0x1038 + 0xff0 * 4, t.tsc());
        // Without calibration a CYC is lost, not guessed.
        assertNull(t.updateCyc(5, 0));
        assertEquals(1, t.lostCyc());
        // A second TMA for one TSC is out of context.
        assertEquals(TimingError.BAD_CONTEXT, t.updateTma(1, 1));
    }

    @Test
    void calibrationFromNominalFrequencyAndFromMtc() {
        TimeCalibration cal = new TimeCalibration(config);
        assertFalse(cal.haveFcr());
        // Nominal ratio 4, core ratio 2: two TSC ticks per core cycle.
        assertNull(cal.headerCbr(2));
        assertTrue(cal.haveFcr());
        assertEquals(2 << TimeCalibration.FCR_SHIFT, cal.fcr());
        assertEquals(TimingError.BAD_PACKET, cal.headerCbr(0));

        TimeCalibration mtc = new TimeCalibration(new TimingConfig(4, 0, 1, 4, false));
        assertNull(mtc.updateMtc(1));            // first MTC: reference point
        assertNull(mtc.updateCyc(32));           // 32 cycles ...
        assertNull(mtc.updateMtc(2));            // ... in one MTC period = 16 CTC = 64 TSC ticks
        assertEquals(2 << TimeCalibration.FCR_SHIFT, mtc.fcr());
        mtc.reset();
        assertFalse(mtc.haveFcr());
    }

    @Test
    void missingCrystalRatioIsAConfigurationError() {
        Timing t = new Timing(new TimingConfig(0, 0, 0, 0, false));
        assertNull(t.updateTsc(100));
        assertNull(t.updateTma(0x10, 1));
        assertEquals(TimingError.BAD_CONFIG, t.updateMtc(0x20));
    }
}
