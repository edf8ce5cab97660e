package ptfence.calls;

/**
 * Names code addresses for the call views: "name" or "name+0x12" for {@code address} at perf time {@code time}
 * (-1: unknown) as run on {@code cpu}, or null. The one seam between the views and wherever symbols come from.
 */
@FunctionalInterface
public interface Symbolizer {
    String describe(long address, long time, int cpu);

    /** The function's name alone (perf's call trace prints no offsets), or null. */
    default String function(long address, long time, int cpu) {
        String s = describe(address, time, cpu);
        if (s == null) {
            return null;
        }
        int plus = s.lastIndexOf("+0x");
        return plus > 0 ? s.substring(0, plus) : s;
    }
}
