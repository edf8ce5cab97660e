package ptfence.output;

import ptfence.packet.Errata;
import ptfence.timing.TimingConfig;

/**
 * ptdump's options, with ptdump's defaults ({@link #DEFAULT}). The names follow ptdump's flags:
 * {@code showOffset} is cleared by {@code --no-offset}, {@code showRaw} is {@code --raw}, and so on.
 * {@code trackTime} is implied by {@code --time}, {@code --tcal} and sideband dumping.
 */
public record PtdumpOptions(boolean showOffset, boolean showRaw, boolean showLastIp, boolean showExecMode,
                            boolean trackTime, boolean showTime, boolean showTcal, boolean timeDelta,
                            boolean keepTcalOnOvf, boolean quiet, boolean noPad, boolean noSync,
                            boolean noTcal, boolean noWallClock, boolean noTiming, boolean noCyc,
                            Errata errata, TimingConfig timing) {

    public static final PtdumpOptions DEFAULT = new PtdumpOptions(true, false, false, false, false, false, false,
            false, false, false, false, false, false, false, false, false, Errata.NONE, TimingConfig.DEFAULT);
}
