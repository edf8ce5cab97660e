package ptfence.fence;

import ptfence.region.Region;

/**
 * Bench (not a test): the fence's tracker under a burst of TEXT_POKEs, as a tracer put on every function makes
 * (~40k call sites poked on, then off: each site a TEXT_POKE region of its own). Prints, per number of sites, the
 * tracker's time for both passes and per poke: flat per poke where poke sites are found by address
 * ({@link LiveRegions}); the scan of every open region it replaced grew with the sites (80,000 pokes at 40,000 sites:
 * 84-96 s, now ~1 s; docs/fence.md).
 * <pre>bin/ptbench pokes [SITES...]</pre>
 */
public final class PokeBench {
    public static void main(String[] args) throws Exception {
        int[] sizes = args.length == 0 ? new int[] {1000, 10000, 40000, 100000}
                : java.util.Arrays.stream(args).mapToInt(Integer::parseInt).toArray();
        RegionTracker.RegionWriter discard = new RegionTracker.RegionWriter() {
            @Override public void opened(Region r, byte[] bytes) {}
            @Override public void closed(Region r) {}
        };
        System.out.println("| sites | pokes | tracker s | us per poke | open regions after |");
        System.out.println("|---|---|---|---|---|");
        for (int sites : sizes) {
            for (int round = 0; round < 2; round++) { // the first round warms the JIT: the second is printed
                RegionTracker t = new RegionTracker("boot", discard);
                long time = 1, t0 = System.nanoTime();
                for (int pass = 0; pass < 2; pass++) {
                    byte[] bytes = pass == 0 ? new byte[] {(byte) 0xe8, 1, 2, 3, 4} : new byte[] {0x0f, 0x1f, 0x44, 0, 0};
                    for (int i = 0; i < sites; i++) {
                        t.textPoke(0xffffffff81000000L + i * 64L, bytes, time++);
                    }
                }
                double s = (System.nanoTime() - t0) / 1e9;
                if (round == 1) {
                    System.out.printf("| %d | %d | %.2f | %.1f | %d |%n", sites, 2 * sites, s, s * 1e6 / (2 * sites),
                            t.liveRegions());
                }
            }
        }
    }
}
