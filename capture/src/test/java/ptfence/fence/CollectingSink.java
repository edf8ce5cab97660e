package ptfence.fence;

import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.stream.Collectors;

/** Keeps every captured image, for tests and the bench. */
final class CollectingSink implements TextSink {
    final ConcurrentLinkedQueue<CapturedText> all = new ConcurrentLinkedQueue<>();

    @Override
    public void accept(CapturedText text) {
        all.add(text);
    }

    List<CapturedText> of(Hook hook, String nameSuffixPrefix) {
        return all.stream().filter(t -> t.hook() == hook && t.name().contains("_" + nameSuffixPrefix))
                .collect(Collectors.toList());
    }
}
