package ptfence.calls;

import java.io.IOException;

/** One view of the merged flow's branches and stacks: it hears every stack change and then every item. */
public interface CallView extends CallStacks.Listener {
    /** {@code item} of thread {@code t}, after the stacks took it in. */
    void item(ThreadStack t, FlowItem item) throws IOException;

    /** Whether the items' branches must carry perf's IPC counts ({@link FlowItem.Branch#stateCycles}). */
    default boolean countsIpc() {
        return false;
    }

    /** The flow ended (the stacks have been ended too). */
    void end() throws IOException;
}
