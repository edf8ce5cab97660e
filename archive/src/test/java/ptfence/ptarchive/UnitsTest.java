package ptfence.ptarchive;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.time.Duration;
import org.junit.jupiter.api.Test;
import ptfence.cli.BadInputException;
import ptfence.cli.Json;

class UnitsTest {
    @Test
    void durations() {
        assertEquals(Duration.ofDays(30), Units.duration("30d"));
        assertEquals(Duration.ofDays(14), Units.duration("2w"));
        assertEquals(Duration.ofHours(12), Units.duration("12h"));
        assertEquals(Duration.ofMinutes(90), Units.duration("90m"));
        assertEquals(Duration.ofSeconds(45), Units.duration("45s"));
        assertEquals(Duration.ofDays(7), Units.duration("7"));
        for (String bad : new String[] {"", "d", "3y", "-x", "1.5d"}) {
            assertThrows(BadInputException.class, () -> Units.duration(bad), bad);
        }
    }

    @Test
    void sizes() {
        assertEquals(10L << 30, Units.size("10G"));
        assertEquals(512L << 20, Units.size("512M"));
        assertEquals(64L << 10, Units.size("64k"));
        assertEquals(1L << 40, Units.size("1TB"));
        assertEquals(12345, Units.size("12345"));
        for (String bad : new String[] {"", "G", "lots", "99999999999T"}) {
            assertThrows(BadInputException.class, () -> Units.size(bad), bad);
        }
    }

    @Test
    void perfTimesAndPrinting() {
        assertEquals(12_345_678_901_234L, Units.perfTime("12345.678901234"));
        assertEquals(12_345_600_000_000L, Units.perfTime("12345.6"));
        assertEquals(42, Units.perfTime("42"));
        assertEquals("12345.678901234", Units.time(12_345_678_901_234L));
        assertEquals("open", Units.time(Long.MAX_VALUE));
        assertEquals("0xffffffffc0001000", Units.address(0xffffffffc0001000L));
        assertEquals("1.5 KiB", Units.bytes(1536));
        assertEquals("100 B", Units.bytes(100));
        assertThrows(BadInputException.class, () -> Units.perfTime("1.2.3"));
    }

    @Test
    void jsonEscapes() {
        assertEquals("{\"a\":\"q\\\"b\\\\c\\nd\\u0001\",\"n\":5,\"z\":null,\"t\":true}",
                new Json().field("a", "q\"b\\c\nd\u0001").field("n", 5).field("z", (String) null).field("t", true)
                        .toString());
    }
}
